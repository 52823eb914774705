"""ConnPool: ProxySQL's connection pool, one row per backend, subtotals per hostgroup.

Beside the pool's counters each backend shows why it is in its state: the measured replication
lag and read_only from the monitor logs, the latest ping/connect check, and how long it has had
its status. Enter opens its health view (screens.health). The PostgreSQL side (ProxySQL 3.x)
shows the same from its own tables and monitor logs, without Lag (ProxySQL measures no
replication lag of PostgreSQL backends) and with RO only where its monitor checks read_only.

The header's one-line backend alarm is ConnPool's too (``alarm``): it covers the backends of
both sides, whichever side and screen is shown, from the pool readings ``alarm_collectors``
names for every screen.
"""
from __future__ import annotations

import bisect
import math
from typing import Callable, Dict, List, Mapping, Optional, Tuple

from proxytop.collectors.errors import BackendErrors, FreeConnections, ReplicationHostgroups
from proxytop.collectors.monitor import MonitorLogs, MonitorReadings
from proxytop.collectors.proxysql import ConnectionPool, RuntimeServers
from proxytop.collectors.sides import twin_name
from proxytop.metrics import health, units
from proxytop.metrics.rates import rate, to_number, to_numbers
from proxytop.metrics.sides import MYSQL, PGSQL, Side, pgsql_problem
from proxytop.screens.asks import asks_line
from proxytop.screens.base import DataView, Screen, seconds_between
from proxytop.screens.sided import SidedScreen
from proxytop.screens import allnodes
from proxytop.screens.health import health_view
from proxytop.screens.table import Column, Row

STATUS_STYLE = {
    "ONLINE": "good",
    "SHUNNED": "danger",
    "SHUNNED_REPLICATION_LAG": "danger",
    "OFFLINE_SOFT": "warning",
    "OFFLINE_HARD": "dim",
}

COUNTERS = ("ConnOK", "ConnERR", "Queries", "Bytes_data_sent", "Bytes_data_recv")


def status_style(row: Mapping) -> Optional[str]:
    return STATUS_STYLE.get(str(row.get("status") or "").upper())


def error_style(row: Mapping) -> Optional[str]:
    value = to_number(row.get("conn_err_s"))
    return "danger" if value else None


def used_style(row: Mapping) -> Optional[str]:
    value = to_number(row.get("used_pct"))
    if value is None:
        return None
    return "danger" if value >= 90 else "warning" if value >= 75 else None


def pool_rows(previous, current, servers) -> List[Row]:
    """Pure: connection-pool table snapshots (+ runtime servers, may be None) -> screen rows."""
    if current is None or current.data is None:
        return []
    seconds = seconds_between(previous, current)
    before = counters_by_key(previous) if seconds else {}
    config = settings_by_key(servers)
    rows = []
    for key, (host, port, status, hostgroup, used, free, max_used, latency, counts) in pool_values(current).items():
        old = before.get(key)
        if old is None:
            ok_s = err_s = queries_s = sent_s = recv_s = None
        else:
            # a counter that went down was reset: no rate (COUNTERS' order)
            ok_s, err_s, queries_s, sent_s, recv_s = (
                None if a is None or b is None or b < a else (b - a) / seconds for a, b in zip(old, counts))
        settings = config.get(key)
        max_conn = to_number(settings.get("max_connections")) if settings else None
        rows.append({
            "_id": key,
            "hostgroup": hostgroup,
            "server": f"{host}:{port}",
            "status": status,
            "conn_used": used,
            "conn_free": free,
            "conn_ok_s": ok_s,
            "conn_err_s": err_s,
            "max_conn_used": max_used,
            "used_pct": (100.0 * used / max_conn) if (used is not None and max_conn) else None,
            "queries_s": queries_s,
            "sent_s": sent_s,
            "recv_s": recv_s,
            "latency_ms": latency,
            "weight": to_number(settings.get("weight")) if settings else None,
            "max_connections": max_conn,
            "comment": settings.get("comment") if settings else None,
        })
    return rows


