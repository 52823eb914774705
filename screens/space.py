"""IOstat's space view (``f``): one row per filesystem a watched local MySQL server writes to,
what it holds, its size, use, growth and "full in"; below the table, what each server says of
its own space (binary logs, the largest table and whether a rebuild of it would fit). Pure
functions from snapshots to rows, notes, a detail view and the header's space alarm; the
IOstat screen (screens/iostat.py) wires them in. See docs/space.md.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from proxytop.collectors.filesystems import NAME as SPACE, FilesystemUsage, SpaceSnapshot
from proxytop.collectors.mysql_space import ServerSpaceReading
from proxytop.metrics import units
from proxytop.metrics.space import alarm_text, full_in, growth_per_hour, rebuild_words, used_percent
from proxytop.screens.table import Column, Row

SPACE_PREFIX = "mysql.space."
Segments = Tuple[Tuple[str, Optional[str]], ...]


def per_hour(value) -> str:
    """A growth in bytes per hour: '+1.2GiB', '-300.0MiB', '0B', '—'.

    >>> per_hour(1.5 * 1024 ** 3), per_hour(-2048), per_hour(0), per_hour(None)
    ('+1.5GiB', '-2.0KiB', '0B', '—')
    """
    if value is None:
        return units.MISSING
    return ("+" if value > 0 else "-" if value < 0 else "") + units.size(abs(value))


def left(seconds) -> str:
    """'full in' as a span: '40m00s'; '—' when the filesystem is not growing."""
    return units.age(seconds) if seconds is not None else units.MISSING


def _used_style(limit: float):
    def style(row: Mapping) -> Optional[str]:
        pct = row.get("used_pct")
        if pct is None:
            return None
        if limit and pct >= limit:
            return "danger"
        return "warning_bold" if pct >= 80 else None
    return style


def _full_style(limit_min: float):
    def style(row: Mapping) -> Optional[str]:
        seconds = row.get("full_in")
        if seconds is None:
            return None
        if limit_min and seconds < limit_min * 60:
            return "danger"
        return "warning_bold" if seconds < 24 * 3600 else None
    return style


def space_columns(used_limit: float, full_limit_min: float) -> Tuple[Column, ...]:
    return (
        Column("mount", "Filesystem", 24, "<", numeric=False, priority=0, flexible=True,
               help="the mount point of a filesystem a local MySQL server writes to"),
        Column("holds", "Holds", 31, "<", numeric=False, priority=1,
               help="what the servers keep there: data, redo, binlog, relay, tmp, undo"),
        Column("device", "Device", 10, "<", fmt=lambda v: v or "", numeric=False, priority=4,
               help="its block device, as the devices view names it"),
        Column("size", "Size", 8, unit="B", fmt=units.size, priority=2, help="the filesystem's size"),
        Column("used", "Used", 8, unit="B", fmt=units.size, priority=2, help="bytes in use"),
        Column("free", "Free", 8, unit="B", fmt=units.size, priority=0, help="bytes a server may still write (root's reserve left out)"),
        Column("used_pct", "Use%", 5, fmt=lambda v: units.percent_figure(v, 0), style=_used_style(used_limit),
               priority=0, help=f"used / (used + free), as df (alarm from {used_limit:g}%)"),
        Column("inodes_pct", "IUse%", 5, fmt=lambda v: units.percent_figure(v, 0), priority=3,
               help="inodes in use (— where the filesystem has no fixed count)"),
        Column("growth", "Growth/h", 9, unit="B/h", fmt=per_hour, priority=0,
               help="bytes per hour over what proxytop has watched (the last hour at most; — for the first minute)"),
        Column("binlog_growth", "Binlog/h", 9, unit="B/h", fmt=per_hour, priority=3,
               help="what the binary logs kept there grew per hour, from SHOW BINARY LOGS"),
        Column("full_in", "Full in", 8, unit="s", fmt=left, style=_full_style(full_limit_min), priority=0,
               help=f"at that growth (alarm under {full_limit_min:g} minutes)"),
    )


def filesystem_growth(fs: FilesystemUsage) -> Optional[float]:
    return growth_per_hour(((fs.first_at, fs.first_used), (fs.at, fs.used)))


def binlog_growth(reading: Optional[ServerSpaceReading]) -> Optional[float]:
    if reading is None or reading.written_first is None or reading.written_now is None:
        return None
    return growth_per_hour((reading.written_first, reading.written_now))


def space_rows(snapshot: Optional[SpaceSnapshot], readings: Mapping[str, ServerSpaceReading]) -> List[Row]:
    """Pure: the host's space snapshot (and each server's own figures) -> one row per filesystem."""
    if snapshot is None:
        return []
    rows: List[Row] = []
    for fs in snapshot.filesystems:
        growth = filesystem_growth(fs)
        binlog_servers = {h.server for h in fs.holds if h.role == "binlog"}
        binlog = [binlog_growth(readings.get(server)) for server in sorted(binlog_servers)]
        known = [g for g in binlog if g is not None]
        inodes = (None if not fs.inodes_total or fs.inodes_free is None
                  else (fs.inodes_total - fs.inodes_free) / fs.inodes_total * 100.0)
        rows.append({
            "_id": fs.mount, "mount": fs.mount, "holds": ",".join(fs.roles), "device": fs.device,
            "fstype": fs.fstype, "size": fs.total, "used": fs.used, "free": fs.free,
            "used_pct": used_percent(fs.used, fs.free), "inodes_pct": inodes, "growth": growth,
            "binlog_growth": sum(known) if known else None, "full_in": full_in(fs.free, growth),
            "watched_s": fs.at - fs.first_at,
            "servers": ",".join(sorted({h.server for h in fs.holds})),
        })
    return rows


def holding_free(snapshot: Optional[SpaceSnapshot], server: str, role: str) -> List[Tuple[str, int]]:
    """(mount, free) of every filesystem holding ``role`` for ``server``."""
    if snapshot is None:
        return []
    return [(fs.mount, fs.free) for fs in snapshot.filesystems
            if any(h.server == server and h.role == role for h in fs.holds)]


def server_lines(server: str, reading: Optional[ServerSpaceReading], snapshot: Optional[SpaceSnapshot],
                 local: bool) -> List[Segments]:
    """What a server says of its own space, and the rebuild check for a local one."""
    head: List[Tuple[str, Optional[str]]] = [(server, "header")]
    if not local:
        head.append(("  (another host: the server's own figures; its filesystems are not visible from here)", "dim"))
    if reading is None:
        return [tuple(head + [("  not read yet", "dim")])]
    if reading.binlog_note:
        head.append((f"  {reading.binlog_note}", "dim"))
    else:
        head += [("  binary log ", "label"),
                 (f"{reading.binlog_files} file{'' if reading.binlog_files == 1 else 's'}, "
                  f"{units.size(reading.binlog_bytes)}", None),
                 (f", {per_hour(binlog_growth(reading))}/h", None)]
    lines: List[Segments] = [tuple(head)]
    largest = reading.largest
    if largest is None:
        if reading.largest_note:
            lines.append((("  " + reading.largest_note, "dim"),))
        return lines
    line: List[Tuple[str, Optional[str]]] = [
        ("  room for a rebuild: ", "label"), (f"largest table {largest.label} {units.size(largest.bytes)}", None)]
    if local:
        for role, where in (("data", "datadir"), ("tmp", "tmpdir")):
            places = holding_free(snapshot, server, role)
            for _mount, free in places[:2]:
                text, style = rebuild_words(largest.bytes, free, where)
                line += [("; ", None), (text, style)]
            if not places:
                line += [("; ", None), (f"{where}: not found", "dim")]
    lines.append(tuple(line))
    return lines


def space_alarm(snapshot: Optional[SpaceSnapshot], used_limit: float, full_limit_min: float) -> Optional[str]:
    """The header's words for every filesystem past a threshold, the soonest full first."""
    if snapshot is None:
        return None
    found = []
    for fs in snapshot.filesystems:
        seconds = full_in(fs.free, filesystem_growth(fs))
        text = alarm_text(fs.mount, used_percent(fs.used, fs.free), seconds, fs.roles, used_limit, full_limit_min)
        if text:
            found.append((seconds if seconds is not None else float("inf"), -(used_percent(fs.used, fs.free) or 0), text))
    return "; ".join(text for *_order, text in sorted(found)) or None


