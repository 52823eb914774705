"""``proxytop --daemon --record-dir DIR``: the always-on recorder (no terminal, no output).

It is ``--batch --screen all --record FILE`` without the reports, and with:

- **a file per hour** (:class:`RotatingWriter`): ``DIR/proxytop-YYYYmmdd-HHMMSS.rec.gz``, named
  by the UTC time it was started; every file begins with the header, the sources and the
  collectors, so each one replays alone, and all carry the recorder's run so that
  ``--replay DIR`` reads the directory as one timeline;
- **retention** (``--retention 48h``, ``--retention-size 2G``): the oldest files are removed
  first, at every new file and every minute (:func:`proxytop.recordings.rotation.to_remove`);
- **a full disk** (any failed write) is one line in the log; the readings are dropped and a
  new file is tried every RETRY seconds, never a crash;
- **triggers** (``--on 'threads_running>50'``, :mod:`proxytop.recordings.triggers`) and
  **detail readings** (:class:`DetailKeeper`): the processlists, digests, sessions and lock
  readings are read every QUIET_READ seconds and written every QUIET_WRITE seconds while
  nothing fires; the unwritten ones of the last AROUND seconds are kept in memory.
  When a trigger fires, the moment is marked in the recording, the kept readings are written
  (the minutes before) and, for AROUND seconds after the last firing, the detail
  readings are read at their screen's pace and every one is written;
- **signals**: SIGTERM (and SIGINT) end it cleanly, every file finished; SIGHUP reopens the
  log file (after logrotate moved it).

ProxySQL or a MySQL server that goes away is retried by the engine as in the live view, for
as long as it takes.
"""
from __future__ import annotations

import collections
import logging
import os
import threading
import time
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, Sequence, Tuple

from proxytop.core import Snapshot
from proxytop.recordings import rotation
from proxytop.recordings.recording import RecordingError, RecordingWriter
from proxytop.recordings.triggers import FIGURES, Trigger, fired
from proxytop.screens.sided import header_collector

log = logging.getLogger(__name__)

DEFAULT_SCREENS = ("connpool", "glostat", "proclist", "comcount", "queries", "errors", "servers")
# The readings that cost the most to read and to keep: read and written less often while
# nothing fires.
DETAIL_PREFIXES = ("proxysql.processlist", "proxysql.pgsql.processlist", "proxysql.query_digest",
                   "proxysql.pgsql.query_digest", "mysql.sessions.", "mysql.statements.", "mysql.locks.",
                   "mysql.mdl.")
QUIET_READ = 10.0  # seconds between detail readings while nothing fires
QUIET_WRITE = 60.0  # seconds between the detail readings written while nothing fires
AROUND = 300.0  # seconds of full detail this long before and after a trigger
RETRY = 10.0  # seconds between attempts to write again after a failed write
HOUSEKEEPING = 60.0  # seconds between retention checks within an hour
MEASURE = 60.0  # the MB per hour are measured over the first minute
TICK = 1.0  # seconds between the main loop's checks (triggers, signals, retention)


def is_detail(name: str) -> bool:
    """
    >>> is_detail("proxysql.processlist"), is_detail("mysql.sessions.db:3306"), is_detail("proxysql.global")
    (True, True, False)
    """
    return name.startswith(DETAIL_PREFIXES)