# What a pool row is read for, in this order: its key, the screen's fields, its COUNTERS.
_KEY_FIELDS = ("hostgroup", "srv_host", "srv_port")
_GAUGES = ("hostgroup", "ConnUsed", "ConnFree", "MaxConnUsed", "Latency_us", "Latency_ms")


def pool_values(snapshot) -> Dict[Tuple[str, str, str], Tuple]:
    """A connection-pool reading by (hostgroup, host, port), in the order read: each backend's
    (host, port, status, hostgroup, ConnUsed, ConnFree, MaxConnUsed, latency in ms, COUNTERS),
    the numbers as to_number reads them (a column the version lacks: None). Made a column at a
    time: the texts of whole numbers are read in one pass in C, and no dict is made per row.

    >>> from proxytop.core import Snapshot, Table
    >>> t = Table(("hostgroup", "srv_host", "srv_port", "status", "Queries", "Latency_us"),
    ...           (("10", "db1", "3306", "ONLINE", "42", "1500"),))
    >>> pool_values(Snapshot("p", t, 1.0, 0.0))
    {('10', 'db1', '3306'): ('db1', '3306', 'ONLINE', 10, None, None, None, 1.5, (None, None, 42, None, None))}
    """
    if snapshot is None or snapshot.data is None or not snapshot.data.rows:
        return {}
    column = columns_of(snapshot.data)
    hosts, ports = column("srv_host"), column("srv_port")
    hostgroup, used, free, max_used, micros, millis = (to_numbers(column(name)) for name in _GAUGES)
    # Latency_us (2.x), else Latency_ms (before 1.3.3)
    latency = [ms if raw is None else (None if us is None else us / 1000.0)
               for raw, us, ms in zip(column("Latency_us"), micros, millis)]
    counts = zip(*(to_numbers(column(name)) for name in COUNTERS))
    values = zip(hosts, ports, column("status"), hostgroup, used, free, max_used, latency, counts)
    return dict(zip(pool_keys(column), values))


def columns_of(table) -> Callable[[str], tuple]:
    """``column(name)``: the values of a table's column by name, one per row, the columns
    taken apart in C. A column the version lacks is all None, and so are a short row's last
    values (a long row's extra values are not read); of a repeated name, the last column.

    >>> from proxytop.core import Table
    >>> column = columns_of(Table(("a", "b"), (("1", "2"), ("3",))))
    >>> column("a"), column("b"), column("c")
    (('1', '3'), ('2', None), (None, None))
    """
    rows, width = table.rows, len(table.columns)
    if set(map(len, rows)) == {width}:  # the usual case
        by_position = tuple(zip(*rows))
    else:
        by_position = tuple(tuple(row[at] if at < len(row) else None for row in rows) for at in range(width))
    by_name = dict(zip(table.columns, by_position))
    absent = (None,) * len(rows)
    return lambda name: by_name.get(name, absent)


def pool_keys(column):
    """Each pool row's key, (hostgroup, host, port) as text, from :func:`columns_of`'s ``column``."""
    hostgroups, hosts, ports = (column(name) for name in _KEY_FIELDS)
    return zip(map(str, hostgroups), map(str, hosts), map(str, ports))


def counters_by_key(snapshot) -> Dict[Tuple[str, str, str], Tuple]:
    """The COUNTERS of each backend of a reading as numbers (what :func:`pool_values` has last).

    >>> from proxytop.core import Snapshot, Table
    >>> t = Table(("hostgroup", "srv_host", "srv_port", "Queries"), (("10", "db1", "3306", "42"),))
    >>> counters_by_key(Snapshot("p", t, 1.0, 0.0))
    {('10', 'db1', '3306'): (None, None, 42, None, None)}
    """
    if snapshot is None or snapshot.data is None or not snapshot.data.rows:
        return {}
    column = columns_of(snapshot.data)
    return dict(zip(pool_keys(column), zip(*(to_numbers(column(name)) for name in COUNTERS))))


