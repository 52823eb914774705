"""The health view of one backend (Enter on ConnPool): why it is in its state.

Its configuration, a plain-language reason for its status, the state changes proxytop has seen,
the monitor's latest checks of each kind (failures highlighted) with a lag sparkline, its rows of
stats_mysql_errors with errors/s, and its idle pooled connections. Built from snapshots only;
it follows new readings while open. A PostgreSQL backend's view reads the PostgreSQL side's
twins of the same tables (runtime_pgsql_servers, monitor.pgsql_server_*_log, stats_pgsql_errors
with SQLSTATEs); its monitor measures no replication lag, so that part is left out.
"""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.metrics import health, units
from proxytop.screens import sparkline
from proxytop.collectors.errors import (MYSQL_ERRORS, MYSQL_FREE, PGSQL_ERRORS, BackendErrors, FreeConnections,
                                        ReplicationHostgroups)
from proxytop.collectors.monitor import LOGS, Entry, MonitorLogs, MonitorReadings, ServerMonitor
from proxytop.collectors.proxysql import ConnectionPool
from proxytop.metrics.rates import rate, to_number
from proxytop.metrics.sides import MYSQL, PGSQL, Side
from proxytop.screens.base import NOT_RECORDED, DataView, Detail, seconds_between
from proxytop.screens.errors import error_code

Segment = Tuple[str, Optional[str]]
Line = Tuple[Segment, ...]

ENTRIES_SHOWN = 5
CHANGES_SHOWN = 10
SPARK_WIDTH = 60
KIND_TITLES = (("ping", "ping"), ("connect", "connect"), ("read_only", "read_only"), ("lag", "replication lag"))


def _line(*segments: Segment) -> Line:
    return tuple(segments)


def config_lines(settings: Optional[Mapping], pairs: Sequence[Mapping], hostgroup: str, side: Side = MYSQL) -> List[Line]:
    """The backend's runtime configuration and its replication hostgroup pair (a PostgreSQL
    backend's max_replication_lag is left out: nothing measures its lag)."""
    if not settings:
        return [_line(("configuration: needs an admin user (runtime_mysql_servers), or the server is no "
                       "longer configured", "dim"))]
    yes_no = {"0": "no", "1": "yes"}
    fields = [("weight", settings.get("weight")), ("max_connections", settings.get("max_connections")),
              ("max_replication_lag", units.duration(settings.get("max_replication_lag"))),
              ("max_latency_ms", settings.get("max_latency_ms")),
              ("use_ssl", yes_no.get(str(settings.get("use_ssl")), settings.get("use_ssl"))),
              ("compression", settings.get("compression"))]
    if side is PGSQL:
        fields = [(name, value) for name, value in fields if name != "max_replication_lag"]
    line: List[Segment] = []
    for name, value in fields:
        line += [(f"{name} ", "label"), (f"{value}  ", "header")]
    lines = [tuple(line)]
    if settings.get("comment"):
        lines.append(_line(("comment ", "label"), (str(settings.get("comment")), None)))
    pair = [p for p in pairs if hostgroup in (str(p.get("writer_hostgroup")), str(p.get("reader_hostgroup")))]
    for p in pair:
        role = "writer" if str(p.get("writer_hostgroup")) == hostgroup else "reader"
        lines.append(_line(("replication hostgroups ", "label"),
                           (f"writer {p.get('writer_hostgroup')} / reader {p.get('reader_hostgroup')}", "header"),
                           (f"  (this is the {role} hostgroup; check_type {p.get('check_type') or 'read_only'}"
                            f"{', ' + str(p.get('comment')) if p.get('comment') else ''})", None)))
    if not pair and pairs is not None:
        lines.append(_line(("not in a replication hostgroup", "dim")))
    return lines


def entry_text(kind: str, entry: Entry, now_us: Optional[float]) -> Line:
    """One monitor check: time, age, result."""
    start, success, error, value = entry
    age = health.ago(None if now_us is None else (now_us - start) / 1e6)
    head = (f"  {health.clock(start)} ({age if age == 'now' else age + ' ago'})  ", "label")
    if error:
        return _line(head, (f"error: {health.first_line(error, 200)}", "danger"))
    if kind in ("ping", "connect") and not health.has_result(entry):
        return _line(head, ("no time and no error: not a finished check (ProxySQL wrote it so)", "dim"))
    took = units.milliseconds(success / 1000.0) if success is not None else units.MISSING
    if kind == "read_only":
        return _line(head, (f"read_only={value}", "header"), (f"  in {took}", None))
    if kind == "lag":
        shown = "NULL (Seconds_Behind_Master NULL)" if value is None else units.duration(value)
        return _line(head, (f"lag {shown}", "warning" if value is None else "header"), (f"  in {took}", None))
    return _line(head, (f"ok in {took}", "good"))


