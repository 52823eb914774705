"""The polling engine: collectors run here, off the UI thread.

One worker thread per source (the ProxySQL admin connection, the host), so a slow or dead
server only ever delays its own collectors. The MySQL servers of a fleet (sources marked
``pooled``; there may be hundreds) share a bounded pool of threads instead
(:class:`_WorkerPool`): a source is served by one pool thread at a time, so a hung server
holds up one thread until its connection's timeout, and the others keep serving the rest.
Only *active* collectors poll — the visible screen's and the header's — so hidden screens put
no load on ProxySQL. The UI reads the latest snapshots and the sources' states and never waits
on I/O.
"""
from __future__ import annotations

import heapq
import logging
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable, Deque, Dict, Iterable, List, Optional, Sequence, Tuple

from proxytop.core import Collector, Snapshot, Source
from proxytop.polling.readings import Readings
from proxytop.polling.schedule import ACTIVATION_DELAY, Schedule

log = logging.getLogger(__name__)

BACKOFF_STEPS = (1.0, 2.0, 4.0, 8.0, 10.0)
WAKE_AT_ONCE = 8  # more sources than this activated together are woken in turn, not at once
IDLE_WAIT = 60.0  # seconds a worker sleeps at most without being woken (a safety net, not a poll)
POOL_THREADS = 8  # threads shared by the pooled sources (a fleet's MySQL servers)
POOL_GROWTH = 4  # with turns overdue, the pool grows to at most this many times POOL_THREADS
OVERDUE = 1.0  # seconds a turn may wait for a thread before the pool grows


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
    # when this state was set: the engine's clock (a replay's: its timeline) and the wall clock
    # (the Events tab's "unreachable" and "back after" are stamped with them)
    changed_at: float = 0.0
    wall_time: float = 0.0

    def retry_in(self, now: float) -> Optional[float]:
        if self.retry_at is None:
            return None
        return max(0.0, self.retry_at - now)

    def retry_seconds(self, now: float) -> Optional[int]:
        """The whole seconds a countdown shows until the next attempt (rounded up, as a
        timer counts: 1.2 s left shows 2, then 1 once a second has passed).

        >>> [SourceState("s", retry_at=10.0).retry_seconds(now) for now in (8.0, 8.8, 9.0, 9.7, 11.0)]
        [2, 2, 1, 1, 0]
        """
        left = self.retry_in(now)
        return None if left is None else math.ceil(left - 1e-9)

    def retry_text(self, now: float) -> str:
        """"retrying in 3s"; "retrying now" while the attempt is under way (it may take the
        whole connect timeout); "retrying" with no attempt planned."""
        shown = self.retry_seconds(now)
        return "retrying" if shown is None else "retrying now" if shown == 0 else f"retrying in {shown}s"

    def countdown_changes_in(self, now: float) -> Optional[float]:
        """Seconds until :meth:`retry_seconds` shows another number (None with no countdown),
        so a screen is redrawn as the countdown ticks, not up to a second late.

        >>> SourceState("s", retry_at=10.0).countdown_changes_in(8.75)  # shows 2 until 9.0
        0.25
        """
        shown = self.retry_seconds(now)
        if shown is None or self.connected:
            return None
        return max(0.0, self.retry_at - (shown - 1) - now) if shown > 0 else None