class DetailKeeper:
    """Which detail readings are written, and which are kept in memory for a trigger.

    Quiet, a collector's reading is written when QUIET_WRITE seconds have passed since the
    last one written; the others are kept for ``around`` seconds. ``fire(now)`` hands back the
    kept ones (the minutes before) and makes every reading count until ``around`` seconds
    later. Times are the snapshots' monotonic times, so tests give their own.

    >>> snap = lambda t: Snapshot("proxysql.processlist", None, t, 0.0)
    >>> keeper = DetailKeeper(around=30.0, write_every=60.0)
    >>> [keeper.offer(snap(t)) for t in (0.0, 10.0, 20.0, 30.0, 40.0)]
    [True, False, False, False, False]
    >>> [s.taken_at for s in keeper.fire(45.0)]  # kept: the last 30 s
    [20.0, 30.0, 40.0]
    >>> keeper.offer(snap(50.0)), keeper.busy(70.0), keeper.busy(80.0)
    (True, True, False)
    """

    def __init__(self, around: float = AROUND, write_every: float = QUIET_WRITE):
        self.around = around
        self.write_every = write_every
        self._lock = threading.Lock()
        self._kept: Dict[str, Deque[Snapshot]] = {}
        self._last_written: Dict[str, float] = {}
        self._busy_until = float("-inf")

    def busy(self, now: float) -> bool:
        with self._lock:
            return now < self._busy_until

    def offer(self, snapshot: Snapshot) -> bool:
        """Whether to write this reading now (else it is kept for a while)."""
        at, name = snapshot.taken_at, snapshot.collector
        with self._lock:
            last = self._last_written.get(name)
            if at < self._busy_until or last is None or at - last >= self.write_every - 0.5:
                self._last_written[name] = at
                return True
            kept = self._kept.setdefault(name, collections.deque())
            kept.append(snapshot)
            while kept and kept[0].taken_at < at - self.around:
                kept.popleft()
            return False

    def fire(self, now: float) -> List[Snapshot]:
        """A trigger fired at ``now``: the kept readings of the last ``around`` seconds, oldest
        first (each handed out once), and full detail until ``around`` seconds from now."""
        with self._lock:
            self._busy_until = max(self._busy_until, now + self.around)
            out = [s for kept in self._kept.values() for s in kept if s.taken_at >= now - self.around]
            self._kept.clear()
        return sorted(out, key=lambda s: s.taken_at)


