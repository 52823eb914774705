"""The files of a recording directory (``--daemon --record-dir DIR``): one file per hour,
named by the UTC time it was started, and which of them retention removes.

Everything here is a pure function of names, sizes and a time passed in, so the tests drive
rotation and retention with a fake clock; :mod:`proxytop.recordings.daemon` does the I/O.
"""
from __future__ import annotations

import calendar
import os
import re
import time
from typing import List, NamedTuple, Optional, Sequence

from proxytop.metrics import quantities

PREFIX = "proxytop-"
SUFFIX = ".rec.gz"
HOUR = 3600.0
_NAME = re.compile(r"^proxytop-(\d{8})-(\d{6})\.rec\.gz$")


class RecordingFile(NamedTuple):
    name: str
    started: float  # wall-clock time in its name
    size: int  # bytes


def file_name(wall: float) -> str:
    """The name of a file started at ``wall`` (UTC, so a clock change never reorders files).

    >>> file_name(0.0), file_name(1795784400.5)
    ('proxytop-19700101-000000.rec.gz', 'proxytop-20261127-130000.rec.gz')
    """
    return PREFIX + time.strftime("%Y%m%d-%H%M%S", time.gmtime(int(wall))) + SUFFIX


def started_at(name: str) -> Optional[float]:
    """The start time in a file's name; None for a file that is not one of ours.

    >>> started_at("proxytop-19700101-010000.rec.gz"), started_at("notes.txt")
    (3600.0, None)
    """
    match = _NAME.match(name)
    if not match:
        return None
    try:
        return float(calendar.timegm(time.strptime(match.group(1) + match.group(2), "%Y%m%d%H%M%S")))
    except ValueError:
        return None


def hour_end(wall: float) -> float:
    """When the file started at ``wall`` ends: the next full hour (UTC).

    >>> hour_end(0.0), hour_end(3599.9), hour_end(3600.0)
    (3600.0, 3600.0, 7200.0)
    """
    return (int(wall // HOUR) + 1) * HOUR


def recording_files(names: Sequence[str], size_of) -> List[RecordingFile]:
    """Our files among ``names``, oldest first (``size_of(name)``: its size, None when gone)."""
    found = []
    for name in names:
        started = started_at(name)
        size = size_of(name) if started is not None else None
        if started is not None and size is not None:
            found.append(RecordingFile(name, started, size))
    return sorted(found, key=lambda f: (f.started, f.name))


def list_directory(directory: str) -> List[RecordingFile]:
    """The recording files of ``directory``, oldest first."""
    def size_of(name: str) -> Optional[int]:
        try:
            return os.path.getsize(os.path.join(directory, name))
        except OSError:
            return None
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return recording_files(names, size_of)


def to_remove(files: Sequence[RecordingFile], now: float, max_age: Optional[float],
              max_bytes: Optional[int], current: Optional[str] = None) -> List[str]:
    """The files retention removes, oldest first: those whose hour ended more than ``max_age``
    seconds ago (a file ends where the next one starts), then the oldest until the rest fit in
    ``max_bytes``. The file being written is never removed.

    >>> files = [RecordingFile("a", 0.0, 50), RecordingFile("b", 3600.0, 50), RecordingFile("c", 7200.0, 10)]
    >>> to_remove(files, now=7300.0, max_age=3600.0, max_bytes=None, current="c")
    ['a']
    >>> to_remove(files, now=7300.0, max_age=None, max_bytes=60, current="c")
    ['a']
    >>> to_remove(files, now=7300.0, max_age=None, max_bytes=5, current="c")
    ['a', 'b']
    """
    ordered = sorted(files, key=lambda f: (f.started, f.name))
    removed: List[str] = []
    if max_age is not None:
        for i, item in enumerate(ordered):
            ended = ordered[i + 1].started if i + 1 < len(ordered) else now
            if item.name != current and now - ended > max_age:
                removed.append(item.name)
    if max_bytes is not None:
        total = sum(f.size for f in ordered if f.name not in removed)
        for item in ordered:
            if total <= max_bytes:
                break
            if item.name != current and item.name not in removed:
                removed.append(item.name)
                total -= item.size
    return [f.name for f in ordered if f.name in removed]


def parse_age(text: str) -> float:
    """``--retention``: 48h, 2d, 90m, 3600s (a plain number is hours).

    >>> parse_age("48h"), parse_age("2d"), parse_age("90m"), parse_age("12")
    (172800.0, 172800.0, 5400.0, 43200.0)
    """
    seconds = _figure(text, "s", bare_unit="h")
    if seconds is None or seconds <= 0:
        raise ValueError(f"'{text}' is not a retention time (48h, 2d, 90m)")
    return seconds


def parse_size(text: str) -> int:
    """``--retention-size``: 2G, 500M, 64k (bytes without a unit).

    >>> parse_size("2G"), parse_size("500M"), parse_size("1.5k"), parse_size("100")
    (2147483648, 524288000, 1536, 100)
    """
    size = _figure(text, "B")
    if size is None or size <= 0:
        raise ValueError(f"'{text}' is not a size (2G, 500M, 64k)")
    return int(size)


def _figure(text: str, unit: str, bare_unit: str = "") -> Optional[float]:
    """``text`` read in ``unit`` as a filter reads a figure (proxytop.metrics.quantities), or None."""
    try:
        return quantities.read(text, unit, bare_unit)[0]
    except quantities.UnitError:
        return None
