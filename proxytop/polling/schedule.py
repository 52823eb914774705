"""When each collector reads next: its interval, whether its screen shows it, and when its
next reading is due.

The engine's workers ask the schedule what is due and tell it when a reading was taken or
failed; the UI changes intervals and the active set. Newly shown collectors read a moment
after the screen's first frame (see :meth:`Schedule.activate`).
"""
from __future__ import annotations

import threading
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from proxytop.core import Collector

RETRY_INTERVALS = 1.5  # a lost server is tried again after at most this many intervals
ACTIVATION_DELAY = 0.1  # seconds between a screen's activation and its first readings
STAGGER_PER_SOURCE = 0.005  # seconds between the first readings of sources activated together
DUE_SLACK = 0.05  # a reading due this soon is taken with the batch being read (one wake-up, one redraw)


class Schedule:
    """Intervals, the active collectors and their due times (monotonic, from ``clock``)."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._lock = threading.Lock()
        self._source_of: Dict[str, str] = {}
        self._intervals: Dict[str, float] = {}
        self._next_due: Dict[str, float] = {}
        self._active: frozenset = frozenset()

    def add(self, collector: Collector) -> None:
        with self._lock:
            self._source_of[collector.name] = collector.source
            self._intervals[collector.name] = max(collector.default_interval, collector.min_interval)
            self._next_due[collector.name] = 0.0

    @property
    def active(self) -> frozenset:
        return self._active

    def activate(self, names: frozenset, delay: float = ACTIVATION_DELAY) -> Tuple[frozenset, List[Tuple[float, str]]]:
        """Only ``names`` poll from now on. Returns the newly active ones and, for each source
        concerned, when its first reading is due: (time, source).

        They read ``delay`` seconds after the activation (a moment after the UI's first frame
        of the new screen; at launch at once, see Engine.set_active) and, with many sources
        starting at once, spread over up to STAGGER_PER_SOURCE each (one interval at most), so
        hundreds of servers don't all compete with the UI for the interpreter at once."""
        with self._lock:
            newly = names - self._active
            self._active = names
            if not newly:
                return newly, []
            start = self._clock() + delay
            sources = sorted({self._source_of[name] for name in newly})
            spread = 0.0
            if len(sources) > 1:
                spread = min(min(self._intervals[name] for name in newly), STAGGER_PER_SOURCE * len(sources))
            first = {source: start + spread * i / len(sources) for i, source in enumerate(sources)}
            for name in newly:
                self._next_due[name] = first[self._source_of[name]]
            return newly, [(first[source], source) for source in sources]

    def set_interval(self, collector: Collector, seconds: float, last_reading: float) -> Tuple[float, float]:
        """Set a collector's interval, clamped to its minimum: (the interval in effect, the one
        before). ``last_reading`` is when its last reading was taken (0 when none)."""
        name = collector.name
        effective = max(float(seconds), collector.min_interval)
        with self._lock:
            old = self._intervals[name]
            if effective == old:
                return effective, old  # nothing to re-plan (a fleet of 500 servers sets 1,500 at once)
            self._intervals[name] = effective
            # Re-plan from the last reading so a shorter interval takes effect right away.
            self._next_due[name] = min(self._next_due[name], last_reading + effective)
        return effective, old

    def interval(self, name: str) -> float:
        return self._intervals[name]

    def read_now(self, name: str) -> None:
        with self._lock:
            self._next_due[name] = 0.0

    def align(self, names: Iterable[str]) -> None:
        """Plan the next reading of each of ``names`` at the soonest any of them is due."""
        with self._lock:
            names = [name for name in names if name in self._next_due]
            if names:
                first = min(self._next_due[name] for name in names)
                for name in names:
                    self._next_due[name] = first

    def first_due(self, collectors: Iterable[Collector]) -> Optional[float]:
        """When the first of these collectors is due (None for none)."""
        return min((self._next_due[c.name] for c in collectors), default=None)

    def is_due(self, name: str) -> bool:
        # The header's reading and the screen's drift a few milliseconds apart: read both in one
        # batch rather than waking (the worker and the UI) twice per interval.
        return self._next_due[name] <= self._clock() + DUE_SLACK

    def read(self, collector: Collector, started: float) -> None:
        """A reading started at ``started`` succeeded."""
        with self._lock:
            # max(): a collector's minimum may grow with what it measures (the digest's read time)
            self._next_due[collector.name] = started + max(self._intervals[collector.name], collector.min_interval)

    def failed(self, name: str, started: float) -> None:
        """A reading started at ``started`` failed (the connection is fine): try at the next interval."""
        with self._lock:
            self._next_due[name] = started + self._intervals[name]

    def retry_delay(self, backoff: float, collectors: Iterable[Collector]) -> float:
        """The backoff, but never longer than one and a half of the shortest interval the
        source is polled at (own-pace collectors aside): a server that comes back is seen
        again within two intervals, and a dead one is tried less often than it was polled."""
        intervals = [self._intervals[c.name] for c in collectors if not c.own_pace]
        return min([backoff] + [RETRY_INTERVALS * interval for interval in intervals])