def filesystem_detail(row: Row, snapshot: Optional[SpaceSnapshot]) -> List[Segments]:
    """The lines of a filesystem's detail view: every directory written there, by whom."""
    fs = next((f for f in (snapshot.filesystems if snapshot else ()) if f.mount == row.get("mount")), None)
    if fs is None:
        return []
    lines: List[Segments] = []

    def add(label: str, value: str, style: Optional[str] = None) -> None:
        lines.append(((f"{label:<22}", "label"), (value, style)))

    add("mounted from", f"{fs.source} ({fs.fstype})")
    add("block device", fs.device or "none (no local block device)")
    add("size / used / free", f"{units.size(fs.total)} / {units.size(fs.used)} / {units.size(fs.free)}")
    if fs.inodes_total:
        add("inodes used", f"{fs.inodes_total - (fs.inodes_free or 0)} of {fs.inodes_total}")
    watched = fs.at - fs.first_at
    add("growth", f"{per_hour(filesystem_growth(fs))}/h over {units.age(watched)} watched"
        + ("" if filesystem_growth(fs) is not None else " (known after a minute)"))
    add("full in", left(full_in(fs.free, filesystem_growth(fs))))
    lines.append(())
    for holding in fs.holds:
        add(f"{holding.role}", f"{holding.path}  ({holding.server})")
    return lines


def readings_by_server(latest, names: Iterable[str]) -> Dict[str, ServerSpaceReading]:
    """Server key -> its latest space reading, from the engine's latest snapshots."""
    found: Dict[str, ServerSpaceReading] = {}
    for name in names:
        data = getattr(latest(name), "data", None)
        if isinstance(data, ServerSpaceReading):
            found[name[len(SPACE_PREFIX):]] = data
    return found


def space_snapshot(latest) -> Optional[SpaceSnapshot]:
    data = getattr(latest(SPACE), "data", None)
    return data if isinstance(data, SpaceSnapshot) else None


def queue_lines(settings: Sequence, notes: Sequence[str]) -> List[Segments]:
    """The device's detail: each device's queue settings (the device, then the disks beneath
    it), then the facts worth checking."""
    lines: List[Segments] = []
    for queue in settings:
        chosen = queue.scheduler or "?"
        others = [s for s in queue.schedulers if s != queue.scheduler]
        lines.append(((f"{'scheduler ' + queue.device:<22}", "label"),
                      (chosen, "header"), (f"  (available: {', '.join(others) or 'none other'})", "dim")))
        rotational = {True: "rotational", False: "not rotational", None: "?"}[queue.rotational]
        figures = (f"{rotational}, nr_requests {units.plain(queue.nr_requests)}, read_ahead_kb "
                   f"{units.plain(queue.read_ahead_kb)}, max_sectors_kb {units.plain(queue.max_sectors_kb)}, "
                   f"write cache {queue.write_cache or '?'}")
        lines.append(((f"{'':<22}", "label"), (figures, None)))
    for note in notes:
        lines.append((("check: ", "warning_bold"), (note, "warning")))
    return lines
