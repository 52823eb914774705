"""ProxySQL's monitor logs, read incrementally: why a backend is out.

ProxySQL's monitor pings every backend, opens test connections, checks read_only on servers in
replication hostgroups and measures replication lag on servers with max_replication_lag > 0.
Each check is a row in ``monitor.mysql_server_<kind>_log``. ProxySQL 3.x monitors its
PostgreSQL backends as well, in ``monitor.pgsql_server_<kind>_log`` with the same columns: ping
and connect (3.0.1), read_only (``pg_is_in_recovery()``, later 3.x); it measures no replication
lag there. The PostgreSQL side's collector is this one's twin (collectors.sides.for_side) reading
the logs declared for that side. The tables keep hours of rows
(mysql-monitor_history), so they are never read whole: one query per reading takes the rows
newer than the last one seen, from all four logs at once (UNION ALL), plus ProxySQL's own clock.

"Last seen" is capped at ProxySQL's current time: ProxySQL 3.0.1 wrote rows stamped about 80
minutes in the future, and a reader that trusted them would see no new rows until then. Rows
from the future are therefore read again each time and kept only once, also after the clock has
passed them: ProxySQL's clock (SQLite's strftime('%s','now')) is in whole seconds, so every check
of the current second is from its future and comes again with the next reading.

The first reading starts one minute before the newest row of each log. A log this ProxySQL
doesn't have (older versions) or that this user may not read is left out of later readings and
named in the snapshot, so the screen can say so in one line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from proxytop.core import Collector
from proxytop.collectors.proxysql import PROXYSQL
from proxytop.metrics.health import Entry, MonitorReadings, ServerMonitor

SCHEMA = "monitor"
FIRST_WINDOW_US = 60 * 1000000  # the first reading covers the minute before each log's newest row
ROWS_PER_READING = 20000  # a reading never brings more (the next one continues where it stopped)
KEEP = {"ping": 20, "connect": 10, "read_only": 20, "lag": 61}  # entries kept per server and kind

@dataclass(frozen=True)
class MonitorLog:
    """One monitor table and the names of its columns (kept here, in one place)."""

    kind: str
    table: str
    success: str
    error: str
    value: Optional[str] = None
    sides: Tuple[str, ...] = ("mysql", "pgsql")  # the sides whose monitor keeps this log


LOGS: Tuple[MonitorLog, ...] = (
    MonitorLog("ping", "mysql_server_ping_log", "ping_success_time_us", "ping_error"),
    MonitorLog("connect", "mysql_server_connect_log", "connect_success_time_us", "connect_error"),
    MonitorLog("read_only", "mysql_server_read_only_log", "success_time_us", "error", "read_only"),
    # ProxySQL's PostgreSQL monitor measures no replication lag (3.0: ping, connect, read_only)
    MonitorLog("lag", "mysql_server_replication_lag_log", "success_time_us", "error", "repl_lag", sides=("mysql",)),
)


def monitor_query(logs: Sequence[MonitorLog], after: Mapping[str, Optional[int]], limit: int = ROWS_PER_READING) -> str:
    """One SQL statement that reads every log in ``logs`` newer than ``after[kind]`` (or the
    minute before its newest row when None), oldest first, with ProxySQL's clock first.

    >>> sql = monitor_query(LOGS[:1], {"ping": 5})
    >>> "from monitor.mysql_server_ping_log where time_start_us > 5" in sql
    True
    """
    parts = ["select 'now' as kind, null as hostname, null as port, "
             "cast(strftime('%s','now') as integer) * 1000000 as time_start_us, "
             "null as success_us, null as error, null as value"]
    for log in logs:
        table = f"{SCHEMA}.{log.table}"
        start = after.get(log.kind)
        bound = str(int(start)) if start is not None else \
            f"(select max(time_start_us) from {table}) - {FIRST_WINDOW_US}"
        value = log.value or "null"
        parts.append(f"select '{log.kind}', hostname, port, time_start_us, {log.success}, {log.error}, {value} "
                     f"from {table} where time_start_us > {bound}")
    union = " union all ".join(parts)
    return f"select * from ({union}) order by kind <> 'now', time_start_us limit {int(limit) + 1}"


_NO_TABLE = re.compile(r"no such table:\s*(?:monitor\.)?([a-z_]+)", re.IGNORECASE)


def missing_table(message: str) -> Optional[str]:
    """The table an SQLite 'no such table' error names.

    >>> missing_table("ProxySQL Admin Error: no such table: monitor.mysql_server_read_only_log")
    'mysql_server_read_only_log'
    """
    match = _NO_TABLE.search(message or "")
    return match.group(1) if match else None


def _int(value) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class MonitorLogs(Collector):
    """monitor.mysql_server_{ping,connect,read_only,replication_lag}_log, newest rows only.

    One query per reading, at most every 2 s (the monitor itself checks every 1.5-10 s). The
    collector remembers where each log stopped; its snapshots are frozen copies of the latest
    entries per server (unchanged servers share their previous copy)."""

    name = "proxysql.monitor_logs"
    source = PROXYSQL
    default_interval = 2.0
    min_interval = 2.0
    own_pace = True
    history = 2
    logs: Tuple[MonitorLog, ...] = LOGS

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self._after: Dict[str, Optional[int]] = {log.kind: None for log in self.logs}
        self._unavailable: Dict[str, str] = {}
        self._servers: Dict[str, ServerMonitor] = {}
        self._future: Set[Tuple] = set()  # rows stamped after ProxySQL's clock, already kept
        self._session = None

    def collect(self, session) -> MonitorReadings:
        if session is not self._session:  # a new connection (maybe a restarted ProxySQL): start over
            self.reset()
            self._session = session
        for _attempt in range(len(self.logs) + 1):
            logs = [log for log in self.logs if log.kind not in self._unavailable]
            if not logs:
                break
            try:
                table = session.query(monitor_query(logs, self._after))
            except Exception as exc:
                name = missing_table(str(exc))
                log = next((l for l in logs if l.table == name), None)
                if log is None:
                    if getattr(session, "is_admin", True) or not _is_query_error(exc):
                        raise
                    for each in logs:  # the stats user of a ProxySQL that keeps monitor to admins
                        self._unavailable[each.kind] = "only an admin user can read it"
                    break
                admin = getattr(session, "is_admin", True)
                self._unavailable[log.kind] = "not in this ProxySQL" if admin else \
                    "this user can't read it (an admin user can)"
                continue
            return self._absorb(table.columns, table.rows)
        return MonitorReadings(servers=dict(self._servers), unavailable=self._unavailable_tuple())

    def _unavailable_tuple(self) -> Tuple[Tuple[str, str], ...]:
        return tuple((log.kind, self._unavailable[log.kind]) for log in self.logs if log.kind in self._unavailable)

    def _absorb(self, columns: Sequence[str], rows: Iterable[tuple]) -> MonitorReadings:
        rows = list(rows)
        now_us = None
        fresh: Dict[str, Dict[str, List[Entry]]] = {}
        newest: Dict[str, int] = {}
        taken = 0
        for row in rows:
            kind, host, port, start, success, error, value = row[:7]
            start = _int(start)
            if kind == "now":
                now_us = start
                continue
            if start is None or kind not in KEEP:
                continue
            if taken >= ROWS_PER_READING:
                break  # the rest comes with the next reading, which starts after the last kept
            taken += 1
            newest[kind] = max(newest.get(kind, start), start)
            key = (kind, host, port, start)
            if key in self._future:
                continue  # kept when it was ahead of ProxySQL's clock, read again since
            if now_us is not None and start > now_us:
                self._future.add(key)
            entry: Entry = (start, _int(success), error, value)
            fresh.setdefault(f"{host}:{port}", {}).setdefault(kind, []).append(entry)
        for kind, last in newest.items():
            capped = min(last, now_us) if now_us is not None else last
            before = self._after.get(kind)
            self._after[kind] = capped if before is None else max(before, capped)
        # forgotten once no reading can bring them again (they are not after the kind's bound)
        self._future = {key for key in self._future if key[3] > (self._after.get(key[0]) or 0)}
        servers = dict(self._servers)
        for server, kinds in fresh.items():
            old = servers.get(server) or ServerMonitor()
            changes = {kind: (old.entries(kind) + tuple(entries))[-KEEP[kind]:] for kind, entries in kinds.items()}
            servers[server] = ServerMonitor(**{**{k: old.entries(k) for k in KEEP}, **changes})
        self._servers = servers
        return MonitorReadings(servers=servers, unavailable=self._unavailable_tuple(), new_rows=taken,
                               server_now_us=now_us)


def _is_query_error(exc: BaseException) -> bool:
    """An error answered by ProxySQL for this query (not a broken connection)."""
    return "ProxySQL Admin Error" in str(exc) or "no such" in str(exc).lower()