class Engine:
    """Sources, their collectors and the workers that read them; what the UI reads and
    changes. When each collector reads is the :class:`Schedule`'s business, what it read the
    :class:`Readings`', and connecting, polling and backing off each :class:`_Worker`'s."""

    replaying = False  # proxytop.engine_view.EngineView
    refuses_writes: Optional[str] = None

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self.lock = threading.Lock()  # guards what follows; the workers take it too
        self._sources: Dict[str, Source] = {}
        self._collectors: Dict[str, Collector] = {}
        self._by_source: Dict[str, List[Collector]] = {}  # each source's collectors
        self._active_by_source: Dict[str, Tuple[Collector, ...]] = {}  # each source's active ones (set_active)
        self._schedule = Schedule(clock)
        self._readings = Readings()
        self._states: Dict[str, SourceState] = {}
        self._workers: Dict[str, _Worker] = {}
        self._pool: Optional[_WorkerPool] = None  # made with the first pooled source
        self._paused = False
        self._stopping = False
        self._started = False
        self._observers: List[Callable[[str, object], None]] = []
        self._listeners: List[Callable[[], None]] = []  # told when there is something new to show

    # ----- set-up ---------------------------------------------------------------------------
    def add_source(self, source: Source) -> None:
        with self.lock:
            if source.name in self._sources:
                return
            self._sources[source.name] = source
            self._states[source.name] = SourceState(source.name, since=self._clock())
            if getattr(source, "pooled", False) and self._pool is None:
                self._pool = _WorkerPool(self, POOL_THREADS)
            pool = self._pool if getattr(source, "pooled", False) else None
            worker = self._workers[source.name] = _Worker(self, source, pool)
        if self._started:
            worker.start()

    def add_collector(self, collector: Collector) -> None:
        with self.lock:
            if collector.name in self._collectors:
                return
            self._collectors[collector.name] = collector
            self._by_source.setdefault(collector.source, []).append(collector)
            self._readings.add(collector)
            self._schedule.add(collector)

    def collector(self, name: str) -> Optional[Collector]:
        return self._collectors.get(name)

    def collector_names(self, prefix: str = "") -> List[str]:
        """Names of the registered collectors (those starting with ``prefix``)."""
        with self.lock:
            return [name for name in self._collectors if name.startswith(prefix)]

    def source(self, name: str) -> Optional[Source]:
        return self._sources.get(name)

    def collector_names_of(self, source_name: str) -> List[str]:
        """Names of the collectors that read from one source."""
        with self.lock:
            return [c.name for c in self._by_source.get(source_name, ())]

    def forget(self, names: Iterable[str]) -> None:
        """Drop these collectors' readings and errors, and read them again at once: the
        source now reads another server (the watched ProxySQL node changed), and a rate
        across two servers would be meaningless."""
        for name in names:
            if self._readings.forget(name):
                self._schedule.read_now(name)

    def add_observer(self, observer: Callable[[str, object], None]) -> None:
        """``observer(kind, value)`` is called on the worker threads with every new
        ("snapshot", Snapshot), ("state", SourceState) and ("error", (collector, message, time))
        — what a recording needs. It must be quick and never raise."""
        self._observers.append(observer)

    def remove_observer(self, observer: Callable[[str, object], None]) -> None:
        if observer in self._observers:
            self._observers.remove(observer)

    def follow(self, observer: Callable[[str, object], None], wanted: Callable[[str], bool]) -> None:
        """``observer("snapshot", snapshot)`` for every new reading of the collectors ``wanted``
        names, and ``observer("state", state)`` for every source state, on the worker threads
        as they happen (the same interface plays a recording's readings and states in a
        replay: proxytop.engine_view)."""
        def told(kind: str, value: object) -> None:
            if kind == "state" or (kind == "snapshot" and wanted(value.collector)):
                observer(kind, value)

        self.add_observer(told)

    def deliver(self) -> None:
        """Nothing to do: the workers tell the observers as they read (a replay's delivers the
        recorded readings up to its position here)."""

    def add_listener(self, listener: Callable[[], None]) -> None:
        """``listener()`` is called on a worker thread once after each batch of new snapshots
        of a source, and after a source's state, a collector's error or a task's result
        changed: the UI sleeps until told. It must be quick and never raise."""
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
            self._workers[name].start()

    def stop(self, timeout: float = 0.5) -> None:
        """Ask every worker to stop. Workers are daemons: a hung server can't delay exit."""
        self._stopping = True
        if self._pool is not None:
            self._pool.stop()  # first: the pooled sources' wake-ups below then plan nothing
        for worker in self._workers.values():
            worker.wake()
        deadline = self._clock() + timeout
        for worker in list(self._workers.values()):
            worker.join(max(0.0, deadline - self._clock()))
        if self._pool is not None:
            self._pool.join(max(0.0, deadline - self._clock()))

    # ----- what the UI changes --------------------------------------------------------------
    def set_active(self, names: Iterable[str], together: Iterable[str] = ()) -> None:
        """Only these collectors poll from now on; newly active ones poll at once. Those of
        ``together`` read in one batch, at the soonest any of them is due: readings at one
        interval that were planned apart (a screen shown while the pool kept its alarm's pace)
        then share their batches, and the UI one frame per interval.

        Before the engine starts (the screen shown at launch) the first readings are due at
        once: their connections take longer to open than the first frame takes to draw. Once
        it runs, a screen's readings come a moment after its first frame (Schedule.activate):
        over connections already open, they would hold that frame up."""
        delay = ACTIVATION_DELAY if self._started else 0.0
        newly, plan = self._schedule.activate(frozenset(n for n in names if n in self._collectors), delay)
        active = self._schedule.active
        with self.lock:  # what each worker's step reads, made once here rather than at every step
            self._active_by_source = {source: tuple(c for c in collectors if c.name in active)
                                      for source, collectors in self._by_source.items()}
        together = [name for name in together if name in self._collectors]
        self._schedule.align(together)
        self._wake_sources_of(together)
        if len(plan) <= WAKE_AT_ONCE:
            self._wake_sources_of(newly)
        else:  # hundreds of workers woken at once would hold up the UI's first frame
            threading.Thread(target=self._wake_in_turn, args=(plan,), name="wake-sources", daemon=True).start()

    def _wake_in_turn(self, plan: List[Tuple[float, str]]) -> None:
        """Wake each source's worker when its first reading is due, one after the other."""
        for due, source in plan:
            delay = due - self._clock()
            if delay > 0:
                time.sleep(delay)
            if self._stopping:
                return
            if source in self._workers:
                self._workers[source].wake()

    def _wake_sources_of(self, names: Iterable[str]) -> None:
        for name in names:
            collector = self._collectors.get(name)
            if collector is not None and collector.source in self._workers:
                self._workers[collector.source].wake()

    @property
    def active(self) -> frozenset:
        return self._schedule.active

    def set_interval(self, name: str, seconds: float) -> float:
        """Set a collector's interval, clamped to its minimum; returns the interval in effect."""
        latest = self._readings.latest(name)
        effective, old = self._schedule.set_interval(self._collectors[name], seconds, latest.taken_at if latest else 0.0)
        if effective < old:
            self._wake_sources_of([name])
        return effective

    def interval(self, name: str) -> float:
        return self._schedule.interval(name)

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        for worker in self._workers.values():
            worker.wake()

    @property
    def paused(self) -> bool:
        return self._paused

    def submit(self, source_name: str, task: Callable, done: Callable[[Optional[str]], None]) -> None:
        """Run ``task(handle)`` on the source's worker (the UI thread never does I/O);
        ``done(error_line_or_None)`` is called there afterwards."""
        self._workers[source_name].submit(task, done)

    # ----- what the UI reads ----------------------------------------------------------------
    def latest(self, name: str) -> Optional[Snapshot]:
        return self._readings.latest(name)

    def history(self, name: str) -> Tuple[Snapshot, ...]:
        return self._readings.history(name)

    def last_two(self, name: str) -> Tuple[Optional[Snapshot], Optional[Snapshot]]:
        """(previous, current): what rates are computed from."""
        return self._readings.last_two(name)

    def error(self, name: str) -> Optional[str]:
        return self._readings.error(name)

    @property
    def generation(self) -> int:
        """The number of the last change of any reading, error or source state."""
        return self._readings.generation

    def last_changed(self, keys: Iterable[object]) -> int:
        """The generation of the last change of any of these collectors (or states)."""
        return self._readings.last_changed(keys)

    def state(self, source_name: str) -> Optional[SourceState]:
        return self._states.get(source_name)

    def states(self) -> List[SourceState]:
        return list(self._states.values())

    def counting_down(self) -> List[SourceState]:
        """The states of the sources that are down with a retry planned (their countdown
        ticks on screen)."""
        return [s for s in self.states() if not s.connected and s.retry_at is not None]

    def now(self) -> float:
        return self._clock()

    def wall_now(self) -> float:
        return time.time()

    def wall_span(self) -> Optional[Tuple[float, float]]:
        """A replay's first and last times; live, there is none."""
        return None

    def poll_now(self, handles: Dict[str, object]) -> Dict[str, Optional[str]]:
        """Run the due active collectors of each source in ``handles`` ({source name: the
        handle its ``connect()`` returned}) on the calling thread, exactly as a worker does,
        for tools that step the engine themselves (benchmarks) without starting its threads.
        Returns {source name: the error line of a lost connection, or None}."""
        return {name: self._workers[name].poll_due(handle, self._active_of(name))
                for name, handle in handles.items()}

    # ----- what the workers share ---------------------------------------------------------------
    def _set_state(self, name: str, **changes) -> None:
        with self.lock:
            state = self._states[name] = replace(self._states[name], changed_at=self._clock(),
                                                 wall_time=time.time(), **changes)
        self._readings.touch(("state", name))
        if self._observers:
            self._notify("state", state)
        self._tell_listeners()

    def _active_of(self, source_name: str) -> Sequence[Collector]:
        """The source's collectors that poll now (only collectors registered when set_active
        was called can be active: it leaves out the names it doesn't know)."""
        return self._active_by_source.get(source_name, ())


