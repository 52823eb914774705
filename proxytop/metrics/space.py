"""Space before it runs out: growth, "full in", the alarm, room for a rebuild, and what is
unusual in a disk's queue settings. Pure functions of readings (no I/O), worked as doctests.

Growth is measured, never guessed: over the readings proxytop has kept (see
collectors/filesystems.py, at most the last hour), from the first kept reading to the last,
and only once they span at least ``MIN_SPAN`` seconds; before that it is unknown ("—").
"""
from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, Tuple

from proxytop.metrics import units

MIN_SPAN = 60.0  # seconds of readings before a growth is given
WINDOW = 3600.0  # seconds of readings kept for it (the last hour of watching)
DEFAULT_USED_ALARM = 90.0  # % used
DEFAULT_FULL_ALARM = 60.0  # minutes: "full in" under this
LARGE_READ_AHEAD_KB = 512  # read-ahead above this on a datadir's device is worth a look

Sample = Tuple[float, int]  # (monotonic seconds, bytes)


def growth_per_hour(samples: Sequence[Sample], min_span: float = MIN_SPAN) -> Optional[float]:
    """Bytes per hour from the first sample to the last; None until they span ``min_span``.

    >>> growth_per_hour([(0.0, 1000), (30.0, 4000), (60.0, 7000)])
    360000.0
    >>> growth_per_hour([(0.0, 1000), (30.0, 4000)]) is None
    True
    >>> growth_per_hour([(0.0, 5000), (180.0, 1000)])  # shrinking: a purge, a DROP
    -80000.0
    """
    if len(samples) < 2:
        return None
    (first_at, first), (last_at, last) = samples[0], samples[-1]
    span = last_at - first_at
    if span < min_span or span <= 0:
        return None
    return (last - first) / span * 3600.0


def full_in(free: Optional[int], growth: Optional[float]) -> Optional[float]:
    """Seconds until ``free`` bytes are gone at ``growth`` bytes per hour; None when the
    filesystem is not growing (or nothing is known).

    >>> full_in(3600, 7200), full_in(1000, 0.0), full_in(1000, -5.0), full_in(None, 1.0)
    (1800.0, None, None, None)
    >>> full_in(0, 10.0)
    0.0
    """
    if free is None or growth is None or growth <= 0:
        return None
    return max(0, free) / growth * 3600.0


def used_percent(used: Optional[int], free: Optional[int]) -> Optional[float]:
    """Used as df shows it: used / (used + free available to users), so the blocks reserved
    for root count as neither.

    >>> used_percent(90, 10), used_percent(0, 0), used_percent(None, 5)
    (90.0, None, None)
    """
    if used is None or free is None or used + free <= 0:
        return None
    return used / (used + free) * 100.0


def alarm_text(mount: str, used_pct: Optional[float], seconds_left: Optional[float], roles: Iterable[str],
               used_limit: float = DEFAULT_USED_ALARM, full_limit_min: float = DEFAULT_FULL_ALARM) -> Optional[str]:
    """The header's words for a filesystem a server writes to past a threshold, or None.

    >>> alarm_text("/var/lib/mysql", 93.2, 2400, ["binlog"])
    '/var/lib/mysql 93% used, full in 40m00s (binlog)'
    >>> alarm_text("/tmp", 50.0, 1800, ["tmp", "data"])
    '/tmp 50% used, full in 30m00s (tmp, data)'
    >>> alarm_text("/tmp", 91.0, None, ["tmp"])
    '/tmp 91% used (tmp)'
    >>> alarm_text("/", 32.0, 731, ["data"])  # a bare "/" would read as a slip of the keyboard
    'root filesystem / 32% used, full in 12m11s (data)'
    >>> alarm_text("/tmp", 50.0, 7200, ["tmp"]) is None
    True
    >>> alarm_text("/tmp", 95.0, 60, ["tmp"], used_limit=0, full_limit_min=0) is None  # both off
    True
    """
    high = used_limit > 0 and used_pct is not None and used_pct >= used_limit
    soon = full_limit_min > 0 and seconds_left is not None and seconds_left < full_limit_min * 60
    if not (high or soon):
        return None
    name = "root filesystem /" if mount == "/" else mount
    text = f"{name} {used_pct:.0f}% used" if used_pct is not None else name
    if seconds_left is not None and (soon or high):
        text += f", full in {units.age(seconds_left)}"
    held = ", ".join(dict.fromkeys(roles))
    return f"{text} ({held})" if held else text


