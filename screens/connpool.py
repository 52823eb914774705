"""ConnPool: ProxySQL's connection pool, one row per backend, subtotals per hostgroup."""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Tuple

from proxytop import allnodes, units
from proxytop.collectors.proxysql import ConnectionPool, RuntimeServers
from proxytop.rates import rate, to_number
from proxytop.table import Column, Row
from proxytop.screens.base import DataView, Screen, seconds_between
from proxytop.screens.sided import SidedScreen

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


def server_key(row: Mapping) -> Tuple[str, str, str]:
    return (str(row.get("hostgroup")), str(row.get("srv_host")), str(row.get("srv_port")))


def latency_ms(row: Mapping) -> Optional[float]:
    """Latency_us (2.x) or Latency_ms (before 1.3.3), in milliseconds."""
    if row.get("Latency_us") is not None:
        value = to_number(row.get("Latency_us"))
        return None if value is None else value / 1000.0
    return to_number(row.get("Latency_ms"))


def pool_rows(previous, current, servers) -> List[Row]:
    """Pure: connection-pool table snapshots (+ runtime servers, may be None) -> screen rows."""
    if current is None or current.data is None:
        return []
    seconds = seconds_between(previous, current)
    before: Dict[Tuple, Mapping] = {}
    if previous is not None and previous.data is not None:
        before = {server_key(r): r for r in previous.data.dicts()}
    config: Dict[Tuple, Mapping] = {}
    if servers is not None and servers.data is not None:
        for r in servers.data.dicts():
            config[(str(r.get("hostgroup_id")), str(r.get("hostname")), str(r.get("port")))] = r
    rows = []
    for r in current.data.dicts():
        key = server_key(r)
        old = before.get(key)

        def per_second(field):
            return rate(old.get(field), r.get(field), seconds) if old else None

        settings = config.get(key, {})
        max_conn = to_number(settings.get("max_connections")) if settings else None
        used = to_number(r.get("ConnUsed"))
        rows.append({
            "_id": key,
            "hostgroup": to_number(r.get("hostgroup")),
            "server": f"{r.get('srv_host')}:{r.get('srv_port')}",
            "status": r.get("status"),
            "conn_used": used,
            "conn_free": to_number(r.get("ConnFree")),
            "conn_ok_s": per_second("ConnOK"),
            "conn_err_s": per_second("ConnERR"),
            "max_conn_used": to_number(r.get("MaxConnUsed")),
            "used_pct": (100.0 * used / max_conn) if (used is not None and max_conn) else None,
            "queries_s": per_second("Queries"),
            "sent_s": per_second("Bytes_data_sent"),
            "recv_s": per_second("Bytes_data_recv"),
            "latency_ms": latency_ms(r),
            "weight": to_number(settings.get("weight")) if settings else None,
            "max_connections": max_conn,
            "comment": settings.get("comment") if settings else None,
        })
    return rows


class ConnPoolScreen(SidedScreen, Screen):
    key = "connpool"
    title = "ConnPool"
    group_key = "hostgroup"
    default_sort = ("hostgroup", False)
    tiebreak = ("server",)
    columns = (
        Column("hostgroup", "HG", 4, fmt=units.plain, priority=0),
        Column("server", "Server", 18, "<", numeric=False, priority=0),
        Column("status", "Status", 12, "<", style=status_style, numeric=False, priority=0),
        Column("conn_used", "Used", 5, fmt=units.scaled, summable=True, priority=1, help="ConnUsed: connections in use"),
        Column("conn_free", "Free", 5, fmt=units.scaled, summable=True, priority=2, help="ConnFree: idle pooled connections"),
        Column("conn_ok_s", "OK/s", 6, fmt=units.scaled, summable=True, priority=4, help="new backend connections per second"),
        Column("conn_err_s", "ERR/s", 6, fmt=units.scaled, style=error_style, summable=True, priority=3,
               help="failed backend connections per second"),
        Column("max_conn_used", "MaxUsed", 7, fmt=units.scaled, priority=6, help="high-water mark of ConnUsed"),
        Column("used_pct", "Used%", 6, fmt=units.percent, style=used_style, priority=5,
               help="ConnUsed as a share of the server's max_connections (admin user)"),
        Column("queries_s", "Queries/s", 10, fmt=units.scaled, summable=True, priority=1),
        Column("sent_s", "Sent/s", 8, fmt=units.human_bytes, summable=True, priority=4, help="bytes sent to the backend per second"),
        Column("recv_s", "Recv/s", 8, fmt=units.human_bytes, summable=True, priority=4, help="bytes received from the backend per second"),
        Column("latency_ms", "Lat ms", 7, fmt=units.milliseconds, priority=2, help="monitor ping latency"),
        Column("weight", "Weight", 6, fmt=units.plain, priority=8),
        Column("max_connections", "MaxConn", 7, fmt=units.plain, priority=8),
        Column("comment", "Comment", 12, "<", numeric=False, priority=9, flexible=True),
    )

    def collectors(self):
        return [ConnectionPool(), RuntimeServers()]

    def active_collectors(self):
        return allnodes.active_collectors(self, super().active_collectors())

    def rows(self, view: DataView) -> List[Row]:
        if allnodes.on(self):  # every node's pool added up (key a)
            return allnodes.pool_rows(self, view)
        previous, current = view.pair(self.on_side(ConnectionPool.name))
        return pool_rows(previous, current, view.latest(self.on_side(RuntimeServers.name)))

    def subtotal_label(self, group):
        return ("server", f"hostgroup {units.plain(group)} total")

    def notes(self, view: DataView):
        if allnodes.on(self):
            return allnodes.notes(self, view, "stats_mysql_connection_pool")
        source = view.source("proxysql")
        session = getattr(source, "session", None)
        if session is not None and not session.is_admin:
            return [(("Weight, MaxConn, Used% and Comment need an admin user (runtime_mysql_servers).", "dim"),)]
        return []

SCREEN = ConnPoolScreen