class _ConnectionLost(Exception):
    """A collector found the connection broken (its one-line description is ``args[0]``)."""


class _Worker:
    """One source's reader: connects when a reading is due, runs the UI's tasks and the due
    collectors on that connection, and after a failure says why and retries with backoff.

    Each :meth:`step` does what is due and says when the next is. A source of its own has a
    thread that sleeps between steps; a pooled source (``pool``) holds no thread between steps:
    whichever of the pool's threads is free takes its next one."""

    def __init__(self, engine: Engine, source: Source, pool: Optional["_WorkerPool"] = None):
        self.engine = engine
        self.source = source
        self.pool = pool
        self._tasks: Deque[Tuple[Callable, Callable]] = deque()
        self._thread: Optional[threading.Thread] = None
        self._woken = threading.Event()
        self.handle = None
        self.connected = False
        self.failures = 0
        self.retry_at: Optional[float] = None  # no connection attempt before this (backoff)
        # The pool's bookkeeping (under its lock): when this source is next looked at, whether
        # a thread is on it now, and whether it was woken meanwhile.
        self.planned: Optional[float] = None
        self.running = False
        self.woken = False

    def start(self) -> None:
        if self.pool is not None:
            self.pool.wake(self)
        elif self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"poll-{self.source.name}", daemon=True)
            self._thread.start()

    def wake(self) -> None:
        """Look at the source again now (activation, resume, a task, stop), from any thread."""
        if self.pool is not None:
            self.pool.wake(self)
        else:
            self._woken.set()

    def join(self, timeout: float) -> None:
        if self._thread is not None:  # the pool's threads are joined by the engine
            self._thread.join(timeout)

    def submit(self, task: Callable, done: Callable[[Optional[str]], None]) -> None:
        with self.engine.lock:
            self._tasks.append((task, done))
        self.wake()

    def _run(self) -> None:
        engine = self.engine
        while not engine._stopping:
            at = self.step()
            # whatever changes the plan sooner (a shorter interval, a screen shown, a task,
            # resume, stop) wakes the thread
            self._woken.wait(IDLE_WAIT if at is None else max(0.005, min(IDLE_WAIT, at - engine._clock())))
            self._woken.clear()
        self._close()

    def step(self) -> Optional[float]:
        """Connect when a reading is due, run the tasks and the due collectors. Returns when
        the source wants its next step (monotonic), or None to wait until woken."""
        engine = self.engine
        if engine._stopping:
            self._close()
            return None
        collectors = engine._active_of(self.source.name)
        if (engine._paused or not collectors) and not self._tasks:
            return None  # idle until woken: a hidden screen's servers hold nothing
        now = engine._clock()
        if not self.connected:
            if self.retry_at is not None and now < self.retry_at:
                return self.retry_at  # backing off after a failure
            due = engine._schedule.first_due(collectors) if collectors else now
            if due is not None and due - now > 0.005 and not self._tasks:
                return due  # connect when the first reading is due (a staggered start)
            if not self._connect():
                return self.retry_at
        lost = self._run_tasks() or self.poll_due(self.handle, collectors)
        if lost is not None:
            self._close()
            self._back_off(lost)
            return self.retry_at
        return engine._schedule.first_due(collectors)

    def _connect(self) -> bool:
        engine, name = self.engine, self.source.name
        engine._set_state(name, connecting=True)
        try:
            self.handle = self.source.connect()
        except Exception as exc:  # any failure is reported in one line and retried
            self._back_off(self.source.describe_error(exc))
            return False
        self.connected, self.failures, self.retry_at = True, 0, None
        engine._set_state(name, connected=True, connecting=False, error=None,
                          failures=0, retry_at=None, since=engine._clock())
        return True

    def _back_off(self, message: str) -> None:
        """Say why the source is unreachable and when it is tried again."""
        engine = self.engine
        self.failures += 1
        delay = engine._schedule.retry_delay(backoff_delay(self.failures), engine._active_of(self.source.name))
        self.retry_at = engine._clock() + delay
        log.info("%s: %s (retry in %.0fs)", self.source.name, message, delay)
        engine._set_state(self.source.name, connected=False, connecting=False, error=message,
                          failures=self.failures, retry_at=self.retry_at)

    def _close(self) -> None:
        if self.connected:
            try:
                self.source.close(self.handle)
            except Exception:
                log.exception("%s: close failed", self.source.name)
        self.handle, self.connected = None, False

    def _run_tasks(self) -> Optional[str]:
        """Run the UI's tasks; returns an error line if the connection was lost."""
        engine, source = self.engine, self.source
        while self._tasks:
            with engine.lock:
                task, done = self._tasks.popleft()
            try:
                task(self.handle)
            except Exception as exc:
                message = source.describe_error(exc)
                done(message)
                engine._tell_listeners()
                if source.is_connection_error(exc):
                    return message
                continue
            done(None)
            engine._tell_listeners()
        return None

    def poll_due(self, handle, collectors: Sequence[Collector]) -> Optional[str]:
        """Run the due collectors; returns an error line if the connection was lost."""
        engine = self.engine
        news = 0
        # Every reading of the batch is planned from the batch's start, not its own: a slower
        # collector (every 2 s) then stays in step with the 1 s ones instead of drifting by the
        # batch's length into a wake-up (and a redraw) of its own.
        batch_started = engine._clock()
        plan = getattr(handle, "plan_batch", None)
        if plan is not None:  # one query may serve two readings due together (collectors.folded)
            plan([c.name for c in collectors if engine._schedule.is_due(c.name)], engine._clock)
        try:
            for collector in collectors:
                if engine._stopping or engine._paused:
                    return None
                news += self._poll_one(handle, collector, batch_started)
        except _ConnectionLost as lost:
            return lost.args[0]
        finally:
            if news:
                engine._tell_listeners()  # once per batch: the header's and the screen's readings
        return None


    def _poll_one(self, handle, collector: Collector, batch_started: float) -> int:
        """Run one collector if it is due: 1 when it brought news (a snapshot or an error).
        Raises _ConnectionLost when the connection broke."""
        engine, source, name = self.engine, self.source, collector.name
        if not engine._schedule.is_due(name):
            return 0
        started = engine._clock()
        started_wall = time.time()
        try:
            data = collector.collect(handle)
        except Exception as exc:
            message = source.describe_error(exc)
            if source.is_connection_error(exc):
                log.info("%s: connection lost in %s: %s", source.name, name, message)
                raise _ConnectionLost(message) from None
            log.info("%s: %s", name, message)
            engine._readings.record_error(name, message, engine._clock())
            engine._schedule.failed(name, batch_started)
            if engine._observers:
                engine._notify("error", (name, message, engine._clock()))
            return 1
        finished = engine._clock()
        served = collector.__dict__.pop("served_at", None)
        if served is not None:  # read by the query another collector of the batch sent: stamped with it
            started, started_wall = served
        # Stamped when the query started: ProxySQL takes its figures as it begins to answer,
        # and under load an answer took up to 150 ms (rates were off by up to 16%).
        snapshot = Snapshot(collector=name, data=data, taken_at=started, duration=finished - started,
                            wall_time=started_wall)
        engine._readings.record(collector, snapshot)
        engine._schedule.read(collector, batch_started)
        if engine._observers:
            engine._notify("snapshot", snapshot)
        return 1