def rebuild_verdict(table_bytes: Optional[int], free: Optional[int]) -> Optional[bool]:
    """Whether a copy of a table of ``table_bytes`` fits in ``free`` bytes (a rebuild writes
    the whole table anew beside the old one); None when either is unknown.

    >>> rebuild_verdict(10, 11), rebuild_verdict(10, 10), rebuild_verdict(11, 10), rebuild_verdict(None, 5)
    (True, True, False, None)
    """
    if table_bytes is None or free is None:
        return None
    return table_bytes <= free


def rebuild_words(table_bytes: Optional[int], free: Optional[int], where: str) -> Tuple[str, Optional[str]]:
    """(text, style) for one side of the rebuild check.

    >>> rebuild_words(2 * 1024 ** 3, 10 * 1024 ** 3, "datadir")
    ('fits in the datadir (10.0GiB free)', None)
    >>> rebuild_words(2 * 1024 ** 3, 1024 ** 3, "tmpdir")
    ('does NOT fit in the tmpdir (1.0GiB free)', 'danger')
    """
    verdict = rebuild_verdict(table_bytes, free)
    if verdict is None:
        return f"{where}: free space unknown", "dim"
    if verdict:
        return f"fits in the {where} ({units.size(free)} free)", None
    return f"does NOT fit in the {where} ({units.size(free)} free)", "danger"


def binlog_written(previous: Optional[Tuple[Tuple[str, int], ...]], files: Tuple[Tuple[str, int], ...]) -> int:
    """Bytes the binary log grew by between two SHOW BINARY LOGS answers: what each file grew,
    plus every new file whole. A purged file frees space but writes nothing, so it is not
    counted against the growth (the filesystem's own figures show the space it freed).

    >>> binlog_written((("b.1", 100), ("b.2", 50)), (("b.2", 80), ("b.3", 20)))
    50
    >>> binlog_written(None, (("b.1", 100),))
    0
    """
    if previous is None:
        return 0
    before = dict(previous)
    return sum(max(0, size - before.get(name, 0)) for name, size in files)


def queue_notes(settings: Any, roles: Iterable[str]) -> Tuple[str, ...]:
    """Plain-language facts to check where a disk's queue settings are unusual for a database
    disk. ``settings`` is a QueueSettings (proxytop.polling.devices); ``roles`` what a local
    server keeps on the device.

    >>> from types import SimpleNamespace as S
    >>> queue_notes(S(device="sda", rotational=True, scheduler="none", read_ahead_kb=128, write_cache=None), ["data"])
    ('sda is a rotational disk with no I/O scheduler (none): requests reach it unsorted; check that this is intended',)
    >>> queue_notes(S(device="vdb", rotational=False, scheduler="none", read_ahead_kb=4096, write_cache=None), ["data"])
    ("read-ahead is 4096 KiB on the datadir's device: large for the random reads of a database; check that this is intended",)
    >>> queue_notes(S(device="vdb", rotational=False, scheduler="none", read_ahead_kb=4096, write_cache=None), ["tmp"])
    ()
    """
    notes = []
    if getattr(settings, "rotational", None) and getattr(settings, "scheduler", None) == "none":
        notes.append(f"{settings.device} is a rotational disk with no I/O scheduler (none): requests reach it "
                     "unsorted; check that this is intended")
    read_ahead = getattr(settings, "read_ahead_kb", None)
    if read_ahead is not None and read_ahead > LARGE_READ_AHEAD_KB and "data" in set(roles):
        notes.append(f"read-ahead is {read_ahead} KiB on the datadir's device: large for the random reads of a "
                     "database; check that this is intended")
    return tuple(notes)
