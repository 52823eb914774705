"""Replay (--replay FILE, --demo): the engine's read API served from a recording.

:class:`ReplayEngine` answers what the UI asks of the live engine (proxytop.engine_view) from
the readings recorded at or before the playback position, so every screen, sort, filter and
drill-down works as live. Nothing polls and nothing is written: ``submit`` refuses.

Recorded times are placed on one timeline: the monotonic clock of the first run, unchanged (so
rates come out exactly as live), later runs appended to the file shifted by what their headers
say about the wall clock. ``base`` turns a position into wall-clock time.
"""
from __future__ import annotations

import argparse
import bisect
import datetime
import functools
import logging
import os
import re
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from proxytop.config.endpoints import Endpoint
from proxytop.core import Collector, Snapshot, Source
from proxytop.polling.engine import SourceState
from proxytop.recordings.playback import PlaybackClock
from proxytop.recordings.recording import RecordingError, loads, scan
from proxytop.screens.keys import Binding

log = logging.getLogger(__name__)

NOT_IN_REPLAY = "not available in replay"
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
CLUSTER_GAP = 0.25  # readings closer than this belong to the same poll (one step)
JUMP_SECONDS = 10.0
CACHE_SIZE = 4096
DEMO_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "demo.rec.gz")


# ----- the recording, indexed ---------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    """One run of proxytop within a recording (a file can hold several, appended)."""

    start: float  # timeline seconds of its header
    offset: float  # add to the run's monotonic stamps to get timeline seconds
    header: Dict[str, Any]


class Series:
    """The entries of one collector (or source), (time, run, envelope, data text), in time
    order once finished (the engine's threads wrote them as they came)."""

    def __init__(self) -> None:
        self.entries: List[Tuple[float, int, Dict[str, Any], Optional[str]]] = []
        self.times: List[float] = []  # the entries' times, for bisecting

    def finish(self) -> None:
        self.entries.sort(key=lambda entry: entry[0])
        self.times = [entry[0] for entry in self.entries]

    def index_at(self, at: float) -> int:
        """Index of the last entry at or before ``at`` (-1 when none)."""
        return bisect.bisect_right(self.times, at + 1e-9) - 1

    def __len__(self) -> int:
        return len(self.times)


class RecordingIndex:
    """Everything in a recording file, indexed by collector / source and time. Snapshot data
    stay as text until a screen asks for them."""

    def __init__(self, path: str):
        self.path = path
        records, self.complete = scan_path(path)
        self.segments: List[Segment] = []
        self.marks: List[Tuple[float, str]] = []  # (timeline seconds, what fired)
        self.base = 0.0  # timeline + base = wall-clock time
        self.snapshots: Dict[str, Series] = {}
        self.states: Dict[str, Series] = {}
        self.sources: Dict[str, Series] = {}
        self.errors: Dict[str, Series] = {}
        self.collectors: Dict[str, Dict[str, Any]] = {}
        groups = {"s": (self.snapshots, "c"), "st": (self.states, "name"), "src": (self.sources, "name"),
                  "err": (self.errors, "c")}
        for envelope, data in records:
            kind = envelope.get("k")
            if kind == "h" and self.segments and envelope.get("run") \
                    and envelope.get("run") == self.segments[-1].header.get("run"):
                continue  # the next hour's file of the same recorder: the same run, the same clock
            if kind == "h":
                wall, mono = float(envelope.get("wall", 0.0)), float(envelope.get("mono", 0.0))
                if not self.segments:
                    self.base = wall - mono
                offset = (wall - mono) - self.base
                self.segments.append(Segment(start=mono + offset, offset=offset, header=envelope))
                continue
            if not self.segments:
                continue
            segment = len(self.segments) - 1
            offset = self.segments[-1].offset
            try:
                at = float(envelope.get("t", 0.0)) + offset
            except (TypeError, ValueError):
                continue
            if kind in groups and groups[kind][1] in envelope:
                group, key = groups[kind]
                group.setdefault(envelope[key], Series()).entries.append((at, segment, envelope, data))
            elif kind == "col" and "name" in envelope:
                self.collectors[envelope["name"]] = envelope
            elif kind == "mark":
                self.marks.append((at, str(envelope.get("m", ""))))
        for group, _key in groups.values():
            for series in group.values():
                series.finish()
        timed = list(self.snapshots.values()) + list(self.states.values()) + list(self.errors.values())
        times = [s.times[0] for s in timed if s.times]
        ends = [s.times[-1] for s in timed if s.times]
        if not times:
            raise RecordingError(f"{path} holds no readings")
        self.start = min(times)
        self.end = max(ends)
        self.segment_starts = [s.start for s in self.segments]

        self.marks.sort()

    @property
    def options(self) -> Dict[str, Any]:
        """The recorded command-line options of the first run."""
        return dict(self.segments[0].header.get("options") or {}) if self.segments else {}

    def segment_at(self, at: float) -> int:
        return max(0, bisect.bisect_right(self.segment_starts, at + 1e-9) - 1)