class _WorkerPool:
    """A few threads serving many pooled sources in the order their turns come due (a heap of
    (time, source)). Each thread takes the next due turn and runs it with plain blocking
    queries; a source is only ever on one thread, and a hung server's turn holds that thread
    until its connection's timeout while the others take the next turns. When every thread is
    busy and turns are overdue by more than OVERDUE (several servers hang at once), the pool
    adds threads, up to POOL_GROWTH times its size.

    One idle thread (the timer) sleeps until the next turn is due; the others sleep until they
    are needed: a thread taking a turn wakes one of them to time the turns after it."""

    def __init__(self, engine: Engine, size: int):
        self.engine = engine
        self.size = max(1, size)
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # the idle threads that are not the timer
        self._timer_cond = threading.Condition(lock)  # the timer
        self._timer_waiting = False
        self._heap: List[Tuple[float, int, _Worker]] = []
        self._sequence = 0  # ties in the heap are broken by order of arrival
        self._threads: List[threading.Thread] = []
        self._stopping = False
        self._idle = 0  # threads waiting for a turn
        self._members: Dict[str, _Worker] = {}

    def wake(self, worker: _Worker) -> None:
        """Look at ``worker``'s source again now (from any thread)."""
        with self._cond:
            self._members[worker.source.name] = worker
            if self._stopping:
                return
            if worker.running:
                worker.woken = True  # the thread on it plans its next turn from now
                return
            self._plan(worker, self.engine._clock())

    def _plan(self, worker: _Worker, at: Optional[float]) -> None:
        """(the lock is held) The source's next turn at ``at``; None: none until woken."""
        if at is not None and worker.planned is not None and worker.planned <= at:
            return  # an earlier turn is planned already
        worker.planned = at
        if at is None:
            return
        self._sequence += 1
        entry = (at, self._sequence, worker)
        heapq.heappush(self._heap, entry)
        if self._idle == 0:
            threads = len(self._threads)
            # Past its size the pool grows only when turns wait: many servers hanging at once
            # (a rack down) hold one thread each until their timeout.
            if threads < self.size or (threads < self.size * POOL_GROWTH
                                       and self._heap[0][0] < self.engine._clock() - OVERDUE):
                self._start_thread()
        if self._timer_waiting:
            if self._heap[0] is entry:
                self._timer_cond.notify()  # the timer sleeps until a later turn: look again
        else:
            self._cond.notify()  # nobody times the turns: an idle thread becomes the timer

    def _start_thread(self) -> None:
        thread = threading.Thread(target=self._serve, name=f"pool-{len(self._threads) + 1}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _serve(self) -> None:
        while True:
            with self._cond:
                worker = self._next_turn()
                if worker is None:  # stopping: close the idle sources' connections, then leave
                    idle = [w for w in self._members.values() if not w.running and w.connected]
                    for member in idle:
                        member.running = True  # closed here: no other thread takes it now
                elif self._heap and not self._timer_waiting:
                    self._cond.notify()  # an idle thread times the next turn meanwhile
            if worker is None:
                for member in idle:
                    member._close()
                return
            self._take(worker)

    def _next_turn(self) -> Optional[_Worker]:
        """(the lock held) Wait for the next due turn and take it (its source marked running);
        None when the pool stops."""
        clock = self.engine._clock
        while not self._stopping:
            first = self._first_planned()
            if first is None:
                self._wait(self._cond, IDLE_WAIT)
                continue
            at, worker = first
            delay = at - clock()
            if delay > 0:
                if self._timer_waiting:
                    self._wait(self._cond, IDLE_WAIT)  # another thread times the next turn
                else:
                    self._timer_waiting = True
                    try:
                        self._wait(self._timer_cond, min(delay, IDLE_WAIT))
                    finally:
                        self._timer_waiting = False
                continue
            heapq.heappop(self._heap)
            worker.planned, worker.running, worker.woken = None, True, False
            return worker
        return None

    def _first_planned(self) -> Optional[Tuple[float, _Worker]]:
        """(the lock held) The heap's first turn, (when, whose), left on the heap; None when
        there is none. Stale entries before it are dropped: a source planned again earlier,
        or taken by a thread, keeps its older entry (a source planned again at the time of an
        older entry has two, the second stale once the first is taken)."""
        while self._heap:
            at, _, worker = self._heap[0]
            if worker.planned == at and not worker.running:
                return at, worker
            heapq.heappop(self._heap)
        return None

    def _take(self, worker: _Worker) -> None:
        """Take one turn of ``worker`` (marked running), then plan its next."""
        clock = self.engine._clock
        try:
            at = worker.step()
        except Exception:  # a bug in one source's step must not take a pool thread with it
            log.exception("%s: pooled step failed", worker.source.name)
            at = clock() + BACKOFF_STEPS[-1]
        with self._cond:
            worker.running = False
            if worker.woken:
                now = clock()
                at = now if at is None else min(at, now)
            self._plan(worker, at)

    def _wait(self, condition: threading.Condition, timeout: float) -> None:
        self._idle += 1
        try:
            condition.wait(timeout)
        finally:
            self._idle -= 1

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            self._timer_cond.notify_all()

    def join(self, timeout: float) -> None:
        deadline = self.engine._clock() + timeout
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - self.engine._clock()))