def pool_statuses(snapshot) -> Tuple[Tuple[Tuple[str, str, str], str], ...]:
    """((hostgroup, host, port), status) of each backend of a reading, in the order read:
    what the status log and the header alarm take from a pool reading (every frame: its four
    columns only, not :func:`pool_values`).

    >>> from proxytop.core import Snapshot, Table
    >>> t = Table(("hostgroup", "srv_host", "srv_port", "status"), (("10", "db1", "3306", "ONLINE"),))
    >>> pool_statuses(Snapshot("p", t, 1.0, 0.0))
    ((('10', 'db1', '3306'), 'ONLINE'),)
    """
    if snapshot is None or snapshot.data is None or not snapshot.data.rows:
        return ()
    column = columns_of(snapshot.data)
    statuses = (str(status or "") for status in column("status"))
    return tuple(dict(zip(pool_keys(column), statuses)).items())  # a key read twice: its place, its last status


def settings_by_key(servers) -> Dict[Tuple[str, str, str], Mapping]:
    """runtime_mysql_servers rows by (hostgroup, host, port); empty for the stats user."""
    if servers is None or servers.data is None:
        return {}
    return {(str(r.get("hostgroup_id")), str(r.get("hostname")), str(r.get("port"))): r
            for r in servers.data.dicts()}


def proxysql_now_us(monitor_snapshot, now: float) -> Optional[float]:
    """ProxySQL's clock now, in µs: its clock at the monitor reading plus the time since."""
    if monitor_snapshot is None or not isinstance(monitor_snapshot.data, MonitorReadings):
        return None
    base = monitor_snapshot.data.server_now_us
    if base is None:
        base = monitor_snapshot.wall_time * 1e6
    return base + max(0.0, now - monitor_snapshot.taken_at) * 1e6


def lag_text(value) -> str:
    """The Lag column: seconds, NULL (checked, no number), or — (not monitored)."""
    number = to_number(value)
    if number is not None:
        return units.duration(number)
    return units.MISSING if value is None else str(value)


def lag_style(row: Mapping) -> Optional[str]:
    value = row.get("lag")
    if value is None:
        return None
    if to_number(value) is None:
        return "warning"  # NULL: replication stopped, or the check failed
    limit = to_number(row.get("_max_lag"))
    return "danger" if limit and to_number(value) > limit else None


def monitor_text(value) -> str:
    return units.milliseconds(value) if to_number(value) is not None else (value or units.MISSING)


def monitor_style(row: Mapping) -> Optional[str]:
    value = row.get("monitor")
    return "danger" if value is not None and to_number(value) is None else None


def in_state_text(value) -> str:
    return units.duration(value)


def in_state_style(row: Mapping) -> Optional[str]:
    return None if row.get("_state_seen") else "dim"


def monitor_summary(snapshot) -> Dict[Tuple[str, str], Tuple]:
    """{(host, port): (lag, read_only, newest ping/connect check)} of a monitor reading."""
    if snapshot is None or not isinstance(snapshot.data, MonitorReadings):
        return {}

    def build():
        summary = {}
        for name, server in snapshot.data.servers.items():
            host, _, port = name.rpartition(":")
            summary[(host, port)] = (health.latest_lag(server)[0], health.latest_read_only(server),
                                     health.latest_check(server), server)
        return summary

    return build()


def server_health(found: Optional[Tuple], now_us: Optional[float]) -> Tuple:
    """(lag, read_only, monitor cell) of one server from its monitor summary."""
    if found is None:
        return None, None, None
    lag, read_only, check, server = found
    if check is not None and check[1][2]:  # a failed check: its age is measured now
        return lag, read_only, health.monitor_cell(server, now_us)
    success = check[1][1] if check is not None else None
    return lag, read_only, (None if success is None else success / 1000.0)


