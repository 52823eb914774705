"""A replay's graphs cover the whole recording: the figures of the screens asked for (Trends'
and the one graphed), made from the recording's readings on a thread of their own.

The replay shown plays at its own pace and feeds the figure history as the live view does;
this scan reads the same recording from start to end at a step of its own (every TREND_PACE
seconds, coarser for a long recording: at most MAX_STEPS steps), with screens of its own on a
replay engine of its own, so nothing the UI shows is touched until the controller takes the
finished history (``take()``, on the UI thread) and puts its figures in place of those made
so far.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable, Dict, Iterable, List, Optional, Sequence

from proxytop.metrics.history import FigureHistory
from proxytop.recordings.replay import RecordingIndex, ReplayEngine
from proxytop.screens.base import DataView, Screen
from proxytop.screens.figures import keep_rows, newest_reading
from proxytop.screens.trends import TREND_PACE, keep_trend_values

log = logging.getLogger(__name__)

MAX_STEPS = 2000  # a week's recording is scanned every 5 minutes, an hour's every 10 s


def scan_steps(start: float, end: float, step: float = TREND_PACE, most: int = MAX_STEPS) -> List[float]:
    """The times the scan reads the recording at: every ``step`` seconds, or coarser so that
    there are at most ``most`` of them, the end included.

    >>> scan_steps(0, 20), len(scan_steps(0, 3600 * 24 * 7)), scan_steps(0, 3)
    ([0.0, 10.0, 20.0], 2001, [0.0, 3.0])
    """
    span = max(0.0, end - start)
    step = max(step, span / most) if span else step
    times = [start + i * step for i in range(int(span // step) + 1)]
    if times[-1] < end:
        times.append(float(end))
    return times


def scan(index: RecordingIndex, make_screens: Callable[[ReplayEngine], Sequence[Screen]],
         keys: Iterable[str], config=None) -> FigureHistory:
    """The figures of the screens named by ``keys`` ("trends": every screen Trends' figures
    come from, and those figures) over the whole recording."""
    engine = ReplayEngine(index, clock=lambda: 0.0)  # a clock that never moves: it stays where it is sought
    engine.pause()
    screens = {s.key: s for s in make_screens(engine)}
    figures = FigureHistory()
    view = DataView(engine, config, figures=figures)
    wanted = set(keys)
    trends = screens.get("trends")
    inputs = trends.inputs() if trends is not None and "trends" in wanted else []
    graphed = [screens[k] for k in wanted if k in screens and k != "trends" and screens[k].built]
    graphed += [screens[k] for k, _names in inputs if k in screens and screens[k] not in graphed]
    made: Dict[str, tuple] = {}  # per group of trends: the readings last kept
    for at in scan_steps(index.start, index.end):
        engine.seek(at)
        for screen in graphed:
            newest = newest_reading(engine.latest, screen.active_collectors())
            if newest is not None:
                rows = screen.arrange(screen.rows(view), screen.initial_state())
                keep_rows(figures, screen, rows, newest.wall_time, view)
        if inputs:
            for key, at in trends.new_inputs(engine.latest, made):
                keep_trend_values(figures, {key: trends.rows_of(key, view)}, at)
    return figures


class RecordingScanner:
    """Scans on a thread of their own, one at a time; ``take()`` hands over a finished one."""

    def __init__(self, index: RecordingIndex, make_screens: Callable[[ReplayEngine], Sequence[Screen]], config=None):
        self.index, self.make_screens, self.config = index, make_screens, config
        self._lock = threading.Lock()
        self._done: Optional[FigureHistory] = None
        self._asked: set = set()
        self._thread: Optional[threading.Thread] = None

    def request(self, keys: Iterable[str]) -> bool:
        """Scan for these screens too (False: already asked). Never waits: a scan under way
        makes another, of everything asked, when it ends."""
        with self._lock:
            new = set(keys) - self._asked
            if not new:
                return False
            self._asked |= new
            if self._thread is not None:  # a scan under way: it sees the new keys when it ends
                return True
            self._thread = threading.Thread(target=self._run, name="replay-figures", daemon=True)
        self._thread.start()
        return True

    def _run(self) -> None:
        scanned: set = set()
        while True:
            with self._lock:
                keys = set(self._asked)
                if keys == scanned:
                    self._thread = None  # (under the lock: a request from now on starts another)
                    return
            try:
                figures = scan(self.index, self.make_screens, sorted(keys), self.config)
            except Exception:  # a scan that fails leaves the graphs as the replay fills them
                log.exception("the replay's scan of the recording for graphs failed")
                with self._lock:
                    self._thread = None
                return
            scanned = keys
            with self._lock:
                self._done = figures

    def take(self) -> Optional[FigureHistory]:
        """The finished scan, once (None while none is ready)."""
        with self._lock:
            done, self._done = self._done, None
        return done