def monitor_lines(server: Optional[ServerMonitor], readings: Optional[MonitorReadings],
                  now_us: Optional[float], side: Side = MYSQL) -> List[Line]:
    if readings is None:
        return [_line(("no monitor reading yet", "dim"))]
    lines: List[Line] = []
    unavailable = dict(readings.unavailable)
    for kind, title in KIND_TITLES:
        if not any(log.kind == kind and side.key in log.sides for log in LOGS):
            continue  # a check this side's monitor doesn't make (PostgreSQL: replication lag)
        if kind in unavailable:
            lines.append(_line((f"{title}: ", "label"), (f"not read: {unavailable[kind]}", "dim")))
            continue
        entries = server.entries(kind) if server is not None else ()
        if not entries:
            lines.append(_line((f"{title}: ", "label"), ("no checks (not monitored for this server)", "dim")))
            continue
        failed = sum(1 for e in entries if e[2])
        lines.append(_line((f"{title}: ", "label"), (f"last {min(len(entries), ENTRIES_SHOWN)} of {len(entries)} read", None),
                           (f", {failed} failed" if failed else "", "danger")))
        if kind == "lag":
            series = health.lag_series(server)
            numbers = [v for v in series if v is not None]
            lines.append(_line(("  ", None), (sparkline.sparkline(series, SPARK_WIDTH), "header"),
                               (f"  max {units.duration(max(numbers))}" if numbers else "  no lag measured", "label")))
        for entry in entries[-ENTRIES_SHOWN:]:
            lines.append(entry_text(kind, entry, now_us))
    return lines


def error_lines(previous, current, host: str, port: str, e=MYSQL_ERRORS) -> List[Line]:
    """This backend's rows of stats_mysql_errors (any hostgroup), with errors/s; ``e`` names
    the table and columns (PGSQL_ERRORS: a SQLSTATE, named by its class, for the errno)."""
    if current is None or current.data is None:
        return [_line(("no reading of stats_mysql_errors yet", "dim"))]
    seconds = seconds_between(previous, current)
    before: Dict[Tuple, Mapping] = {}
    if previous is not None and previous.data is not None:
        before = {_error_key(r, e): r for r in previous.data.dicts()}
    mine = [r for r in current.data.dicts() if str(r.get(e.host)) == host and str(r.get(e.port)) == port]
    if not mine:
        return [_line(("no errors recorded for this server", "dim"))]
    mine.sort(key=lambda r: -(to_number(r.get(e.count)) or 0))
    lines = []
    for r in mine:
        old = before.get(_error_key(r, e))
        per_second = rate(old.get(e.count), r.get(e.count), seconds) if old else None
        name = error_code(r.get(e.errno), e)[1] or ""
        lines.append(_line(
            (f"  {r.get(e.errno)} {name:<28} ", "danger" if per_second else "header"),
            (f"x{units.number(r.get(e.count))}  ", None),
            (f"{units.number(per_second)}/s  " if per_second is not None else f"{units.MISSING}/s  ", "label"),
            (f"hg {r.get(e.hostgroup)} {r.get(e.user)}@{r.get(e.schema)}  ", "label"),
            (health.first_line(r.get(e.last_error), 100), None)))
    return lines


def _error_key(r: Mapping, e=MYSQL_ERRORS) -> Tuple:
    return tuple(str(r.get(c)) for c in (e.hostgroup, e.host, e.port, e.user, e.client, e.schema, e.errno))


def free_lines(snapshot, hostgroup: str, host: str, port: str) -> List[Line]:
    """Idle pooled connections to this backend in this hostgroup: count, oldest idle, by user."""
    if snapshot is None:
        return [_line(("reading stats_mysql_free_connections\u2026", "dim"))]
    if snapshot.data is None:
        return [_line(("not available", "dim"))]
    f = MYSQL_FREE
    mine = [r for r in snapshot.data.dicts()
            if str(r.get(f.host)) == host and str(r.get(f.port)) == port and str(r.get(f.hostgroup)) == hostgroup]
    if not mine:
        return [_line(("no idle connections in the pool", "dim"))]
    idle = [to_number(r.get(f.idle_ms)) for r in mine]
    idle = [v for v in idle if v is not None]
    users: Dict[str, int] = {}
    for r in mine:
        users[str(r.get(f.user))] = users.get(str(r.get(f.user)), 0) + 1
    by_user = ", ".join(f"{user} {count}" for user, count in sorted(users.items(), key=lambda i: -i[1]))
    return [_line(("  ", None), (f"{len(mine)} idle", "header"),
                  (f", oldest idle {units.milliseconds(max(idle))}" if idle else "", None),
                  (f"  ({by_user})", "label"))]