def scan_path(path: str) -> Tuple[List[Any], bool]:
    """(records, whether every file ended cleanly) of a recording file, or of a directory of
    them (``--daemon --record-dir``) read as one timeline: its files in the order they were
    started (their first header's wall-clock time), each up to its last complete record."""
    if not os.path.isdir(path):
        found = scan(path)
        return found.records, found.complete
    scans = []
    for name in sorted(os.listdir(path)):
        if not name.endswith(".rec.gz"):
            continue
        try:
            found = scan(os.path.join(path, name))
        except RecordingError as exc:  # an empty file (a recorder killed as it began one), ...
            log.warning("%s", exc)
            continue
        scans.append((float(found.records[0][0].get("wall", 0.0)), name, found))
    if not scans:
        raise RecordingError(f"{path} holds no proxytop recordings (*.rec.gz)")
    scans.sort(key=lambda item: (item[0], item[1]))
    return [record for _, _, found in scans for record in found.records], all(f.complete for _, _, f in scans)


class ReplaySource(Source):
    """A source as it was recorded: its endpoint (without password), its session's version and
    tables. Never connects: ``replayed`` tells a screen that what it shows was recorded (a
    replay writes no file and watches no other node)."""

    replayed = True

    def __init__(self, name: str, info: Dict[str, Any]):
        for key, value in info.items():
            setattr(self, key, value)
        self.name = name
        self.description = info.get("description") or name

    def connect(self) -> Any:
        raise RecordingError(NOT_IN_REPLAY)


class RecordedCollector(Collector):
    """A collector known only from the recording (its screen did not register it)."""

    def __init__(self, info: Dict[str, Any]):
        self.name = info["name"]
        self.source = info.get("source", "host")
        self.history = int(info.get("history", 2))
        self.default_interval = float(info.get("default", 1.0))
        self.min_interval = float(info.get("min", 0.5))
        self.own_pace = bool(info.get("own_pace", False))

    def collect(self, handle: Any) -> Any:
        raise RecordingError(NOT_IN_REPLAY)


# ----- the engine -------------------------------------------------------------------------------

