"""Recordings: every snapshot the engine takes, appended to a compressed file for replay.

The file is gzip (deflate, flushed after every record) holding one record per line. A line is
a small JSON envelope, and for snapshots a tab and the snapshot's data as JSON::

    {"k":"h","format":"proxytop-recording","version":2,...}         header (one per run)
    {"k":"src","t":...,"name":"proxysql"}<TAB>{...}                 a source and its session
    {"k":"col","name":...,"source":...,"history":2,...}             a collector's settings
    {"k":"st","name":...,"t":...}<TAB>{...}                         a source's state changed
    {"k":"s","c":"proxysql.global","t":...,"w":...,"d":...}<TAB>{...}  a snapshot
    {"k":"err","c":...,"t":...,"m":"..."}                           a collector's error
    {"k":"mark","t":...,"m":"..."}                                  a marked moment (a trigger fired)

A header may name its ``run``: the files a recorder writes one after the other (one per hour,
proxytop.recordings.daemon) share the run of the process that wrote them, so a replay of the
directory reads them as one run on one clock.

Times ``t`` are the recording process's monotonic clock; the header gives the wall-clock time
that matched, so a reader can place every record in real time. Because each record is flushed
through the compressor at once, a recording cut short (a crash, a full disk, ``kill -9``) still
reads up to its last complete record. Recording again into an existing file appends a new run
(a new gzip member; a file left unfinished is repaired first).

Snapshot data are plain values, tuples, dicts, sets and the dataclasses of :data:`TYPES`,
written as ``{"__dc": NAME, "f": {field: value}}`` under the stable name TYPES gives them (never
a module path: code moves, recordings stay readable) and rebuilt only from that list; nothing is
ever imported by name or unpickled. A recording of another format version is refused with a
line naming the proxytop that made it. Passwords are never written: the value under a dict key,
dataclass field or table column named like a secret ("password", "passwd", "credentials",
"secret" — but not counters such as Access_Denied_Wrong_Password) is blanked, as is the
value of a (name, value) pair named like one, and quoted literals after ``IDENTIFIED BY`` or
``PASSWORD`` in statement texts.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import logging
import math
import os
import re
import threading
import time
import zlib
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from proxytop import __version__
from proxytop.core import Snapshot, Table, is_secret_name
from proxytop.collectors.diskstats import DiskSnapshot
from proxytop.collectors.filesystems import FilesystemUsage, Holding, SpaceSnapshot
from proxytop.collectors.mysql_space import LargestTable, ServerSpaceReading
from proxytop.collectors.galera import GaleraReading
from proxytop.collectors.mysql_server import Channel, ServerReading
from proxytop.collectors.mysql_locks import AlarmReading, DeadlockReading, LocksReading, MetadataLocksReading
from proxytop.collectors.mysql_sessions import SessionsReading
from proxytop.collectors.mysql_statements import StatementsReading
from proxytop.collectors.replication import ChannelStatus, ReplicationReading
from proxytop.collectors.innodb import DiscoveredServer, Discovery, MySQLSession
from proxytop.collectors.monitor import MonitorReadings, ServerMonitor
from proxytop.metrics.digests import Reading as DigestReading
from proxytop.metrics.events import VariablesReading
from proxytop.metrics.innodb import EngineReading, Flavour, Metric, StatusText
from proxytop.metrics.iostat import Baseline, DiskCounters
from proxytop.metrics.proxysql_history import HistoryReading
from proxytop.metrics.lock_chains import LongestWait
from proxytop.polling.connection import AdminSession, Endpoint
from proxytop.polling.devices import QueueSettings
from proxytop.polling.engine import SourceState
from proxytop.config.tls import TLSSettings

log = logging.getLogger(__name__)

FORMAT = "proxytop-recording"
VERSION = 2  # 2: types named by TYPES (1 named them by module path)
SCRUBBED = ""
_GZIP = 31  # zlib wbits for the gzip container
_MAGIC = b"\x1f\x8b"

_NAME_LIKE = re.compile(r"^[\w.:-]+$")
_MAY_HOLD_SECRET = re.compile(r"password|identified", re.IGNORECASE)
_QUOTED = r"""('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")"""
_SECRET_LITERALS = (
    re.compile(r"(identified\s+(?:with\s+\S+\s+)?(?:by|as)\s+(?:password\s*)?)" + _QUOTED, re.IGNORECASE),
    re.compile(r"(password\s*(?:\(\s*|=\s*(?:password\s*\(\s*)?|for\s+\S+\s*=\s*(?:password\s*\(\s*)?))"
               + _QUOTED, re.IGNORECASE),
)


class RecordingError(Exception):
    """A recording that can't be written or read; the message is one plain line."""


# ----- scrubbing ------------------------------------------------------------------------------

def scrub_text(text: str) -> str:
    """Blank the quoted secrets of a statement text.

    >>> scrub_text("ALTER USER 'app'@'%' IDENTIFIED BY 's3cret'")
    "ALTER USER 'app'@'%' IDENTIFIED BY '***'"
    >>> scrub_text("SET PASSWORD FOR bob = PASSWORD('x'), y = 1")
    "SET PASSWORD FOR bob = PASSWORD('***'), y = 1"
    >>> scrub_text("CHANGE MASTER TO MASTER_PASSWORD = \\"repl\\"")
    "CHANGE MASTER TO MASTER_PASSWORD = '***'"
    >>> scrub_text("select 1")
    'select 1'
    """
    if not _MAY_HOLD_SECRET.search(text):
        return text
    for pattern in _SECRET_LITERALS:
        text = pattern.sub(lambda m: m.group(1) + "'***'", text)
    return text


def _blank(value: Any) -> Any:
    return SCRUBBED if isinstance(value, (str, bytes)) else None


def _scrub_pair(items: List[Any]) -> List[Any]:
    """A (name, value) pair named like a password keeps its name only."""
    if len(items) == 2 and isinstance(items[0], str) and _NAME_LIKE.match(items[0]) and is_secret_name(items[0]):
        return [items[0], _blank(items[1])]
    return items


# ----- the codec ------------------------------------------------------------------------------

# Every type of value a recording may hold, by the name the file gives it: the names are the
# format, so a class may move or be renamed as long as its name here stays. A type missing here
# is refused when recorded (tests/test_recording.py records every screen's collectors and fails
# on it). Renaming an entry, or changing what a field means, is a new VERSION.
TYPES: Dict[str, type] = {
    "Table": Table,
    "VariablesReading": VariablesReading,
    "SourceState": SourceState,
    "Endpoint": Endpoint,
    "TLSSettings": TLSSettings,
    "AdminSession": AdminSession,
    "MySQLSession": MySQLSession,
    "MySQLFlavour": Flavour,
    "Discovery": Discovery,
    "DiscoveredServer": DiscoveredServer,
    "MonitorReadings": MonitorReadings,
    "ServerMonitor": ServerMonitor,
    "InnoDBReading": EngineReading,
    "InnoDBStatusText": StatusText,
    "InnoDBMetric": Metric,
    "DiskSnapshot": DiskSnapshot,
    "DiskCounters": DiskCounters,
    "DiskBaseline": Baseline,
    "DigestReading": DigestReading,
    "MySQLServerReading": ServerReading,
    "MySQLChannel": Channel,
    "MySQLSessionsReading": SessionsReading,
    "MySQLStatementsReading": StatementsReading,
    "MySQLLocksReading": LocksReading,
    "MySQLLockAlarmReading": AlarmReading,
    "MySQLLongestLockWait": LongestWait,
    "MySQLDeadlockReading": DeadlockReading,
    "MySQLMetadataLocksReading": MetadataLocksReading,
    "GaleraReading": GaleraReading,
    "MySQLReplicationReading": ReplicationReading,
    "MySQLChannelStatus": ChannelStatus,
    "DiskQueueSettings": QueueSettings,
    "SpaceSnapshot": SpaceSnapshot,
    "SpaceFilesystem": FilesystemUsage,
    "SpaceHolding": Holding,
    "MySQLSpaceReading": ServerSpaceReading,
    "MySQLLargestTable": LargestTable,
    "ProxySQLHistoryReading": HistoryReading,
}
_NAMES = {cls: name for name, cls in TYPES.items()}


def encode(value: Any, lenient: bool = False) -> Any:
    """Plain JSON-able structure for a snapshot value, passwords blanked.

    With ``lenient``, values that can't be recorded (a live connection, a lock) become None
    instead of failing.

    >>> encode({"a": (1, 2.5, None), "password": "x"})
    {'a': {'__t': [1, 2.5, None]}, 'password': ''}
    """
    try:
        return _encode(value, lenient)
    except RecursionError:
        raise RecordingError("a value nested too deeply to record") from None


def _encode(value: Any, lenient: bool) -> Any:
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"__f": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, Table):  # a ColumnsTable too: recorded as the plain Table it equals
        secret = {i for i, c in enumerate(value.columns) if is_secret_name(c)}
        rows = tuple(tuple(_blank(v) if i in secret else v for i, v in enumerate(row)) for row in value.rows)
        return {"__dc": "Table", "f": _encode({"columns": value.columns, "rows": rows}, lenient)}
    if type(value) in _NAMES:  # its fields as a dict's items: those named like a secret blanked
        fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
        return {"__dc": _NAMES[type(value)], "f": _encode(fields, lenient)}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: (_blank(v) if is_secret_name(k) else _encode(v, lenient)) for k, v in value.items()}
        return {"__m": [[_encode(k, lenient), _blank(v) if is_secret_name(k) else _encode(v, lenient)]
                        for k, v in value.items()]}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):  # a named tuple would come back plain
        return {"__t": [_encode(v, lenient) for v in _scrub_pair(list(value))]}
    if isinstance(value, list):
        return [_encode(v, lenient) for v in _scrub_pair(value)]
    if isinstance(value, (frozenset, set)):
        items = sorted((_encode(v, lenient) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
        return {"__fs" if isinstance(value, frozenset) else "__s": items}
    if isinstance(value, (bytes, bytearray)):
        return {"__b": base64.b64encode(bytes(value)).decode("ascii")}
    if lenient:
        return None
    raise RecordingError(f"a value of type {type(value).__name__} can't be recorded (not among recording.TYPES)")


def decode(value: Any) -> Any:
    """The inverse of :func:`encode`.

    >>> decode(encode({"t": (1, frozenset({"a"})), 2: b"x"}))
    {'t': (1, frozenset({'a'})), 2: b'x'}
    """
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__t" in value:
        return tuple(decode(v) for v in value["__t"])
    if "__dc" in value:
        return _decode_dataclass(value["__dc"], decode(value.get("f") or {}))
    if "__m" in value:
        return {_hashable(decode(k)): decode(v) for k, v in value["__m"]}
    if "__fs" in value:
        return frozenset(_hashable(decode(v)) for v in value["__fs"])
    if "__s" in value:
        return set(_hashable(decode(v)) for v in value["__s"])
    if "__b" in value:
        return base64.b64decode(value["__b"])
    if "__f" in value:
        return float(value["__f"])
    return {k: decode(v) for k, v in value.items()}


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _decode_dataclass(name: Any, fields: Dict[str, Any]) -> Any:
    """Only the types of :data:`TYPES` are rebuilt (nothing is imported by name). A field the
    type no longer has is dropped; one it has gained since takes its default."""
    cls = TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise RecordingError(f"this proxytop knows no recorded type named {name!r}")
    known = {field.name for field in dataclasses.fields(cls) if field.init}
    try:
        return cls(**{key: item for key, item in fields.items() if key in known})
    except (TypeError, AttributeError) as exc:  # a required field missing, or no fields at all
        raise RecordingError(f"a recorded {name} does not fit this proxytop's ({exc})") from None


def dumps(value: Any, lenient: bool = False) -> str:
    return json.dumps(encode(value, lenient), separators=(",", ":"), allow_nan=False)


def loads(text: str) -> Any:
    """``decode(json.loads(text))``, done as the JSON parser builds each object (some four times
    faster: a replay's jump folds every pool reading it passes).

    >>> sample = {"t": (1, frozenset({"a"})), 2: b"x", "f": float("inf"), "s": [{"__t": 1}]}
    >>> loads(dumps(sample)) == decode(json.loads(dumps(sample))) == sample
    True
    """
    return json.loads(text, object_hook=_revive)


def _revive(value: Dict[str, Any]) -> Any:
    """:func:`decode` of one JSON object whose members are decoded already."""
    if "__t" in value:
        return tuple(value["__t"])
    if "__dc" in value:
        return _decode_dataclass(value["__dc"], value.get("f") or {})
    if "__m" in value:
        return {_hashable(k): v for k, v in value["__m"]}
    if "__fs" in value:
        return frozenset(_hashable(v) for v in value["__fs"])
    if "__s" in value:
        return set(_hashable(v) for v in value["__s"])
    if "__b" in value:
        return base64.b64decode(value["__b"])
    if "__f" in value:
        return float(value["__f"])
    return value


# ----- what gets recorded ---------------------------------------------------------------------

# Options that say how to show or where to write, not what was watched: not replayed.
NOT_RECORDED_OPTIONS = frozenset({
    "record", "replay", "demo", "batch", "count", "format", "sort", "filter", "speed", "loop",
    "daemon", "record_dir", "retention", "retention_size", "on", "screens",
    "log_file", "screen", "no_color", "delay", "defaults_file", "mysql_defaults_file",
    # how to connect: files of this machine that a replay neither needs nor may find
    "config", "print_defaults", "target", "login_path", "mysql_login_path", "ssl_mode", "ssl_ca", "ssl_cert",
    "ssl_key", "mysql_ssl_mode", "mysql_ssl_ca", "mysql_ssl_cert", "mysql_ssl_key",
})


def recorded_options(args: Any) -> Dict[str, Any]:
    """The command-line options worth replaying (which servers were watched, ...), as plain
    values; never a password.

    >>> import argparse
    >>> recorded_options(argparse.Namespace(mysql=[("db", 3306)], mysql_password="x", record="f", port=6032))
    {'mysql': [['db', 3306]], 'port': 6032}
    """
    options: Dict[str, Any] = {}
    for key, value in sorted(vars(args).items() if args is not None else ()):
        if key in NOT_RECORDED_OPTIONS or is_secret_name(key) or key.startswith("_"):
            continue
        plain = _plain(value)
        if plain is not _NOT_PLAIN:
            options[key] = plain
    return options


_NOT_PLAIN = object()


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return _NOT_PLAIN if any(i is _NOT_PLAIN for i in items) else items
    return _NOT_PLAIN


def source_info(source: Any) -> Dict[str, Any]:
    """What a replay needs to know of a source: its public attributes (endpoint without the
    password, the session's version and tables), live connections left out."""
    info: Dict[str, Any] = {}
    for key, value in sorted(vars(source).items()):
        if key.startswith("_") or callable(value) or is_secret_name(key):
            continue
        info[key] = value
    return info


# ----- writing --------------------------------------------------------------------------------

def _line(envelope: Dict[str, Any], *data: Any, lenient: bool = False) -> bytes:
    """The envelope, and a tab and the data when there are data."""
    texts = [json.dumps(envelope, separators=(",", ":"), allow_nan=False)] + [dumps(d, lenient) for d in data]
    return ("\t".join(texts) + "\n").encode("utf-8")


class RecordingWriter:
    """Appends records to a recording; thread-safe (engine workers call it concurrently)."""

    def __init__(self, path: str, options: Optional[Dict[str, Any]] = None, target: str = "",
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 run: Optional[str] = None):
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self.snapshots = 0
        self.skipped = 0
        prepare_for_append(path)
        try:
            self._file = open(path, "ab")
        except OSError as exc:
            raise RecordingError(f"cannot write the recording {path}: {exc.strerror or exc}") from None
        self._compressor = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
        self._closed = False
        self._write(_line({"k": "h", "format": FORMAT, "version": VERSION, "proxytop": __version__,
                           "wall": wall(), "mono": clock(), "target": target,
                           "options": options or {}, **({"run": run} if run else {})}))

    def _write(self, line: bytes) -> None:
        with self._lock:
            if self._closed:
                return
            chunk = self._compressor.compress(line) + self._compressor.flush(zlib.Z_SYNC_FLUSH)
            self._file.write(chunk)
            self._file.flush()

    def snapshot(self, snapshot: Snapshot) -> bool:
        envelope = {"k": "s", "c": snapshot.collector, "t": snapshot.taken_at, "w": snapshot.wall_time,
                    "d": snapshot.duration}
        if snapshot.error is not None:
            envelope["e"] = snapshot.error
        try:
            line = _line(envelope, snapshot.data)
        except (RecordingError, TypeError, ValueError) as exc:
            self.skipped += 1
            log.warning("%s: snapshot not recorded (%s)", snapshot.collector, exc)
            return False
        self._write(line)
        self.snapshots += 1
        return True

    def source(self, name: str, source: Any, at: float) -> None:
        self._write(_line({"k": "src", "name": name, "t": at}, source_info(source), lenient=True))

    def collector(self, collector: Any) -> None:
        self._write(_line({"k": "col", "name": collector.name, "source": collector.source,
                           "history": collector.history, "default": collector.default_interval,
                           "min": collector.min_interval, "own_pace": bool(collector.own_pace)}))

    def state(self, state: Any) -> None:
        self._write(_line({"k": "st", "name": state.name, "t": self._clock()}, state, lenient=True))

    def error(self, collector: str, message: str, at: float) -> None:
        self._write(_line({"k": "err", "c": collector, "t": at, "m": message}))

    def mark(self, text: str, at: float) -> None:
        """A moment worth finding again (a trigger that fired), with what happened."""
        self._write(_line({"k": "mark", "t": at, "m": text}))

    def abandon(self) -> None:
        """Close the file without finishing the run, after a write failed (a full disk): it
        reads up to its last complete record, and nothing more is tried on it."""
        with self._lock:
            self._closed = True
            try:
                self._file.close()
            except OSError:
                pass  # the failed write was logged; its bytes can't be saved

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._file.write(self._compressor.flush(zlib.Z_FINISH))
                self._file.close()
            except OSError as exc:
                log.warning("closing the recording %s: %s", self.path, exc)


class Recorder:
    """Connects an engine to a :class:`RecordingWriter`: every snapshot, source state and
    collector error goes into the recording as it happens (on the engine's threads)."""

    def __init__(self, engine, writer: RecordingWriter):
        self.engine = engine
        self.writer = writer
        self._lock = threading.Lock()
        self._collectors_seen: set = set()
        self._sessions_seen: Dict[str, Any] = {}

    def attach(self) -> "Recorder":
        for state in self.engine.states():
            self._source(state.name)
        self.engine.add_observer(self.observe)
        return self

    def _source(self, name: str) -> None:
        source = self.engine.source(name)
        if source is None:
            return
        session = getattr(source, "session", None)
        with self._lock:
            if name in self._sessions_seen and self._sessions_seen[name] is session:
                return
            self._sessions_seen[name] = session
        self.writer.source(name, source, self.engine.now())

    def observe(self, kind: str, value: Any) -> None:
        if kind == "snapshot":
            name = value.collector
            with self._lock:
                new = name not in self._collectors_seen
                self._collectors_seen.add(name)
            collector = self.engine.collector(name)
            if new and collector is not None:
                self.writer.collector(collector)
            self.writer.snapshot(value)
        elif kind == "state":
            self._source(value.name)
            self.writer.state(value)
        elif kind == "error":
            name, message, at = value
            self.writer.error(name, message, at)

    def close(self) -> None:
        self.engine.remove_observer(self.observe)
        self.writer.close()


# ----- reading --------------------------------------------------------------------------------

Record = Tuple[Dict[str, Any], Optional[str]]  # (envelope, the data's JSON text or None)


class Scan:
    """The records of a recording file, and whether it ended cleanly."""

    def __init__(self) -> None:
        self.records: List[Record] = []
        self.complete = True  # every gzip member finished (False after a crash)


def iter_lines(path: str, scan: Optional[Scan] = None, chunk_size: int = 1 << 16) -> Iterator[bytes]:
    """Complete lines of every gzip member, stopping quietly where the file was cut short."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise RecordingError(f"cannot read the recording {path}: {exc.strerror or exc}") from None
    with handle:
        head = handle.read(2)
        if head and head != _MAGIC:
            raise RecordingError(f"{path} is not a proxytop recording")
        handle.seek(0)
        decompressor = zlib.decompressobj(_GZIP)
        pending = b""
        finished_member = True
        while True:
            chunk = handle.read(chunk_size)
            if not chunk:
                break
            while chunk:
                finished_member = False
                try:
                    out = decompressor.decompress(chunk)
                except zlib.error:
                    if scan is not None:
                        scan.complete = False
                    log.warning("%s: damaged near byte %d; reading stops there", path, handle.tell())
                    for line in pending.split(b"\n")[:-1]:
                        yield line
                    return
                pending += out
                if b"\n" in pending:
                    lines = pending.split(b"\n")
                    pending = lines[-1]
                    for line in lines[:-1]:
                        yield line
                if decompressor.eof:
                    finished_member = True
                    chunk = decompressor.unused_data
                    decompressor = zlib.decompressobj(_GZIP)
                    pending = b""  # a member always ends with a newline; anything else is noise
                else:
                    chunk = b""
        if not finished_member and scan is not None:
            scan.complete = False
        # ``pending`` is a line cut short by a crash: dropped.


def scan(path: str) -> Scan:
    """Read every complete record; a truncated last record is dropped, a damaged one skipped."""
    result = Scan()
    first = True
    for raw in iter_lines(path, result):
        text = raw.decode("utf-8", "replace")
        head, sep, data = text.partition("\t")
        try:
            envelope = json.loads(head)
        except ValueError:
            continue  # a damaged line
        if not isinstance(envelope, dict) or "k" not in envelope:
            continue
        if first:
            if envelope.get("k") != "h" or envelope.get("format") != FORMAT:
                raise RecordingError(f"{path} is not a proxytop recording")
            first = False
        if envelope.get("k") == "h" and envelope.get("version") != VERSION:
            raise RecordingError(unreadable_version(path, envelope))
        result.records.append((envelope, data if sep else None))
    if first:
        raise RecordingError(f"{path} is empty: nothing was recorded")
    return result


def unreadable_version(path: str, header: Dict[str, Any]) -> str:
    """Why a recording of another format can't be replayed, in one line.

    >>> unreadable_version("old.rec.gz", {"version": 1, "proxytop": "0.1.0"})
    'old.rec.gz was recorded by proxytop 0.1.0 (format 1); this proxytop reads format 2: record it again'
    """
    version = header.get("version")
    newer = isinstance(version, int) and version > VERSION
    return (f"{path} was recorded by proxytop {header.get('proxytop', '(unknown version)')} (format {version}); "
            f"this proxytop reads format {VERSION}: " + ("replay it with a newer proxytop" if newer
                                                         else "record it again"))


def prepare_for_append(path: str) -> None:
    """Make ``path`` ready to take a new run: absent, empty, or a recording whose runs all
    ended cleanly. A recording cut short by a crash is rewritten with what it holds (its
    unfinished gzip member would swallow anything appended after it)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return
    if size == 0:
        return
    found = scan(path)  # raises RecordingError for a file that is not a recording
    if found.complete:
        return
    temporary = f"{path}.repair"
    compressor = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
    with open(temporary, "wb") as out:
        for envelope, data in found.records:
            text = json.dumps(envelope, separators=(",", ":"))
            if data is not None:
                text += "\t" + data
            out.write(compressor.compress((text + "\n").encode("utf-8")))
        out.write(compressor.flush(zlib.Z_FINISH))
    os.replace(temporary, path)
    log.info("%s: finished the run cut short (%d records kept)", path, len(found.records))