def with_health(rows: List[Row], config: Mapping, monitor, log: health.StatusLog,
                now_us: Optional[float], now_wall: float) -> List[Row]:
    """Pure: adds Lag, RO, Monitor and In state to ConnPool rows (in place; returns them).
    ``monitor`` is a monitor-log snapshot (or None)."""
    summary = monitor_summary(monitor)
    since = log.since
    for row in rows:
        key = row["_id"]
        row["lag"], row["ro"], row["monitor"] = server_health(summary.get(key[1:]), now_us)
        settings = config.get(key)
        row["_max_lag"] = to_number(settings.get("max_replication_lag")) if settings else None
        seen = since.get(key)
        if seen is not None and seen[0] == (row.get("status") or ""):
            row["in_state"] = max(0.0, now_wall - seen[1])
            row["_state_seen"] = seen[2]
        else:
            row["in_state"] = None
    return rows


ALARM_INTERVAL = 2.0  # the header alarm's pool readings on screens that don't show the pool
IDLE_POOL_INTERVAL = 30.0  # a side whose pool was read empty: looked at again for servers loaded since
PGSQL_HIDDEN = frozenset(("lag",))  # ProxySQL's PostgreSQL monitor measures no replication lag
CHECKPOINT_EVERY = 60.0  # seconds of pool readings between two checkpoints of a status log
KEEP_CHECKPOINTS = 1440  # a day of them (a live proxytop never goes back: they are only kept)
# A replay's jump folds at most this much recorded time before the position: the log then
# starts there, as if proxytop had started watching then (an hour of 1 s readings of 500
# backends took 5.6 s to fold, on the UI thread; ten minutes of them take under a second).
FOLD_AT_MOST = 600.0


def alarm_collectors(session, latest) -> Tuple[Tuple[str, float], ...]:
    """The pool readings the header's backend alarm takes on every screen, each with its
    pace: (collector name, seconds). A side's pool every 2 s while it has backends, every
    30 s once it was read empty; the PostgreSQL side's only on a ProxySQL that has one
    (learnt when the connection opened). ``latest(name)`` is the engine's latest reading.

    >>> from types import SimpleNamespace as NS
    >>> from proxytop.core import Snapshot, Table
    >>> v3 = NS(version=(3, 0, 1), tables={"runtime_pgsql_servers"}, pgsql_servers=2)
    >>> alarm_collectors(v3, lambda name: None)
    (('proxysql.connection_pool', 2.0), ('proxysql.pgsql.connection_pool', 2.0))
    >>> empty = Snapshot("proxysql.connection_pool", Table(("hostgroup",), ()), 1.0, 0.01)
    >>> alarm_collectors(v3, lambda name: empty if name == "proxysql.connection_pool" else None)
    (('proxysql.connection_pool', 30.0), ('proxysql.pgsql.connection_pool', 2.0))
    >>> alarm_collectors(NS(version=(2, 7, 2), tables=set(), pgsql_servers=None), lambda name: None)
    (('proxysql.connection_pool', 2.0),)
    """
    plan = []
    for side in (MYSQL, PGSQL):
        if side is PGSQL and (session is None or pgsql_problem(session) is not None):
            continue
        name = twin_name(ConnectionPool.name, side)
        reading = latest(name)
        empty = reading is not None and reading.data is not None and not reading.data.rows
        plan.append((name, IDLE_POOL_INTERVAL if empty else ALARM_INTERVAL))
    return tuple(plan)


