"""The filesystems the local MySQL servers write to, for the IOstat screen's space view and the
header's space alarm: size, used, free, inodes, and the first reading of the last hour so that
growth can be worked out (proxytop.metrics.space).

Each path a server writes to (datadir, redo, binlog, relay log, tmpdir, innodb_tmpdir, undo:
proxytop.polling.devices.space_role_paths) is found in /proc/self/mountinfo by its device
number (the longest mount point above it when several share it, bind mounts), then read with
psutil.disk_usage and os.statvfs (inodes). Reading only: statvfs and mountinfo, nothing else.
Every path and function is injectable, so tests run on a tmpfs they mount and a fake clock.
"""
from __future__ import annotations

import logging
import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Tuple

import psutil

from proxytop.core import Collector
from proxytop.metrics.space import WINDOW, Sample
from proxytop.polling.devices import DeviceMapper, parse_mountinfo

log = logging.getLogger(__name__)

NAME = "host.space"
MAP_EVERY = 60.0  # seconds: paths are found on their mounts again this often (volumes come and go)
SAMPLE_EVERY = 10.0  # seconds between two kept readings of a filesystem's used bytes


@dataclass(frozen=True)
class Holding:
    """One directory a server writes to, on a filesystem."""

    server: str
    role: str  # data, redo, binlog, relay, tmp, undo
    path: str


@dataclass(frozen=True)
class FilesystemUsage:
    """One filesystem a watched local server writes to, now; and its first kept reading."""

    mount: str
    fstype: str
    source: str  # what mountinfo says is mounted (/dev/vda1, tmpfs)
    device: Optional[str]  # the block device, as IOstat names it (None: no block device)
    total: int
    used: int
    free: int  # available to the server (not root's reserved blocks)
    inodes_total: Optional[int]
    inodes_free: Optional[int]
    holds: Tuple[Holding, ...]
    at: float  # monotonic time of this reading
    first_at: float  # the first reading kept (at most WINDOW seconds old)
    first_used: int

    @property
    def roles(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(h.role for h in self.holds))


@dataclass(frozen=True)
class SpaceSnapshot:
    filesystems: Tuple[FilesystemUsage, ...] = ()
    servers: Tuple[str, ...] = ()  # the local servers the paths come from
    notes: Tuple[str, ...] = ()  # paths that could not be read (one line each)


# server -> role -> directories
SpacePaths = Mapping[str, Mapping[str, Sequence[str]]]
SpacePathsProvider = Callable[[], SpacePaths]


def no_space_paths() -> Dict[str, Dict[str, List[str]]]:
    return {}


def mount_of(entries: Sequence[Tuple[str, str, str, str]], path: str,
             number: str) -> Optional[Tuple[str, str, str, str]]:
    """The mountinfo entry holding ``path`` (device number ``major:minor``): the longest mount
    point above the path with that number, else the longest mount point above it.

    >>> entries = [("254:1", "/", "ext4", "/dev/vda1"), ("0:50", "/srv/db", "tmpfs", "tmpfs"),
    ...            ("254:1", "/srv/db/bind", "ext4", "/dev/vda1")]
    >>> mount_of(entries, "/srv/db/data", "0:50")[1], mount_of(entries, "/srv/db/bind/x", "254:1")[1]
    ('/srv/db', '/srv/db/bind')
    >>> mount_of(entries, "/home/x", "9:9")[1]
    '/'
    """
    absolute = os.path.abspath(path)

    def above(entry: Tuple[str, str, str, str]) -> bool:
        point = entry[1]
        return absolute == point or absolute.startswith(point.rstrip("/") + "/")

    same = sorted((e for e in entries if e[0] == number and above(e)), key=lambda e: len(e[1]))
    if same:
        return same[-1]
    anywhere = sorted((e for e in entries if above(e)), key=lambda e: len(e[1]))
    return anywhere[-1] if anywhere else None