class ReplayEngine(PlaybackClock):
    """The engine's read API over a recording, as it stood at the playback position
    (``now()``, on the recording's timeline; ``clock`` is the real monotonic clock, injected in
    tests). Only readings of the position's own run count (a rate never spans two runs). Its
    readings follow the position, not events: it neither wakes the UI (npyscreen's keypress
    timeout does) nor numbers its changes (the UI compares snapshots)."""

    replaying = True
    refuses_writes = NOT_IN_REPLAY

    def __init__(self, index: RecordingIndex, clock: Callable[[], float] = time.monotonic,
                 speed: float = 1.0, loop: bool = False, start: Optional[float] = None):
        super().__init__(index.start, index.end, clock, speed=speed, loop=loop, at=start)
        self.index = index
        self._sources: Dict[str, Source] = {}
        self._collectors: Dict[str, Collector] = {}
        self._intervals: Dict[str, float] = {}
        self._active: frozenset = frozenset()
        # Each record decoded once: a 2,000-row digest takes some 25 ms to decode and is asked
        # for several times a frame; and the same object each time tells a screen nothing changed.
        self._decoded = functools.lru_cache(maxsize=CACHE_SIZE)(self._decode)
        self._followers: List[List[Any]] = []  # [observer, its readings in time order, how many told]

    @classmethod
    def open(cls, path: str, **kwargs) -> "ReplayEngine":
        return cls(RecordingIndex(path), **kwargs)

    # ----- set-up (what cli.build does with a live engine) ----------------------------------
    def add_source(self, source: Source) -> None:
        self._sources.setdefault(source.name, source)

    def add_collector(self, collector: Collector) -> None:
        if collector.name not in self._collectors:
            self._collectors[collector.name] = collector
            self._intervals[collector.name] = max(collector.default_interval, collector.min_interval)

    def collector(self, name: str) -> Optional[Collector]:
        found = self._collectors.get(name)
        if found is None and name in self.index.collectors:
            found = self._collectors[name] = RecordedCollector(self.index.collectors[name])
        return found

    def collector_names(self, prefix: str = "") -> List[str]:
        names = dict.fromkeys(list(self._collectors) + list(self.index.snapshots))
        return [n for n in names if n.startswith(prefix)]

    def start(self) -> None:
        self.resume()

    def stop(self, timeout: float = 0.5) -> None:
        self.pause()

    # ----- what the UI changes --------------------------------------------------------------
    def set_active(self, names: Iterable[str], together: Iterable[str] = ()) -> None:
        self._active = frozenset(names)  # ``together``: readings are where they were recorded

    @property
    def active(self) -> frozenset:
        return self._active

    def set_interval(self, name: str, seconds: float) -> float:
        collector = self.collector(name)
        minimum = collector.min_interval if collector is not None else 0.0
        self._intervals[name] = max(float(seconds), minimum)
        return self._intervals[name]

    def interval(self, name: str) -> float:
        return self._intervals.get(name, 1.0)

    def submit(self, source_name: str, task: Callable, done: Callable[[Optional[str]], None]) -> None:
        done(NOT_IN_REPLAY)

    def follow(self, observer: Callable[[str, Any], None], wanted: Callable[[str], bool]) -> None:
        """``observer("snapshot", snapshot)`` for each recorded reading of the collectors
        ``wanted`` names, and ``observer("state", state)`` for each recorded source state, in
        time order, when :meth:`deliver` is called: those up to the position, each once. A jump
        back tells nothing again (the observer keeps what it was told, with its times); forward,
        what lies between is told on the next delivery."""
        entries = sorted([(at, "s", name, i) for name, series in self.index.snapshots.items() if wanted(name)
                          for i, at in enumerate(series.times)]
                         + [(at, "st", name, i) for name, series in self.index.states.items()
                            for i, at in enumerate(series.times)])
        self._followers.append([observer, entries, 0])

    def deliver(self) -> None:
        position = self.now()
        for follower in self._followers:
            observer, entries, told = follower
            while told < len(entries) and entries[told][0] <= position + 1e-9:
                _at, kind, name, i = entries[told]
                # decoded afresh, not through the cache: a long way forward would empty it
                value = self._decode(kind, name, i)
                if value is not None:
                    observer("snapshot" if kind == "s" else "state", value)
                told += 1
            follower[2] = told

    # ----- moving through the recording -----------------------------------------------------
    def poll_ends(self, names: Iterable[str]) -> List[float]:
        """The time of the last reading of each poll of these collectors (readings closer
        than CLUSTER_GAP are one poll): the positions a step moves between."""
        series = [self.index.snapshots[name] for name in names if name in self.index.snapshots]
        return cluster_ends(sorted(at for s in series for at in s.times))

    def step(self, direction: int, names: Iterable[str]) -> bool:
        """Pause and move one poll forward or back; False at either end."""
        position = self.now()
        self.pause()
        ends = self.poll_ends(names)
        if direction > 0:
            i = bisect.bisect_right(ends, position + 1e-6)
        else:
            i = bisect.bisect_left(ends, position - 1e-6) - 1
        if not 0 <= i < len(ends):
            return False
        self.seek(ends[i])
        return True

    def wall_now(self) -> float:
        """The recorded wall-clock time of the position."""
        return self.now() + self.index.base

    def wall_span(self) -> Optional[Tuple[float, float]]:
        """The recording's first and last wall-clock times (a graph's "whole recording")."""
        return self.index.start + self.index.base, self.index.end + self.index.base

    # ----- what the UI reads (as it stood at the position) ----------------------------------
    def _entry_at(self, series: Optional[Series], at: float) -> int:
        """Index of the series' last entry at or before ``at`` in the same run (-1 when none)."""
        i = series.index_at(at) if series is not None else -1
        if i < 0 or series.entries[i][1] != self.index.segment_at(at):
            return -1
        return i

    def _decode(self, kind: str, name: str, i: int) -> Any:
        """The snapshot (kind "s"), state ("st") or source ("src") of entry ``i`` of ``name``;
        None for a state or a source that can't be read."""
        series = {"s": self.index.snapshots, "st": self.index.states, "src": self.index.sources}[kind][name]
        at, segment, envelope, raw = series.entries[i]
        try:
            data = loads(raw) if raw is not None else None
        except (RecordingError, ValueError, TypeError) as exc:
            log.warning("%s at %.3f: %s", name, at, exc)
            if kind != "s":
                return None
            data, envelope = None, dict(envelope, e=f"cannot replay this reading: {exc}")
        if kind == "s":
            return Snapshot(collector=name, data=data, taken_at=at, duration=float(envelope.get("d") or 0.0),
                            wall_time=float(envelope.get("w") or at), error=envelope.get("e"))
        if kind == "src":
            return ReplaySource(name, data if isinstance(data, dict) else {})
        if not isinstance(data, SourceState):
            return None
        offset = self.index.segments[segment].offset  # its monotonic times moved onto the timeline
        # set when recorded (changed_at on the timeline); a recording made before states had
        # a wall time: the record's
        return replace(data, retry_at=data.retry_at + offset if data.retry_at is not None else None,
                       since=data.since + offset, changed_at=at, wall_time=data.wall_time or at + self.index.base)

    def _snapshots(self, name: str, keep: int) -> Tuple[Snapshot, ...]:
        """Up to ``keep`` readings of the position's run, the last one at or before it."""
        series = self.index.snapshots.get(name)
        i = self._entry_at(series, self.now())
        if i < 0:
            return ()
        first = i
        while first > 0 and i - first + 1 < keep and series.entries[first - 1][1] == series.entries[i][1]:
            first -= 1
        return tuple(self._decoded("s", name, j) for j in range(first, i + 1))

    def latest(self, name: str) -> Optional[Snapshot]:
        found = self._snapshots(name, 1)
        return found[-1] if found else None

    def history(self, name: str) -> Tuple[Snapshot, ...]:
        collector = self.collector(name)
        return self._snapshots(name, max(2, collector.history if collector is not None else 2))

    def last_two(self, name: str) -> Tuple[Optional[Snapshot], Optional[Snapshot]]:
        found = self._snapshots(name, 2)
        return (None,) * (2 - len(found)) + found

    def error(self, name: str) -> Optional[str]:
        errors = self.index.errors.get(name)
        i = self._entry_at(errors, self.now())
        if i < 0:
            return None
        latest = self.latest(name)
        if latest is not None and latest.taken_at >= errors.times[i]:
            return None  # a reading succeeded since
        return errors.entries[i][2].get("m")

    def state(self, source_name: str) -> Optional[SourceState]:
        i = self._entry_at(self.index.states.get(source_name), self.now())
        return self._decoded("st", source_name, i) if i >= 0 else None

    def states(self) -> List[SourceState]:
        found = [self.state(name) for name in self.index.states]
        return [s for s in found if s is not None]

    def counting_down(self) -> List[SourceState]:
        return [s for s in self.states() if s.retry_at is not None]

    def source(self, name: str) -> Optional[Source]:
        """The source as recorded at the position (or as registered, when not recorded)."""
        series = self.index.sources.get(name)
        recorded = self._decoded("src", name, max(0, series.index_at(self.now()))) if series else None
        return recorded if recorded is not None else self._sources.get(name)