def header_queries(side: Side, global_pair, pool_pair) -> Tuple[Optional[float], str]:
    """The header's Q/s and what it counts ("" for the Questions of the side's global status).

    ProxySQL 3.0's stats_pgsql_global has no Questions (its source has the variable commented
    out): on the PostgreSQL side the queries sent to the backends stand in for it, the Queries
    of stats_pgsql_connection_pool added up over the backends in both readings (which the
    backend alarm reads on every screen: no query of its own). A ProxySQL whose
    stats_pgsql_global has Questions gives that.

    >>> from proxytop.core import Snapshot, Table
    >>> g = lambda q, at: Snapshot("g", {"Questions": q} if q else {"Active_Transactions": "1"}, at, 0.0)
    >>> cols = ("hostgroup", "srv_host", "srv_port", "Queries")
    >>> p = lambda rows, at: Snapshot("p", Table(cols, rows), at, 0.0)
    >>> header_queries(MYSQL, (g("100", 1.0), g("400", 3.0)), (None, None))
    (150.0, '')
    >>> header_queries(PGSQL, (g(None, 1.0), g(None, 3.0)),
    ...                (p((("30", "h", "5442", "1000"), ("40", "h", "5442", "5")), 1.0),
    ...                 p((("30", "h", "5442", "1600"), ("40", "h", "5442", "5"), ("50", "h", "5443", "9")), 3.0)))
    (300.0, 'to backends')
    >>> header_queries(PGSQL, (g("10", 1.0), g("30", 2.0)), (None, None))
    (20.0, '')
    """
    previous, current = global_pair
    seconds = seconds_between(previous, current)
    if side is MYSQL or (current is not None and current.data and "Questions" in current.data):
        if previous is None or not previous.data or current is None or not current.data:
            return None, ""
        return rate(previous.data.get("Questions"), current.data.get("Questions"), seconds), ""
    before, now = pool_pair
    seconds = seconds_between(before, now)
    if not seconds or before.data is None or now.data is None:
        return None, "to backends"
    old = counters_by_key(before)
    total = 0.0
    for key, counts in counters_by_key(now).items():
        was = old.get(key)
        at = COUNTERS.index("Queries")
        if was is not None and was[at] is not None and counts[at] is not None and counts[at] >= was[at]:
            total += counts[at] - was[at]  # a backend that reset or is new counts from its next reading
    return total / seconds, "to backends"


def alarm_line(texts: List[str]) -> Optional[str]:
    """The first alarm and how many more, each once, in order (a server in two hostgroups, or
    shunned in both, is one alarm).

    >>> alarm_line(["a SHUNNED", "b OFFLINE_HARD", "a SHUNNED"]), alarm_line([])
    ('a SHUNNED  (+1 more)', None)
    """
    alarms = list(dict.fromkeys(texts))
    if not alarms:
        return None
    return alarms[0] + (f"  (+{len(alarms) - 1} more)" if len(alarms) > 1 else "")


def read_only_monitored(monitor) -> bool:
    """Whether a monitor reading has the read_only log (the PostgreSQL side's is 3.0.2+)."""
    if monitor is None or not isinstance(monitor.data, MonitorReadings):
        return False
    return "read_only" not in dict(monitor.data.unavailable)


