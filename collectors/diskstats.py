"""Block device counters and CPU times of this host, for the IOstat screen.

Counts, bytes and times come from ``psutil.disk_io_counters(perdisk=True)``; what psutil
drops (requests in flight, weighted time, discard and flush fields) from /proc/diskstats.
Every path is injectable, and ``psutil_counters=None`` takes everything from the file, so
tests can run on hand-written samples and a fake sysfs tree.

The collector also learns the per-device await baselines (it sees every interval, the UI
does not), keeps them in a small state file, and maps the role paths of a local MySQL server
(datadir, redo log, binlog, tmpdir) to devices. All of that is I/O and runs here, on the
engine's host thread.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

import psutil

from proxytop.core import Collector, CollectorError
from proxytop.polling.devices import DeviceMapper, QueueSettings, map_roles
from proxytop.collectors.baseline_file import load_state, save_state
from proxytop.metrics.iostat import CPU_FIELDS, DIRECTIONS, Baseline, BaselineLearner, DiskCounters, device_stats

log = logging.getLogger(__name__)

NAME = "host.diskstats"
SAVE_EVERY = 60.0  # seconds between writes of the state file (sooner only when a baseline becomes known)
ROLES_EVERY = 60.0  # seconds: role paths are mapped again this often (volumes come and go)
QUEUES_EVERY = 60.0  # seconds: the queue settings (scheduler, read-ahead) are read again this often

# Value fields of a /proc/diskstats line, in order, after major, minor and name.
_FIELDS = ("rd_ios", "rd_merges", "rd_sectors", "rd_ticks", "wr_ios", "wr_merges", "wr_sectors",
           "wr_ticks", "in_flight", "io_ticks", "rq_ticks", "dc_ios", "dc_merges", "dc_sectors",
           "dc_ticks", "fl_ios", "fl_ticks")


def parse_line(line: str) -> Optional[DiskCounters]:
    """One /proc/diskstats line; None for a line that isn't one.

    Lines have 4 value fields (partitions on kernels before 2.6.25), 11, 15 (4.18+) or
    17 (5.5+); later kernels may add more, which are ignored.

    >>> c = parse_line("   8       0 sda 10 1 80 7 20 2 160 9 0 12 16")
    >>> c.name, c.fields, c.rd_ios, c.wr_sectors, c.rq_ticks, c.dc_ios
    ('sda', 11, 10, 160, 16, None)
    >>> c = parse_line("   8       1 sda1 10 80 20 160")
    >>> c.rd_ios, c.rd_sectors, c.wr_ios, c.wr_sectors, c.rd_ticks
    (10, 80, 20, 160, None)
    """
    parts = line.split()
    if len(parts) < 7:
        return None
    try:
        major, minor = int(parts[0]), int(parts[1])
        values = [int(v) for v in parts[3:]]
    except ValueError:
        return None
    name = parts[2]
    if len(values) == 4:
        return DiskCounters(name, major, minor, 4, rd_ios=values[0], rd_sectors=values[1],
                            wr_ios=values[2], wr_sectors=values[3])
    if len(values) < 11:
        return None
    count = 17 if len(values) >= 17 else 15 if len(values) >= 15 else 11
    return DiskCounters(name, major, minor, count, **dict(zip(_FIELDS[:count], values)))


def parse_diskstats(text: str) -> Dict[str, DiskCounters]:
    """All devices of a /proc/diskstats text, by name."""
    devices: Dict[str, DiskCounters] = {}
    for line in text.splitlines():
        counters = parse_line(line)
        if counters is not None:
            devices[counters.name] = counters
    return devices


def merge_psutil(devices: Mapping[str, DiskCounters], counters: Mapping[str, Any]) -> Dict[str, DiskCounters]:
    """Counts, sectors, merges and times from psutil (sdiskio), the rest from the file."""
    merged: Dict[str, DiskCounters] = {}
    for name, base in devices.items():
        io = counters.get(name)
        if io is None:
            merged[name] = base
            continue
        changes = dict(rd_ios=io.read_count, wr_ios=io.write_count,
                       rd_sectors=io.read_bytes // 512, wr_sectors=io.write_bytes // 512)
        if base.fields >= 11:
            changes.update(rd_ticks=io.read_time, wr_ticks=io.write_time)
            if hasattr(io, "read_merged_count"):
                changes.update(rd_merges=io.read_merged_count, wr_merges=io.write_merged_count)
            if hasattr(io, "busy_time"):
                changes.update(io_ticks=io.busy_time)
        # Both read the same kernel counters a moment apart: a device without I/O between the
        # two reads (most of them, every second) keeps the file's object, not a copy of it.
        same = all(getattr(base, field) == value for field, value in changes.items())
        merged[name] = base if same else replace(base, **changes)
    return merged


@dataclass(frozen=True)
class DiskSnapshot:
    """What the IOstat screen reads: plain data, one reading."""

    devices: Mapping[str, DiskCounters]
    kinds: Mapping[str, str]  # name -> disk | partition | dm | md | loop | zram | ram
    cpu: Optional[Mapping[str, float]]  # psutil.cpu_times() as a mapping, seconds
    baselines: Mapping[str, Tuple[Baseline, Baseline]]  # name -> (read, write)
    roles: Mapping[str, FrozenSet[str]] = field(default_factory=dict)  # name -> roles
    role_servers: Tuple[str, ...] = ()  # the servers the roles come from
    beneath: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)  # dm/md/partition -> devices under it
    dm_names: Mapping[str, str] = field(default_factory=dict)  # dm-N -> VG-LV
    notes: Tuple[str, ...] = ()  # one-line problems (state file, unmapped role paths)
    state_file: Optional[str] = None
    queues: Mapping[str, QueueSettings] = field(default_factory=dict)  # name -> sysfs queue settings


RolePathsProvider = Callable[[], Tuple[Mapping[str, Sequence[str]], Tuple[str, ...]]]


def no_role_paths() -> Tuple[Dict[str, List[str]], Tuple[str, ...]]:
    return {}, ()


class DiskStats(Collector):
    """/proc/diskstats + psutil + CPU times, with baseline learning and device roles."""

    name = NAME
    source = "host"
    default_interval = 1.0
    min_interval = 0.5
    history = 2

    def __init__(self, proc: str = "/proc", sysfs: str = "/sys",
                 psutil_counters: Optional[Callable[..., Mapping[str, Any]]] = psutil.disk_io_counters,
                 cpu_times: Optional[Callable[[], Any]] = psutil.cpu_times,
                 state_path: Optional[str] = None,
                 manual_baselines: Optional[Mapping[str, Tuple[Optional[float], Optional[float]]]] = None,
                 role_paths: RolePathsProvider = no_role_paths,
                 mapper: Optional[DeviceMapper] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.proc = proc
        self.psutil_counters = psutil_counters
        self.cpu_times = cpu_times
        self.state_path = state_path
        self.learner = BaselineLearner(manual_baselines)
        self.role_paths = role_paths
        self.mapper = mapper or DeviceMapper(sysfs=sysfs, mountinfo=f"{proc}/self/mountinfo")
        self.clock = clock
        self._previous: Optional[Dict[str, DiskCounters]] = None
        self._previous_at: Optional[float] = None
        self._kinds: Dict[str, str] = {}
        self._beneath: Dict[str, Tuple[str, ...]] = {}
        self._dm_names: Dict[str, str] = {}
        self._state_loaded = False
        self._state_notes: List[str] = []
        self._saved_at: Optional[float] = None
        self._started_at: Optional[float] = None
        self._known_saved: set = set()
        self._roles: Dict[str, FrozenSet[str]] = {}
        self._role_notes: List[str] = []
        self._role_key: Any = None
        self._roles_at: Optional[float] = None
        self._queues: Dict[str, QueueSettings] = {}
        self._queues_at: Optional[float] = None

    # --- reading ------------------------------------------------------------------------------
    def read_devices(self) -> Dict[str, DiskCounters]:
        path = f"{self.proc}/diskstats"
        try:
            with open(path, encoding="ascii", errors="replace") as handle:
                devices = parse_diskstats(handle.read())
        except OSError as exc:
            raise CollectorError(f"cannot read {path}: {exc.strerror or exc.__class__.__name__}") from None
        if self.psutil_counters is not None:
            try:
                counters = self.psutil_counters(perdisk=True, nowrap=False) or {}
            except Exception as exc:  # psutil failing leaves the file's values, which are the same
                log.info("psutil.disk_io_counters: %s", exc)
                counters = {}
            devices = merge_psutil(devices, counters)
        return devices

    def read_cpu(self) -> Optional[Dict[str, float]]:
        if self.cpu_times is None:
            return None
        try:
            times = self.cpu_times()
        except Exception as exc:
            log.info("psutil.cpu_times: %s", exc)
            return None
        return {name: float(getattr(times, name, 0.0) or 0.0) for name in CPU_FIELDS}

    def _describe_new(self, devices: Mapping[str, DiskCounters]) -> None:
        """Kind, identity, what lies beneath: read from sysfs once per device name."""
        for name in devices:
            if name in self._kinds:
                continue
            kind = self.mapper.kind(name)
            self._kinds[name] = kind
            if kind in ("dm", "md", "partition"):
                self._beneath[name] = tuple(self.mapper.beneath(name)[1:])
            if kind == "dm":
                label = self.mapper.dm_name(name)
                if label:
                    self._dm_names[name] = label
            self.learner.identities[name] = self.mapper.identity(name)
        for gone in set(self._kinds) - set(devices):  # a device that comes back is described afresh
            self._kinds.pop(gone, None)
            self._beneath.pop(gone, None)
            self._dm_names.pop(gone, None)

    # --- baselines ----------------------------------------------------------------------------
    def _load_state(self) -> None:
        self._state_loaded = True
        if not self.state_path:
            return
        state, note = load_state(self.state_path)
        if note:
            log.info("%s", note)
            self._state_notes.append(note)
        if state is not None:
            restored = self.learner.restore(state, self.learner.identities)
            self.learner.changed = False
            self._known_saved = {(name, i) for name in restored for i, direction in enumerate(DIRECTIONS)
                                 if self.learner.baseline(name, direction).source == "learned"}

    def _maybe_save(self, now: float, baselines: Mapping[str, Tuple[Baseline, Baseline]]) -> None:
        """Write the state when something was learned and a minute has passed since the last
        write (or the first reading), or at once when a baseline has just become known."""
        if not self.state_path or not self.learner.changed:
            return
        known = {(name, i) for name, pair in baselines.items() for i, base in enumerate(pair)
                 if base.source == "learned"}
        newly_known = bool(known - self._known_saved)
        since = self._saved_at if self._saved_at is not None else self._started_at
        if not newly_known and since is not None and now - since < SAVE_EVERY:
            return
        self._saved_at = now
        self._known_saved = known
        note = save_state(self.state_path, self.learner.to_state())
        if note:
            log.info("%s", note)
            self._state_notes = [n for n in self._state_notes if "cannot write" not in n] + [note]
        else:
            self.learner.changed = False
            self._state_notes = []  # a good file is in place: earlier load or write problems are over

    # --- roles --------------------------------------------------------------------------------
    def _update_roles(self, now: float) -> Tuple[str, ...]:
        try:
            paths, servers = self.role_paths()
        except Exception as exc:  # a provider problem must not stop the disk figures
            log.info("role paths: %s", exc)
            paths, servers = {}, ()
        key = tuple(sorted((role, tuple(v)) for role, v in paths.items()))
        if key != self._role_key or self._roles_at is None or now - self._roles_at >= ROLES_EVERY:
            self._role_key = key
            self._roles_at = now
            mapping, notes = map_roles(paths, self.mapper) if paths else ({}, [])
            self._roles = {device: frozenset(roles) for device, roles in mapping.items()}
            self._role_notes = notes
        return tuple(servers)

    # --- queue settings -----------------------------------------------------------------------
    def _update_queues(self, now: float, devices: Mapping[str, DiskCounters]) -> None:
        """sysfs queue settings of every device: read for a new device, and all again every
        QUEUES_EVERY s (a DBA may change a scheduler while proxytop runs). Reads only."""
        stale = self._queues_at is None or now - self._queues_at >= QUEUES_EVERY
        if stale:
            self._queues_at = now
        for name in devices:
            if stale or name not in self._queues:
                settings = self.mapper.queue_settings(name)
                if settings is not None:
                    self._queues[name] = settings
        for gone in set(self._queues) - set(devices):
            del self._queues[gone]

    # --- the reading --------------------------------------------------------------------------
    def collect(self, handle: Any = None) -> DiskSnapshot:
        now = self.clock()
        devices = self.read_devices()
        cpu = self.read_cpu()
        self._describe_new(devices)
        if not self._state_loaded:
            self._load_state()
        if self._previous is not None and self._previous_at is not None:
            seconds = now - self._previous_at
            for name, current in devices.items():
                self.learner.observe(name, device_stats(self._previous.get(name), current, seconds))
        self._previous, self._previous_at = devices, now
        if self._started_at is None:
            self._started_at = now
        baselines = self.learner.baselines(devices)
        self._maybe_save(now, baselines)
        servers = self._update_roles(now)
        self._update_queues(now, devices)
        return DiskSnapshot(
            devices=devices,
            kinds=dict(self._kinds),
            cpu=cpu,
            baselines=baselines,
            roles=dict(self._roles),
            role_servers=servers,
            beneath=dict(self._beneath),
            dm_names=dict(self._dm_names),
            notes=tuple(self._state_notes + self._role_notes),
            state_file=self.state_path,
            queues=dict(self._queues),
        )