def cluster_ends(times: Sequence[float], gap: float = CLUSTER_GAP) -> List[float]:
    """The last time of each poll: times within ``gap`` of the poll's first reading. Polls of
    different servers run on their own threads, so a chain of close readings is cut every
    ``gap`` seconds rather than merged.

    >>> cluster_ends([1.0, 1.01, 1.02, 2.0, 2.1, 3.5])
    [1.02, 2.1, 3.5]
    >>> cluster_ends([0.0, 0.2, 0.4, 0.6])
    [0.2, 0.6]
    """
    ends: List[float] = []
    first: Optional[float] = None
    for i, at in enumerate(times):
        if first is None:
            first = at
        if i + 1 == len(times) or times[i + 1] - first >= gap:
            ends.append(at)
            first = None
    return ends


def speed_text(speed: float) -> str:
    """
    >>> speed_text(1.0), speed_text(0.25), speed_text(16)
    ('1x', '1/4x', '16x')
    """
    if speed < 1:
        return f"1/{round(1 / speed):d}x"
    return f"{speed:g}x"


def clock_text(seconds: float) -> str:
    """
    >>> clock_text(0), clock_text(75.4), clock_text(3725)
    ('0:00', '1:15', '1:02:05')
    """
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_time(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def step_speed(current: float, direction: int) -> float:
    """
    >>> step_speed(1.0, +1), step_speed(1.0, -1), step_speed(64, +1), step_speed(0.25, -1)
    (2.0, 0.5, 64.0, 0.25)
    """
    faster = [s for s in SPEEDS if s > current + 1e-9]
    slower = [s for s in SPEEDS if s < current - 1e-9]
    if direction > 0:
        return faster[0] if faster else SPEEDS[-1]
    return slower[-1] if slower else SPEEDS[0]


_OFFSET = re.compile(r"^([+-])\s*(\d+(?:\.\d+)?)\s*([smhd]?)$")
_CLOCK = re.compile(r"^(?:(\d{4})-(\d{2})-(\d{2})[ T])?(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_jump(text: str, position: float, start: float, end: float,
               zone: Callable[[float], time.struct_time] = time.localtime) -> float:
    """Where ``t`` sends the replay: 'start', 'end', '+30s', '-2m', '50%', '12:03:45' (local
    time, on a day the recording covers) or '2024-05-01 12:03'. ValueError with a plain
    message otherwise.

    >>> parse_jump("+30s", 100.0, 0.0, 1000.0), parse_jump("-2m", 500.0, 0.0, 1000.0)
    (130.0, 380.0)
    >>> parse_jump("50%", 0.0, 100.0, 300.0), parse_jump("end", 0.0, 100.0, 300.0)
    (200.0, 300.0)
    >>> parse_jump("00:01:40", 0.0, 0.0, 1000.0, zone=time.gmtime)
    100.0
    """
    words = text.strip().lower()
    if not words:
        raise ValueError("type a time: 12:03:45, +30s, -2m, 50%, start or end")
    if words in ("start", "begin", "beginning"):
        return start
    if words == "end":
        return end
    offset = _OFFSET.match(words)
    if offset:
        sign, number, unit = offset.groups()
        delta = float(number) * _UNIT[unit]
        return position + delta if sign == "+" else position - delta
    if words.endswith("%"):
        try:
            share = float(words[:-1])
        except ValueError:
            raise ValueError(f"'{text}' is not a percentage") from None
        return start + (end - start) * min(max(share, 0.0), 100.0) / 100.0
    clock = _CLOCK.match(words)
    if not clock:
        raise ValueError(f"'{text}' is not a time (12:03:45, 2024-05-01 12:03, +30s, -2m, 50%, start, end)")
    year, month, day, hour, minute, second = clock.groups()
    hour_i, minute_i, second_i = int(hour), int(minute), int(second or 0)
    if hour_i > 23 or minute_i > 59 or second_i > 59:
        raise ValueError(f"'{text}' is not a time of day")
    within = hour_i * 3600 + minute_i * 60 + second_i
    offset_seconds = float(getattr(zone(position), "tm_gmtoff", 0) or 0)
    if year:
        try:
            day_start = datetime.datetime(int(year), int(month), int(day), tzinfo=datetime.timezone.utc).timestamp()
        except ValueError:
            raise ValueError(f"'{text}' is not a date") from None
        return day_start - offset_seconds + within
    # A time of day: on the day of the position, or another day the recording covers.
    candidates = []
    for anchor in (position, start, end):
        local = anchor + offset_seconds
        day_start = local - (local % 86400) - offset_seconds
        candidates.append(day_start + within)
    inside = [c for c in candidates if start - 1 <= c <= end + 1]
    return inside[0] if inside else candidates[0]


# ----- the keys of a replay -------------------------------------------------------------------

class ReplayControls:
    """Key bindings added to the controller in a replay; actions follow the screens'
    convention (``action_<name>(controller)``)."""

    title = "replay"
    bindings: Sequence[Binding] = (
        Binding(("p", " "), "pause", "pause / resume playback", "p pause"),
        Binding((",",), "step_back", "step back one reading (pauses)", ",/. step"),
        Binding((".",), "step_forward", "step forward one reading (pauses)"),
        Binding(("KEY_LEFT",), "back", f"{JUMP_SECONDS:g} seconds back", "\u2190\u2192 10s"),
        Binding(("KEY_RIGHT",), "forward", f"{JUMP_SECONDS:g} seconds forward"),
        Binding(("[", "-"), "slower", "slower playback (down to 1/4x)", "[/] speed"),
        Binding(("]", "+", "="), "faster", "faster playback (up to 64x)"),
        Binding(("t",), "jump", "jump to a time: 12:03:45, 2024-05-01 12:03, +30s, -2m, 50%, start, end",
                "t time"),
    )

    def __init__(self, engine: ReplayEngine):
        self.engine = engine

    def status(self, controller) -> List[Tuple[str, Optional[str]]]:
        """Segments of the header's second line in a replay: where it is, and how it plays."""
        engine = self.engine
        position = engine.now()
        line: List[Tuple[str, Optional[str]]] = [("recorded ", "label"),
                                                 (format_time(position + engine.index.base), "header")]
        if engine.at_end:
            line.append(("  end of recording", "warning_bold"))
        elif engine.paused:
            line.append(("  paused", "warning_bold"))
        else:
            line.append((f"  playing {speed_text(engine.speed)}", "good"))
        elapsed = position - engine.index.start
        line.append((f"  {clock_text(elapsed)} / {clock_text(engine.index.end - engine.index.start)}", "label"))
        screen = controller.screen
        if screen.built:
            names = list(screen.active_collectors())
            if names and all(engine.latest(n) is None for n in names):
                line.append(("  no readings of this screen here", "warning"))
        return line

    def _say_position(self, controller, prefix: str = "") -> None:
        controller.say(f"{prefix}{format_time(self.engine.wall_now())}")

    def _step(self, direction: int, controller) -> None:
        names = list(controller.screen.active_collectors())
        if not self.engine.poll_ends(names):
            controller.say("this screen has no readings in the recording")
        elif self.engine.step(direction, names):
            self._say_position(controller, "paused at ")
        else:
            controller.say("start of the recording" if direction < 0 else "end of the recording")

    def _move(self, seconds: float, controller) -> None:
        self.engine.seek(self.engine.now() + seconds)
        self._say_position(controller)

    def _change_speed(self, direction: int, controller) -> None:
        self.engine.set_speed(step_speed(self.engine.speed, direction))
        controller.say(f"playback {speed_text(self.engine.speed)}")

    def action_pause(self, controller) -> None:
        controller.do_pause()  # the replay engine stands in for the polling engine

    action_step_back = functools.partialmethod(_step, -1)
    action_step_forward = functools.partialmethod(_step, +1)
    action_back = functools.partialmethod(_move, -JUMP_SECONDS)
    action_forward = functools.partialmethod(_move, JUMP_SECONDS)
    action_slower = functools.partialmethod(_change_speed, -1)
    action_faster = functools.partialmethod(_change_speed, +1)

    def jump_to(self, controller, wall: float) -> None:
        """Play from a wall-clock time (a time picked on a graph)."""
        self.engine.seek(wall - self.engine.index.base)
        self._say_position(controller, "playing from ")

    def action_jump(self, controller) -> None:
        engine = self.engine

        def go(text: str) -> Optional[str]:
            index = engine.index
            try:
                target = parse_jump(text, engine.wall_now(), index.start + index.base, index.end + index.base)
            except ValueError as exc:
                return str(exc)
            engine.seek(target - index.base)
            self._say_position(controller)
            return None

        controller.prompt("jump to: ", go, "12:03:45  2024-05-01 12:03  +30s  -2m  50%  start  end")


# ----- configuration for a replay -------------------------------------------------------------

def replay_config(index: RecordingIndex, config, defaults) -> Any:
    """The configuration the screens are built with in a replay: the recorded options (which
    servers were watched, ...) under whatever the command line sets explicitly now."""
    current = vars(config.args) if config is not None and config.args is not None else {}
    default_values = vars(defaults)
    merged = dict(default_values)
    for key, value in index.options.items():
        if key in default_values:
            merged[key] = _as_option(value)
    for key, value in current.items():
        if key not in index.options or value != default_values.get(key):
            merged[key] = value
    args = argparse.Namespace(**merged)
    endpoint = None
    proxysql = index.sources.get("proxysql")
    if proxysql is not None and len(proxysql):
        try:
            endpoint = loads(proxysql.entries[0][3]).get("endpoint")
        except (RecordingError, ValueError, TypeError, AttributeError):
            endpoint = None
    if not isinstance(endpoint, Endpoint):
        endpoint = Endpoint(host=str(merged.get("host") or "127.0.0.1"), port=int(merged.get("port") or 6032),
                            user=str(merged.get("user") or "admin"), password="", socket=merged.get("socket"))
    return replace(config, endpoint=replace(endpoint, password=""), args=args)


def _as_option(value: Any) -> Any:
    """Recorded option values come back as lists; argparse gave tuples for pairs like --mysql."""
    if isinstance(value, list):
        return [tuple(v) if isinstance(v, list) else v for v in value]
    return value