class ConnPoolScreen(SidedScreen, Screen):
    key = "connpool"
    title = "ConnPool"
    short_title = "Pool"
    group_key = "hostgroup"
    default_sort = ("hostgroup", False)
    tiebreak = ("server",)
    columns = (
        Column("hostgroup", "HG", 4, fmt=units.plain, priority=0, graphed=False),
        Column("server", "Server", 18, "<", numeric=False, priority=0),
        Column("status", "Status", 12, "<", style=status_style, numeric=False, priority=0),
        Column("conn_used", "Used", 5, fmt=units.number, summable=True, priority=1, help="ConnUsed: connections in use"),
        Column("conn_free", "Free", 5, fmt=units.number, summable=True, priority=2, help="ConnFree: idle pooled connections"),
        Column("conn_ok_s", "OK/s", 6, fmt=units.number, summable=True, priority=4, help="new backend connections per second"),
        Column("conn_err_s", "ERR/s", 6, fmt=units.number, style=error_style, summable=True, priority=3,
               help="failed backend connections per second"),
        Column("lag", "Lag", 5, unit="s", fmt=lag_text, style=lag_style, priority=3,
               help="replication lag in seconds, measured by the monitor (red past max_replication_lag; "
                    "NULL: Seconds_Behind_Master NULL; \u2014: lag not monitored)"),
        Column("ro", "RO", 3, "<", numeric=False, priority=6,
               help="read_only from the monitor's last check (servers in replication hostgroups)"),
        Column("in_state", "InState", 7, unit="s", fmt=in_state_text, style=in_state_style, priority=5,
               help="how long the server has had its status (dim: at least, since proxytop started)"),
        Column("max_conn_used", "MaxUsed", 7, fmt=units.number, priority=6, help="high-water mark of ConnUsed"),
        Column("used_pct", "Used%", 6, fmt=units.percent_figure, style=used_style, priority=5,
               help="ConnUsed as a share of the server's max_connections (admin user)"),
        Column("queries_s", "Queries/s", 10, fmt=units.number, summable=True, priority=1),
        Column("sent_s", "Sent/s", 8, unit="B/s", fmt=units.size, summable=True, priority=4, help="bytes sent to the backend per second"),
        Column("recv_s", "Recv/s", 8, unit="B/s", fmt=units.size, summable=True, priority=4, help="bytes received from the backend per second"),
        Column("latency_ms", "Latency", 7, unit="ms", fmt=units.milliseconds, priority=2, help="monitor ping latency"),
        Column("monitor", "Monitor", 19, "<", fmt=monitor_text, style=monitor_style, numeric=False, priority=7,
               help="the monitor's latest ping or connect check: its time, or the failed check and its age"),
        Column("weight", "Weight", 6, fmt=units.plain, priority=8),
        Column("max_connections", "MaxConn", 7, fmt=units.plain, priority=8),
        Column("comment", "Comment", 12, "<", numeric=False, priority=9, flexible=True),
    )

    live_detail = True  # the health view follows new readings

    def mysql_server(self, row: Row) -> Optional[str]:
        return row.get("server") if row.get("_kind") != "subtotal" and getattr(self, "side", MYSQL) == MYSQL else None

    def columns_for(self, side, present=(), base=None):
        """The PostgreSQL side without Lag, and with RO only when ``present`` has it (its
        monitor reads a read_only log: ProxySQL 3.0.1 has none)."""
        columns = super().columns_for(side, present, base)
        if side is not PGSQL:
            return columns
        hidden = PGSQL_HIDDEN if "ro" in present else PGSQL_HIDDEN | {"ro"}
        made = self.__dict__.setdefault("_pgsql_columns", {})
        token = (columns, hidden)
        if token not in made:  # the same tuple each time, as the renderer's cache wants
            made[token] = tuple(c for c in columns if c.key not in hidden)
        return made[token]

    def __init__(self, config=None):
        self.status_logs: Dict[str, health.StatusLog] = {MYSQL.key: health.StatusLog(), PGSQL.key: health.StatusLog()}
        self.folded_until: Dict[str, float] = {}  # per side: the newest pool reading folded (taken_at)
        self.folded_statuses: Dict[str, tuple] = {}  # per side: the statuses of the last reading folded
        # per side: (taken_at, log, statuses) every CHECKPOINT_EVERY seconds of readings folded, so
        # that a replay going back folds from the last one before, not from the start of the run
        self.checkpoints: Dict[str, List[Tuple[float, health.StatusLog, tuple]]] = {}
        super().__init__(config)
        self.health_open = False  # free connections are read only while a health view is open

    @property
    def status_log(self) -> health.StatusLog:
        """The shown side's status log (each side keeps its own: hostgroups may repeat)."""
        return self.status_logs[self.side.key]

    @status_log.setter
    def status_log(self, log: health.StatusLog) -> None:
        self.status_logs[self.side.key] = log

    asks = (ConnectionPool,)  # the stats table this screen asks ProxySQL to rebuild (screens.asks)

    def collectors(self):
        return [ConnectionPool(), RuntimeServers(), MonitorLogs(), ReplicationHostgroups(),
                BackendErrors(), FreeConnections()]

    def active_collectors(self) -> List[str]:
        names = [ConnectionPool.name, RuntimeServers.name, MonitorLogs.name, ReplicationHostgroups.name]
        if self.health_open:
            names += [BackendErrors.name, FreeConnections.name]
        return allnodes.active_collectors(self, [self.on_side(name) for name in names])

    def observe(self, view: DataView, side: Optional[Side] = None) -> None:
        """Fold the pool readings of ``side`` up to its latest into its status log: each one
        since the last folded, so that after a replay jumps forward the log holds what the
        recording says happened in between, as if played through (same InState, changes and
        times). When the latest reading is older than one folded, a replay went back (it looped,
        or ← or t): the log is folded again up to there, from the last checkpoint before it
        (or the start of the run), so it holds nothing that happens later. Called on
        every screen by the header alarm, so that state changes are seen while ConnPool is
        hidden."""
        side = side or self.side
        name = self.name_on(side, ConnectionPool.name)
        current = view.latest(name)
        if current is None:
            return
        log = self.status_logs[side.key]
        folded, before = self.folded_until.get(side.key), self.folded_statuses.get(side.key)
        if folded is not None and current.taken_at == folded:
            return  # folded already (this runs for every frame drawn)
        checkpoints = self.checkpoints.setdefault(side.key, [])
        i = bisect.bisect_right([c[0] for c in checkpoints], current.taken_at) - 1
        if folded is not None and current.taken_at < folded:  # back: again from the last checkpoint before
            folded, log, before = checkpoints[i] if i >= 0 else (None, health.StatusLog(), None)
        elif i >= 0 and (folded is None or checkpoints[i][0] > folded):  # forward, past one: from there
            folded, log, before = checkpoints[i]
        if folded is not None and current.taken_at - folded > FOLD_AT_MOST and view.wall_span() is not None:
            # a replay's long jump: its last minutes (live, every reading since the last one folded
            # is folded: a long pause or outage loses none of the history before it)
            folded, log, before = current.taken_at - FOLD_AT_MOST, health.StatusLog(), None
        for reading in view.readings(name, folded, current.taken_at):
            if reading.data is None or not reading.data.has("status"):
                continue
            statuses = pool_statuses(reading)
            if statuses != before:  # the same statuses again change nothing (an hour's jump: most readings)
                log = health.track(log, statuses, reading.wall_time, reading.taken_at)
                before = statuses
            if reading.taken_at >= (checkpoints[-1][0] if checkpoints else -math.inf) + CHECKPOINT_EVERY:
                checkpoints.append((reading.taken_at, log, before))
                del checkpoints[:-KEEP_CHECKPOINTS]
        self.status_logs[side.key] = log
        self.folded_until[side.key], self.folded_statuses[side.key] = current.taken_at, before

    def rows(self, view: DataView) -> List[Row]:
        if allnodes.on(self):  # every node's pool added up (key a)
            return allnodes.pool_rows(self, view, pool_rows)
        previous, current = view.pair(self.on_side(ConnectionPool.name))
        servers = view.latest(self.on_side(RuntimeServers.name))
        rows = pool_rows(previous, current, servers)
        if current is None:
            return rows
        self.observe(view)
        monitor = view.latest(self.on_side(MonitorLogs.name))
        if self.side is PGSQL:
            self.columns = self.columns_for(PGSQL, ("ro",) if read_only_monitored(monitor) else ())
        # Ages as of the pool reading (not of the frame drawn): the same readings give the same
        # rows, live, in batch and in a replay.
        return with_health(rows, settings_by_key(servers), monitor, self.status_log,
                           proxysql_now_us(monitor, current.taken_at), current.wall_time)

    def subtotal_label(self, group):
        return ("server", f"hostgroup {units.plain(group)} total")

    def notes(self, view: DataView):
        if allnodes.on(self):
            return allnodes.notes(self, view, "stats_mysql_connection_pool")
        notes = []
        source = view.source("proxysql")
        session = getattr(source, "session", None)
        if session is not None and not session.is_admin:
            thresholds = "" if self.side is PGSQL else " and the lag thresholds"  # no lag on PostgreSQL
            notes.append(((f"Weight, MaxConn, Used%, Comment{thresholds} need an admin user "
                           "(runtime_mysql_servers).", "dim"),))
        monitor = view.latest(self.on_side(MonitorLogs.name))
        if monitor is not None and isinstance(monitor.data, MonitorReadings):
            reasons: Dict[str, List[str]] = {}
            for kind, why in monitor.data.unavailable:
                reasons.setdefault(why, []).append(kind)
            for why, kinds in reasons.items():
                notes.append(((f"Monitor logs not read ({', '.join(kinds)}): {why}.", "dim"),))
            if not monitor.data.servers and len(reasons) == 0:
                notes.append((("The monitor logs are empty: is mysql-monitor_enabled false?", "dim"),))
        notes.append(asks_line(self, view, self.asks))
        return notes

    def status(self, view: DataView) -> Optional[str]:
        for name in self.active_collectors():
            message = view.error(name)
            if message:
                return message
        return None

    def detail(self, row: Row, view: DataView):
        self.health_open = True
        settings = settings_by_key(view.latest(self.on_side(RuntimeServers.name))).get(row["_id"])
        now_us = proxysql_now_us(view.latest(self.on_side(MonitorLogs.name)), view.now())
        return health_view(row, view, self.status_log, settings, now_us, self.on_side, self.side)

    def detail_closed(self) -> None:
        self.health_open = False

    def alarm(self, view: DataView) -> Optional[str]:
        """The header's one-line alarm: backends of either side not ONLINE or past their lag
        threshold, the shown side's first."""
        state = view.state("proxysql")
        sides = (self.side, MYSQL if self.side is PGSQL else PGSQL)
        readings = []
        for side in sides:
            self.observe(view, side=side)
            readings += [view.latest(self.name_on(side, name))
                         for name in (ConnectionPool.name, RuntimeServers.name, MonitorLogs.name)]
        # Drawn with every frame, and a pool reading comes every second: the alarm is made
        # again only when what it says can differ, a backend's status (not its counters), the
        # configuration or the monitor reading.
        token = (state is None or state.connected, sides[0]) + tuple(
            pool_statuses(reading) if n % 3 == 0 and reading is not None and reading.data is not None
            and reading.data.has("status") else reading
            for n, reading in enumerate(readings))
        cached = getattr(self, "_alarm", None)
        if cached is not None and len(cached[0]) == len(token) and all(
                a is b or (type(a) is tuple and a == b) for a, b in zip(cached[0], token)):
            return cached[1]
        texts: List[str] = []
        if token[0]:  # else the header says ProxySQL is unreachable: the last pool readings are stale
            for n, side in enumerate(sides):
                current, servers, monitor = readings[3 * n: 3 * n + 3]
                if current is not None and current.data is not None and current.data.has("status"):
                    # PostgreSQL backends are named so; MySQL ones too while the PostgreSQL side is shown
                    prefix = f"{side.label} " if PGSQL in (side, sides[0]) else ""
                    texts += self._alarm_texts(current, servers, monitor, prefix)
        text = alarm_line(texts)
        self._alarm = (token, text)
        return text

    @staticmethod
    def _alarm_text(current, servers, monitor) -> Optional[str]:
        """The alarm of one side's readings (the MySQL side's wording)."""
        return alarm_line(ConnPoolScreen._alarm_texts(current, servers, monitor, ""))

    @staticmethod
    def _alarm_texts(current, servers, monitor, prefix: str) -> List[str]:
        config = settings_by_key(servers)
        readings = monitor.data if monitor is not None and isinstance(monitor.data, MonitorReadings) else None
        texts = []
        for key, values in pool_values(current).items():
            server = readings.server(key[1], key[2]) if readings is not None else None
            text = health.alarm(values[2], config.get(key), server, f"{prefix}{key[1]}:{key[2]}")
            if text:
                texts.append(text)
        return texts


SCREEN = ConnPoolScreen