class RotatingWriter:
    """A :class:`RecordingWriter` per hour in a directory, with retention; what the
    :class:`Recorder` writes to (the same methods). Thread-safe. ``wall`` and ``clock`` are
    the real clocks, given by tests; ``open_file`` makes the writer of one file (a test gives
    one that fails as a full disk does)."""

    def __init__(self, directory: str, options: Optional[Dict[str, Any]] = None, target: str = "",
                 retention: Optional[float] = None, retention_size: Optional[int] = None,
                 keeper: Optional[DetailKeeper] = None, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 open_file: Callable[..., RecordingWriter] = RecordingWriter, retry: float = RETRY):
        self.directory = directory
        self.options, self.target = options or {}, target
        self.retention, self.retention_size = retention, retention_size
        self.keeper = keeper
        self._clock, self._wall, self._open_file, self._retry = clock, wall, open_file, retry
        self.run = f"{os.uname().nodename}-{os.getpid()}-{wall():.6f}"  # this recorder's files, one timeline
        self._lock = threading.RLock()
        self._sources: Dict[str, Tuple[Any, float]] = {}
        self._collectors: Dict[str, Any] = {}
        self._states: Dict[str, Any] = {}
        self.current: Optional[RecordingWriter] = None
        self.current_name: Optional[str] = None
        self.ends_at = 0.0
        self.failing: Optional[str] = None  # why writing stopped, while it is stopped
        self.retry_at = 0.0
        self.lost = 0  # records dropped while writing failed
        self.bytes_closed = 0
        self.removed: List[str] = []
        self._next_housekeeping = 0.0
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise RecordingError(f"cannot create the recording directory {directory}: {exc.strerror or exc}") from None
        if not os.access(directory, os.W_OK | os.X_OK):
            raise RecordingError(f"cannot write in the recording directory {directory}")
        with self._lock:
            self._new_file(self._wall())

    # ----- files ---------------------------------------------------------------------------
    def _new_file(self, now: float) -> bool:
        """Finish the current file and start the next; False when it can't be written.
        Retention runs first: what it removes may be the room the next file needs."""
        self._finish_current()
        self._housekeeping(now)
        name = rotation.file_name(now)
        path = os.path.join(self.directory, name)
        existed = os.path.exists(path)
        writer = None
        try:
            writer = self._open_file(path, options=self.options, target=self.target, clock=self._clock,
                                     wall=self._wall, run=self.run)
            for source_name, (source, at) in self._sources.items():
                writer.source(source_name, source, at)
            for collector in self._collectors.values():
                writer.collector(collector)
            for state in self._states.values():
                writer.state(state)
        except (OSError, RecordingError) as exc:
            self._failed(exc, now)
            self._remove_unwritten(writer, path, existed)
            return False
        self.current, self.current_name, self.ends_at = writer, name, rotation.hour_end(now)
        if self.failing is not None:
            log.warning("recording again, in %s (%d records lost while it failed)", name, self.lost)
            self.failing = None
        else:
            log.info("recording in %s", name)
        return True

    @staticmethod
    def _remove_unwritten(writer: Optional[RecordingWriter], path: str, existed: bool) -> None:
        """A file begun on a full disk goes again: each retry (every 10 s) would leave one."""
        try:
            if writer is not None:
                writer.close()
        except (OSError, RecordingError):
            pass
        if not existed:
            try:
                os.remove(path)
            except OSError:
                pass

    def _finish_current(self) -> None:
        if self.current is None:
            return
        self.current.close()
        try:
            self.bytes_closed += os.path.getsize(self.current.path)
        except OSError:
            pass
        self.current, self.current_name = None, None

    def _failed(self, exc: BaseException, now: float) -> None:
        """A write failed: one line in the log (not one per record), and a new file later."""
        why = getattr(exc, "strerror", None) or str(exc)
        if self.failing is None:
            log.error("recording stopped: cannot write in %s: %s; trying again every %g s",
                      self.directory, why, self._retry)
        self.failing = why
        self.retry_at = now + self._retry
        if self.current is not None:
            self.current.abandon()
            try:
                self.bytes_closed += os.path.getsize(self.current.path)
            except OSError:
                pass
            self.current, self.current_name = None, None

    def _housekeeping(self, now: float) -> None:
        """Retention: remove the oldest files beyond --retention / --retention-size."""
        self._next_housekeeping = now + HOUSEKEEPING
        if self.retention is None and self.retention_size is None:
            return
        files = rotation.list_directory(self.directory)
        for name in rotation.to_remove(files, now, self.retention, self.retention_size, self.current_name):
            try:
                os.remove(os.path.join(self.directory, name))
                self.removed.append(name)
                log.info("removed %s (retention)", name)
            except OSError as exc:
                log.warning("cannot remove %s: %s", name, exc.strerror or exc)

    def _write(self, action: Callable[[RecordingWriter], Any], record: bool = True) -> bool:
        """Do ``action`` on the current file (``record``: it writes a record, counted as lost
        when it can't be written)."""
        with self._lock:
            now = self._wall()
            if self.current is None or now >= self.ends_at:
                if (self.current is None and now < self.retry_at) or not self._new_file(now):
                    self.lost += record
                    return False
            elif now >= self._next_housekeeping:
                self._housekeeping(now)
            try:
                action(self.current)
            except OSError as exc:
                self._failed(exc, now)
                self.lost += record
                return False
            return True

    def tick(self) -> None:
        """Between records: a new hour's file, retention, a retry after a failure."""
        self._write(lambda writer: None, record=False)

    def bytes_written(self) -> int:
        with self._lock:
            size = 0
            if self.current is not None:
                try:
                    size = os.path.getsize(self.current.path)
                except OSError:
                    pass
            return self.bytes_closed + size

    # ----- what the Recorder calls (RecordingWriter's methods) -----------------------------
    def source(self, name: str, source: Any, at: float) -> None:
        with self._lock:
            self._sources[name] = (source, at)
            self._write(lambda writer: writer.source(name, source, at))

    def collector(self, collector: Any) -> None:
        with self._lock:
            self._collectors[collector.name] = collector
            self._write(lambda writer: writer.collector(collector))

    def state(self, state: Any) -> None:
        with self._lock:
            self._states[state.name] = state
            self._write(lambda writer: writer.state(state))

    def error(self, collector: str, message: str, at: float) -> None:
        self._write(lambda writer: writer.error(collector, message, at))

    def snapshot(self, snapshot: Snapshot) -> bool:
        if self.keeper is not None and is_detail(snapshot.collector) and not self.keeper.offer(snapshot):
            return False  # kept in memory for a while
        return self._write(lambda writer: writer.snapshot(snapshot))

    def mark(self, text: str, at: float) -> None:
        self._write(lambda writer: writer.mark(text, at))

    def write_kept(self, snapshots: Iterable[Snapshot]) -> None:
        """Readings a trigger took out of the keeper: written as they are, at their own times."""
        for snapshot in snapshots:
            self._write(lambda writer: writer.snapshot(snapshot))

    def close(self) -> None:
        with self._lock:
            self._finish_current()