class Filesystems(Collector):
    """``host.space``: a :class:`SpaceSnapshot` of the filesystems local servers write to."""

    name = NAME
    source = "host"
    default_interval = 5.0
    min_interval = 1.0
    own_pace = True
    history = 2

    def __init__(self, paths: SpacePathsProvider = no_space_paths, mountinfo: str = "/proc/self/mountinfo",
                 mapper: Optional[DeviceMapper] = None,
                 disk_usage: Callable[[str], Any] = psutil.disk_usage,
                 statvfs: Callable[[str], Any] = os.statvfs,
                 stat: Callable[[str], os.stat_result] = os.stat,
                 clock: Callable[[], float] = time.monotonic):
        self.paths = paths
        self.mountinfo = mountinfo
        self.mapper = mapper or DeviceMapper(mountinfo=mountinfo)
        self.disk_usage = disk_usage
        self.statvfs = statvfs
        self.stat = stat
        self.clock = clock
        self._mounts: Dict[str, Tuple[Tuple[str, str, str, str], Optional[str], List[Holding]]] = {}
        self._map_notes: List[str] = []
        self._mapped_key: Any = None
        self._mapped_at: Optional[float] = None
        self._samples: Dict[str, Deque[Sample]] = {}

    # --- where each path is ------------------------------------------------------------------
    def _existing(self, path: str) -> Tuple[str, os.stat_result]:
        """The path or its nearest existing parent, with its stat."""
        current = os.path.abspath(path)
        while True:
            try:
                return current, self.stat(current)
            except FileNotFoundError:
                parent = os.path.dirname(current)
                if parent == current:
                    raise
                current = parent

    def _map(self, paths: SpacePaths) -> None:
        try:
            with open(self.mountinfo, encoding="utf-8", errors="replace") as handle:
                entries = parse_mountinfo(handle.read())
        except OSError as exc:
            self._mounts, self._map_notes = {}, [f"cannot read {self.mountinfo}: {exc.strerror}"]
            return
        mounts: Dict[str, Tuple[Tuple[str, str, str, str], Optional[str], List[Holding]]] = {}
        notes: List[str] = []
        for server in sorted(paths):
            for role, directories in paths[server].items():
                for path in directories:
                    try:
                        found, info = self._existing(path)
                    except OSError as exc:
                        notes.append(f"{role} {path}: {exc.strerror or exc.__class__.__name__}")
                        continue
                    number = f"{os.major(info.st_dev)}:{os.minor(info.st_dev)}"
                    entry = mount_of(entries, found, number)
                    if entry is None:
                        notes.append(f"{role} {path}: no mount found")
                        continue
                    if entry[1] not in mounts:
                        device, _why = self.mapper.locate(found)
                        mounts[entry[1]] = (entry, device, [])
                    holding = Holding(server, role, path)
                    if holding not in mounts[entry[1]][2]:
                        mounts[entry[1]][2].append(holding)
        self._mounts, self._map_notes = mounts, notes
        for gone in set(self._samples) - set(mounts):
            del self._samples[gone]

    def _keep(self, mount: str, now: float, used: int) -> Sample:
        """Keep this reading (one every SAMPLE_EVERY s, the last hour); the first one kept."""
        samples = self._samples.setdefault(mount, deque())
        if len(samples) >= 2 and now - samples[-2][0] < SAMPLE_EVERY:
            samples[-1] = (now, used)
        else:
            samples.append((now, used))
        while len(samples) > 2 and samples[1][0] <= now - WINDOW:
            samples.popleft()
        return samples[0]

    # --- the reading ---------------------------------------------------------------------------
    def collect(self, handle: Any = None) -> SpaceSnapshot:
        now = self.clock()
        try:
            paths = self.paths()
        except Exception as exc:  # a provider problem must not stop the readings
            log.info("space paths: %s", exc)
            paths = {}
        key = tuple(sorted((server, tuple(sorted((r, tuple(p)) for r, p in roles.items())))
                           for server, roles in paths.items()))
        if key != self._mapped_key or self._mapped_at is None or now - self._mapped_at >= MAP_EVERY:
            self._mapped_key, self._mapped_at = key, now
            self._map(paths)
        filesystems: List[FilesystemUsage] = []
        notes = list(self._map_notes)
        for mount, (entry, device, holds) in sorted(self._mounts.items()):
            try:
                usage = self.disk_usage(mount)
                vfs = self.statvfs(mount)
            except OSError as exc:
                notes.append(f"{mount}: {exc.strerror or exc.__class__.__name__}")
                continue
            first_at, first_used = self._keep(mount, now, int(usage.used))
            inodes = int(vfs.f_files) or None  # 0: the filesystem has no fixed inode count (btrfs)
            filesystems.append(FilesystemUsage(
                mount=mount, fstype=entry[2], source=entry[3], device=device, total=int(usage.total),
                used=int(usage.used), free=int(usage.free), inodes_total=inodes,
                inodes_free=int(vfs.f_favail) if inodes else None, holds=tuple(holds),
                at=now, first_at=first_at, first_used=first_used))
        return SpaceSnapshot(filesystems=tuple(filesystems), servers=tuple(sorted(paths)), notes=tuple(notes))