def change_lines(log: health.StatusLog, key: Tuple[str, str, str]) -> List[Line]:
    changes = [c for c in log.changes if c.key == key]
    if not changes:
        seen = log.since.get(key)
        since = f" since {health.clock(int(seen[1] * 1e6))}" if seen else ""
        return [_line((f"  none seen{since}", "dim"))]
    lines = []
    for change in changes[-CHANGES_SHOWN:]:
        lines.append(_line((f"  {health.clock(int(change.at * 1e6))}  ", "label"), (change.old, None),
                           (" \u2192 ", "label"), (change.new, "danger" if change.new != "ONLINE" else "good")))
    return lines


def _same(name: str) -> str:
    return name


def not_yet(view: DataView, name: str, waiting: str) -> List[Line]:
    """The line for a reading not there: ``waiting`` while one can come, or that the recording
    replayed has none (it would wait forever)."""
    if view.not_recorded(name):
        return [_line((NOT_RECORDED, "dim"))]
    return [_line((waiting, "dim"))]


def health_view(row: Mapping, view: DataView, log: health.StatusLog, settings: Optional[Mapping],
                now_us: Optional[float], name=_same, side: Side = MYSQL) -> Detail:
    """``settings``: the backend's runtime_mysql_servers row; ``now_us``: ProxySQL's clock now;
    ``name(collector name)``: the shown side's collector (ConnPoolScreen.on_side)."""
    hostgroup, host, port = row["_id"]
    status = str(row.get("status") or "")
    current = view.latest(name(ConnectionPool.name))
    if current is not None and current.data is not None:  # the newest status, not the one at Enter
        for r in current.data.dicts():
            if (str(r.get("hostgroup")), str(r.get("srv_host")), str(r.get("srv_port"))) == row["_id"]:
                status = str(r.get("status") or "")
    pairs_snapshot = view.latest(name(ReplicationHostgroups.name))
    pairs = pairs_snapshot.data.dicts() if pairs_snapshot is not None and pairs_snapshot.data is not None else []
    monitor = view.latest(name(MonitorLogs.name))
    readings = monitor.data if monitor is not None and isinstance(monitor.data, MonitorReadings) else None
    server = readings.server(host, port) if readings is not None else None
    errors = view.pair(name(BackendErrors.name))
    free = view.latest(name(FreeConnections.name))
    seen = log.since.get(row["_id"])
    held = ""
    if seen is not None and seen[0] == status and current is not None:
        elapsed = current.wall_time + max(0.0, view.now() - current.taken_at) - seen[1]
        held = f" for {'' if seen[2] else 'at least '}{units.duration(max(0.0, elapsed))}"
    style = "good" if status == "ONLINE" else "danger"
    lines: List[Line] = [
        _line(("status ", "label"), (status, style), (held, None)),
        _line((health.reason(status, settings, server, row.get("conn_err_s")), style)),
        (),
        _line(("Configuration", "header_title")),
        *config_lines(settings, pairs, hostgroup, side),
        (),
        _line(("State changes seen by proxytop", "header_title")),
        *change_lines(log, row["_id"]),
        (),
        _line(("Monitor", "header_title")),
        *(monitor_lines(server, readings, now_us, side) if monitor is not None
          else not_yet(view, name(MonitorLogs.name), "no monitor reading yet")),
        (),
        _line(("Errors (stats_mysql_errors)", "header_title")),
        *(error_lines(*errors, host, port, PGSQL_ERRORS if side is PGSQL else MYSQL_ERRORS) if errors[1] is not None
          else not_yet(view, name(BackendErrors.name), "no reading of stats_mysql_errors yet")),
        (),
        _line(("Free connections (stats_mysql_free_connections, read while this view is open)", "header_title")),
        *(free_lines(free, hostgroup, host, port) if free is not None
          else not_yet(view, name(FreeConnections.name), "reading stats_mysql_free_connections\u2026")),
    ]
    of = f"{side.server} backend " if side is PGSQL else ""
    return Detail(title=f"Health of {of}{host}:{port} in hostgroup {hostgroup}", lines=tuple(lines))