class Daemon:
    """The main loop: what the chosen screens need is polled (as --batch does), triggers are
    checked every TICK, signals are answered. The engine and controller come from cli.build."""

    def __init__(self, engine, controller, screens: Sequence[Any], writer: RotatingWriter,
                 triggers: Sequence[Trigger] = (), interval: float = 1.0, keeper: Optional[DetailKeeper] = None):
        self.engine, self.controller, self.screens = engine, controller, list(screens)
        self.writer, self.triggers, self.interval = writer, tuple(triggers), interval
        self.keeper = keeper
        self.stop = threading.Event()
        self.reopen_log = threading.Event()
        self.reopen: Callable[[], None] = lambda: None
        self._active: Tuple[Tuple[str, float], ...] = ()
        self._firing: frozenset = frozenset()
        self.marks = 0

    def plan(self) -> Tuple[Tuple[str, float], ...]:
        """(collector, seconds) of what to read now: the chosen screens' collectors, the
        header's, and the header's alarms' at their own pace. Detail readings are slowed to
        QUIET_READ while no trigger has fired in the last ``around`` seconds."""
        busy = self.keeper is None or self.keeper.busy(self.engine.now())
        names: List[str] = []
        for screen in self.screens:
            names += [n for n in screen.active_collectors() if n not in names]
        header = header_collector(self.controller.screen, names)
        if header not in names and any(getattr(self.engine.collector(n), "source", None) == "proxysql" for n in names):
            names.append(header)
        plan: Dict[str, float] = {}
        for name in names:
            collector = self.engine.collector(name)
            if collector is None:
                continue
            seconds = max(collector.default_interval, self.interval) if collector.own_pace else self.interval
            plan[name] = seconds if busy or not is_detail(name) else max(seconds, QUIET_READ)
        for name, pace in self.controller.alarm_plan():
            if name not in plan and self.engine.collector(name) is not None:
                plan[name] = pace
        return tuple(plan.items())

    def activate(self) -> None:
        plan = self.plan()
        if plan != self._active:
            for name, seconds in plan:
                self.engine.set_interval(name, seconds)
            self.engine.set_active([name for name, _ in plan])
            self._active = plan

    def check_triggers(self) -> None:
        if not self.triggers:
            return
        names = [name for name, _ in self._active]
        lines = fired(self.triggers, names, self.engine.latest)
        now = self.engine.now()
        firing = frozenset(line.split(":", 1)[0] for line in lines)
        for line in lines:
            if line.split(":", 1)[0] not in self._firing:  # it starts firing: mark the moment once
                log.warning("trigger %s", line)
                self.writer.mark(line, now)
                self.marks += 1
        if lines and self.keeper is not None:
            self.writer.write_kept(self.keeper.fire(now))  # and full detail from now on
        self._firing = firing

    def run(self, measured: Callable[[float], None] = lambda mb: None) -> int:
        started, measured_yet, start_bytes = self.engine.now(), False, self.writer.bytes_written()
        self.engine.start()
        while not self.stop.is_set():
            if self.reopen_log.is_set():
                self.reopen_log.clear()
                self.reopen()
                log.info("log reopened (SIGHUP)")
            self.activate()
            self.check_triggers()
            self.writer.tick()
            if not measured_yet and self.engine.now() - started >= MEASURE:
                measured_yet = True
                elapsed = self.engine.now() - started
                measured(max(0, self.writer.bytes_written() - start_bytes) / elapsed * 3600 / 1e6)
            self.stop.wait(TICK)
        return 0


def trigger_screen(trigger: Trigger) -> str:
    """The screen that reads a trigger's figure ('' for the header's alarms, read on any)."""
    return FIGURES[trigger.figure][1]


def screens_to_record(screens: Sequence[Any], names: Optional[Sequence[str]], triggers: Sequence[Trigger]) -> List[Any]:
    """The screens whose readings are recorded: ``--screens`` (or DEFAULT_SCREENS), and those
    the triggers' figures are read by; only screens built here and with data sources."""
    wanted = list(names or DEFAULT_SCREENS)
    for trigger in triggers:
        screen = trigger_screen(trigger)
        if screen and screen not in wanted:
            wanted.append(screen)
    return [s for s in screens if s.key in wanted and s.built and s.active_collectors()]
