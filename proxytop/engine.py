"""The polling engine: collectors run here, off the UI thread.

One worker thread per source (the ProxySQL admin connection, each MySQL server, the host), so
a slow or dead server only ever delays its own collectors. Only *active* collectors poll — the
visible screen's and the header's — so hidden screens put no load on ProxySQL. The UI reads
the latest snapshots and the sources' states and never waits on I/O.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Deque, Dict, Iterable, List, Optional, Tuple

from proxytop.collectors.base import Collector, Snapshot, Source

log = logging.getLogger(__name__)

BACKOFF_STEPS = (1.0, 2.0, 4.0, 8.0, 10.0)
RETRY_INTERVALS = 1.5  # a lost server is tried again after at most this many intervals
ACTIVATION_DELAY = 0.1  # seconds between a screen's activation and its first readings
STAGGER_PER_SOURCE = 0.005  # seconds between the first readings of sources activated together
WAKE_AT_ONCE = 8  # more sources than this activated together are woken in turn, not at once
DUE_SLACK = 0.05  # a reading due this soon is taken with the batch being read (one wake-up, one redraw)
IDLE_WAIT = 60.0  # seconds a worker sleeps at most without being woken (a safety net, not a poll)


def backoff_delay(failures: int) -> float:
    """Seconds to wait after the n-th consecutive failure (1, 2, 4, 8, then 10 s at most).

    >>> [backoff_delay(n) for n in (1, 2, 3, 4, 5, 9)]
    [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    """
    index = min(max(failures, 1), len(BACKOFF_STEPS)) - 1
    return BACKOFF_STEPS[index]


@dataclass(frozen=True)
class SourceState:
    """What the UI says about a source: connected, or why not and when it retries."""

    name: str
    connected: bool = False
    connecting: bool = True
    error: Optional[str] = None
    retry_at: Optional[float] = None  # monotonic time of the next attempt
    failures: int = 0
    since: float = 0.0

    def retry_in(self, now: float) -> Optional[float]:
        if self.retry_at is None:
            return None
        return max(0.0, self.retry_at - now)


class Engine:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._sources: Dict[str, Source] = {}
        self._collectors: Dict[str, Collector] = {}
        self._by_source: Dict[str, List[Collector]] = {}  # each source's collectors
        self._history: Dict[str, Deque[Snapshot]] = {}
        self._errors: Dict[str, Tuple[str, float]] = {}
        self._intervals: Dict[str, float] = {}
        self._next_due: Dict[str, float] = {}
        self._states: Dict[str, SourceState] = {}
        self._wake: Dict[str, threading.Event] = {}
        self._threads: Dict[str, threading.Thread] = {}
        self._active: frozenset = frozenset()
        self._paused = False
        self._stopping = False
        self._started = False
        self._tasks: Dict[str, Deque[Tuple[Callable, Callable]]] = {}
        self._observers: List[Callable[[str, object], None]] = []
        self._listeners: List[Callable[[], None]] = []  # told when there is something new to show

    # ----- set-up ---------------------------------------------------------------------------
    def add_source(self, source: Source) -> None:
        with self._lock:
            if source.name in self._sources:
                return
            self._sources[source.name] = source
            self._states[source.name] = SourceState(source.name, since=self._clock())
            self._wake[source.name] = threading.Event()
            self._tasks[source.name] = deque()
        if self._started:
            self._start_worker(source.name)

    def add_collector(self, collector: Collector) -> None:
        with self._lock:
            if collector.name in self._collectors:
                return
            self._collectors[collector.name] = collector
            self._by_source.setdefault(collector.source, []).append(collector)
            self._history[collector.name] = deque(maxlen=max(1, collector.history))
            self._intervals[collector.name] = max(collector.default_interval, collector.min_interval)
            self._next_due[collector.name] = 0.0

    def collector(self, name: str) -> Optional[Collector]:
        return self._collectors.get(name)

    def collector_names(self, prefix: str = "") -> List[str]:
        """Names of the registered collectors (those starting with ``prefix``)."""
        with self._lock:
            return [name for name in self._collectors if name.startswith(prefix)]

    def source(self, name: str) -> Optional[Source]:
        return self._sources.get(name)

    def collector_names_of(self, source_name: str) -> List[str]:
        """Names of the collectors that read from one source."""
        with self._lock:
            return [c.name for c in self._by_source.get(source_name, ())]

    def forget(self, names: Iterable[str]) -> None:
        """Drop these collectors' readings and errors, and read them again at once: the
        source now reads another server (the watched ProxySQL node changed), and a rate
        across two servers would be meaningless. Each history is replaced, not cleared, so
        that a reader holding the old one never sees it change."""
        with self._lock:
            for name in names:
                if name in self._history:
                    self._history[name] = deque(maxlen=self._history[name].maxlen)
                    self._errors.pop(name, None)
                    self._next_due[name] = 0.0

    def add_observer(self, observer: Callable[[str, object], None]) -> None:
        """``observer(kind, value)`` is called on the worker threads with every new
        ("snapshot", Snapshot), ("state", SourceState) and ("error", (collector, message, time))
        — what a recording needs. It must be quick and never raise."""
        self._observers.append(observer)

    def remove_observer(self, observer: Callable[[str, object], None]) -> None:
        if observer in self._observers:
            self._observers.remove(observer)

    # A live engine tells its listeners when something new can be shown (the UI then sleeps
    # until told, instead of looking for new data several times a second).
    notifies_changes = True

    def add_listener(self, listener: Callable[[], None]) -> None:
        """``listener()`` is called on a worker thread once after each batch of new snapshots
        of a source, and after a source's state, a collector's error or a task's result
        changed. It must be quick and never raise (the UI's wake-up pipe)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _tell_listeners(self) -> None:
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                log.exception("listener failed")

    def _notify(self, kind: str, value: object) -> None:
        for observer in list(self._observers):
            try:
                observer(kind, value)
            except Exception:
                log.exception("observer failed on %s", kind)

    def start(self) -> None:
        self._started = True
        for name in list(self._sources):
            self._start_worker(name)

    def stop(self, timeout: float = 0.5) -> None:
        """Ask every worker to stop. Workers are daemons: a hung server can't delay exit."""
        self._stopping = True
        for event in self._wake.values():
            event.set()
        deadline = self._clock() + timeout
        for thread in list(self._threads.values()):
            thread.join(max(0.0, deadline - self._clock()))

    # ----- what the UI changes --------------------------------------------------------------
    def set_active(self, names: Iterable[str]) -> None:
        """Only these collectors poll from now on; newly active ones poll at once."""
        names = frozenset(n for n in names if n in self._collectors)
        with self._lock:
            newly = names - self._active
            self._active = names
            plan = self._stagger(newly)
        if len(plan) <= WAKE_AT_ONCE:
            self._wake_sources_of(newly)
        else:  # hundreds of workers woken at once would hold up the UI's first frame
            threading.Thread(target=self._wake_in_turn, args=(plan,), name="wake-sources", daemon=True).start()

    def _stagger(self, newly: frozenset) -> List[Tuple[float, str]]:
        """When newly shown collectors read first (the lock is held): a moment after the UI's
        first frame of the new screen, and with many sources starting at once, spread over up
        to STAGGER_PER_SOURCE each (one interval at most), so hundreds of servers don't all
        compete with the UI for the interpreter at the same instant. Returns (first reading
        time, source) for each source concerned."""
        if not newly:
            return []
        start = self._clock() + ACTIVATION_DELAY
        sources = sorted({self._collectors[name].source for name in newly})
        spread = 0.0
        if len(sources) > 1:
            spread = min(min(self._intervals[name] for name in newly), STAGGER_PER_SOURCE * len(sources))
        offsets = {source: spread * i / len(sources) for i, source in enumerate(sources)}
        for name in newly:
            self._next_due[name] = start + offsets[self._collectors[name].source]
        return [(start + offsets[source], source) for source in sources]

    def _wake_in_turn(self, plan: List[Tuple[float, str]]) -> None:
        """Wake each source's worker when its first reading is due, one after the other."""
        for due, source in plan:
            delay = due - self._clock()
            if delay > 0:
                time.sleep(delay)
            if self._stopping:
                return
            event = self._wake.get(source)
            if event is not None:
                event.set()

    @property
    def active(self) -> frozenset:
        return self._active

    def set_interval(self, name: str, seconds: float) -> float:
        """Set a collector's interval, clamped to its minimum; returns the interval in effect."""
        collector = self._collectors[name]
        effective = max(float(seconds), collector.min_interval)
        with self._lock:
            old = self._intervals[name]
            if effective == old:
                return effective  # nothing to re-plan (a fleet of 500 servers sets 1,500 at once)
            self._intervals[name] = effective
            # Re-plan from the last reading so a shorter interval takes effect right away.
            last = self._history[name][-1].taken_at if self._history[name] else 0.0
            self._next_due[name] = min(self._next_due[name], last + effective)
        if effective < old:
            self._wake_sources_of([name])
        return effective

    def interval(self, name: str) -> float:
        return self._intervals[name]

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        for event in self._wake.values():
            event.set()

    @property
    def paused(self) -> bool:
        return self._paused

    def submit(self, source_name: str, task: Callable, done: Callable[[Optional[str]], None]) -> None:
        """Run ``task(handle)`` on the source's worker (the UI thread never does I/O);
        ``done(error_line_or_None)`` is called there afterwards."""
        with self._lock:
            self._tasks[source_name].append((task, done))
        self._wake[source_name].set()

    # ----- what the UI reads ----------------------------------------------------------------
    def latest(self, name: str) -> Optional[Snapshot]:
        history = self._history.get(name)
        return history[-1] if history else None

    def history(self, name: str) -> Tuple[Snapshot, ...]:
        with self._lock:
            return tuple(self._history.get(name, ()))

    def last_two(self, name: str) -> Tuple[Optional[Snapshot], Optional[Snapshot]]:
        """(previous, current): what rates are computed from."""
        with self._lock:
            history = self._history.get(name)
            if not history:
                return None, None
            if len(history) == 1:
                return None, history[-1]
            return history[-2], history[-1]

    def error(self, name: str) -> Optional[str]:
        entry = self._errors.get(name)
        return entry[0] if entry else None

    def state(self, source_name: str) -> Optional[SourceState]:
        return self._states.get(source_name)

    def states(self) -> List[SourceState]:
        return list(self._states.values())

    def now(self) -> float:
        return self._clock()

    def poll_now(self, handles: Dict[str, object]) -> Dict[str, Optional[str]]:
        """Run the due active collectors of each source in ``handles`` ({source name: the
        handle its ``connect()`` returned}) on the calling thread, exactly as a worker does,
        for tools that step the engine themselves (benchmarks) without starting its threads.
        Returns {source name: the error line of a lost connection, or None}."""
        return {name: self._poll_due(self._sources[name], handle, self._active_of(name))
                for name, handle in handles.items()}

    # ----- the workers ----------------------------------------------------------------------
    def _wake_sources_of(self, names: Iterable[str]) -> None:
        for name in names:
            collector = self._collectors.get(name)
            if collector is not None and collector.source in self._wake:
                self._wake[collector.source].set()

    def _start_worker(self, name: str) -> None:
        if name in self._threads:
            return
        thread = threading.Thread(target=self._run, args=(name,), name=f"poll-{name}", daemon=True)
        self._threads[name] = thread
        thread.start()

    def _set_state(self, name: str, **changes) -> None:
        with self._lock:
            old = self._states[name]
            values = {**old.__dict__, **changes}
            state = self._states[name] = SourceState(**values)
        if self._observers:
            self._notify("state", state)
        self._tell_listeners()

    def _active_of(self, source_name: str) -> List[Collector]:
        active = self._active
        return [c for c in self._by_source.get(source_name, ()) if c.name in active]

    def _run(self, source_name: str) -> None:
        source = self._sources[source_name]
        wake = self._wake[source_name]
        handle = None
        connected = False
        failures = 0
        while not self._stopping:
            collectors = self._active_of(source_name)
            if self._paused or not collectors:
                # Idle until woken (activation, resume, a task, stop): hundreds of servers'
                # threads may be waiting here while their screen is hidden.
                wake.wait(IDLE_WAIT)
                wake.clear()
                continue
            if not connected:
                due = min(self._next_due[c.name] for c in collectors) - self._clock()
                if due > 0.005 and not self._tasks[source_name]:
                    # A staggered start: connect when the first reading is due.
                    wake.wait(min(0.5, due))
                    wake.clear()
                    continue
                self._set_state(source_name, connecting=True)
                try:
                    handle = source.connect()
                except Exception as exc:  # any failure is reported in one line and retried
                    failures += 1
                    delay = self._retry_delay(source_name, failures)
                    message = source.describe_error(exc)
                    log.info("%s: %s (retry in %.0fs)", source_name, message, delay)
                    self._set_state(source_name, connected=False, connecting=False, error=message,
                                    failures=failures, retry_at=self._clock() + delay)
                    self._sleep_until(wake, self._clock() + delay)
                    continue
                connected = True
                failures = 0
                self._set_state(source_name, connected=True, connecting=False, error=None,
                                failures=0, retry_at=None, since=self._clock())
            lost = self._run_tasks(source, handle) or self._poll_due(source, handle, collectors)
            if lost is not None:
                source.close(handle)
                handle, connected = None, False
                failures += 1
                delay = self._retry_delay(source_name, failures)
                self._set_state(source_name, connected=False, connecting=False, error=lost,
                                failures=failures, retry_at=self._clock() + delay)
                self._sleep_until(wake, self._clock() + delay)
                continue
            next_due = min((self._next_due[c.name] for c in self._active_of(source_name)), default=None)
            # Sleep until the next reading is due: whatever changes the plan sooner (a shorter
            # interval, a screen shown, a task, resume, stop) sets ``wake``.
            timeout = IDLE_WAIT if next_due is None else max(0.005, min(IDLE_WAIT, next_due - self._clock()))
            wake.wait(timeout)
            wake.clear()
        if handle is not None:
            source.close(handle)

    def _retry_delay(self, source_name: str, failures: int) -> float:
        """The backoff, but never longer than one and a half of the shortest interval the
        source is polled at (own-pace collectors aside): a server that comes back is seen
        again within two intervals, and a dead one is tried less often than it was polled."""
        delay = backoff_delay(failures)
        intervals = [self._intervals[c.name] for c in self._active_of(source_name) if not c.own_pace]
        return min([delay] + [RETRY_INTERVALS * interval for interval in intervals])

    def _sleep_until(self, wake: threading.Event, deadline: float) -> None:
        """Wait for a retry deadline; a wake-up (e.g. on quit) only ends it early when stopping."""
        while not self._stopping:
            remaining = deadline - self._clock()
            if remaining <= 0:
                return
            wake.wait(remaining)
            wake.clear()

    def _run_tasks(self, source: Source, handle) -> Optional[str]:
        tasks = self._tasks[source.name]
        while tasks:
            with self._lock:
                task, done = tasks.popleft()
            try:
                task(handle)
            except Exception as exc:
                message = source.describe_error(exc)
                done(message)
                self._tell_listeners()
                if source.is_connection_error(exc):
                    return message
                continue
            done(None)
            self._tell_listeners()
        return None

    def _poll_due(self, source: Source, handle, collectors: List[Collector]) -> Optional[str]:
        """Run the due collectors; returns an error line if the connection was lost."""
        news = 0
        try:
            for collector in collectors:
                if self._stopping or self._paused:
                    return None
                news += self._poll_one(source, handle, collector)
        except _ConnectionLost as lost:
            return lost.message
        finally:
            if news:
                self._tell_listeners()  # once per batch: the header's and the screen's readings
        return None

    def _poll_one(self, source: Source, handle, collector: Collector) -> int:
        """Run one collector if it is due: 1 when it brought news (a snapshot or an error).
        Raises _ConnectionLost when the connection broke."""
        name = collector.name
        # The header's reading and the screen's drift a few milliseconds apart: read both in one
        # batch rather than waking (the worker and the UI) twice per interval.
        if self._next_due[name] > self._clock() + DUE_SLACK:
            return 0
        started = self._clock()
        started_wall = time.time()
        try:
            data = collector.collect(handle)
        except Exception as exc:
            message = source.describe_error(exc)
            if source.is_connection_error(exc):
                log.info("%s: connection lost in %s: %s", source.name, name, message)
                raise _ConnectionLost(message) from None
            log.info("%s: %s", name, message)
            with self._lock:
                self._errors[name] = (message, self._clock())
                self._next_due[name] = started + self._intervals[name]
            if self._observers:
                self._notify("error", (name, message, self._clock()))
            return 1
        finished = self._clock()
        # Stamped when the query started: ProxySQL takes its figures as it begins to answer,
        # and under load an answer took up to 150 ms (rates were off by up to 16%).
        snapshot = Snapshot(collector=name, data=data, taken_at=started, duration=finished - started,
                            wall_time=started_wall)
        with self._lock:
            history = self._history[name]
            history.append(snapshot)
            if len(history) > 2 and collector.history > 2:
                older = history[-3]
                kept = collector.shrink(older.data)
                if kept is not older.data:
                    history[-3] = dataclasses.replace(older, data=kept)
            self._errors.pop(name, None)
            # max(): a collector's minimum may grow with what it measures (the digest's read time)
            self._next_due[name] = started + max(self._intervals[name], collector.min_interval)
        if self._observers:
            self._notify("snapshot", snapshot)
        return 1


class _ConnectionLost(Exception):
    """A collector found the connection broken (its one-line description in ``message``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message
