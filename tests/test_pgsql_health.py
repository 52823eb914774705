"""Backend health on the PostgreSQL side of ProxySQL 3.x: the monitor-log twin (pgsql_server_*_log),
ConnPool's health columns and Enter health view there, and the header's backend alarm covering
both sides' backends on every screen. Against the admin double serving the 3.0.1 recording, in
which PostgreSQL is stopped at t≈60 s and started again at t≈100 s (both pgsql hostgroups
SHUNNED, connect checks refused), and with worked readings for the pure parts."""
from __future__ import annotations

import doctest
import importlib
import re
from types import SimpleNamespace
from typing import Dict, Optional, Tuple

import pytest

from proxytop.core import Snapshot, Table
from proxytop.collectors.monitor import MonitorLogs, MonitorReadings, ServerMonitor
from proxytop.collectors.sides import for_side
from proxytop.metrics import health
from proxytop.metrics.sides import MYSQL, PGSQL
from proxytop.polling.connection import Endpoint, open_admin
from proxytop.screens.connpool import ConnPoolScreen
from tests.proxysql_double import ProxySQLDouble, Recording
from tests.terminal import ENTER, ESC

POOL = ("hostgroup", "srv_host", "srv_port", "status", "ConnUsed", "ConnFree", "ConnOK", "ConnERR", "MaxConnUsed",
        "Queries", "Bytes_data_sent", "Bytes_data_recv", "Latency_us")
REFUSED = "Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?"
PGSQL_ALARM = r"! PgSQL 127\.0\.0\.1:5442 SHUNNED"


@pytest.fixture(scope="module")
def recording():
    return Recording.load("3.0")


def outage_double(recording, pool_frame=62, log_frame=16):
    """The pools at t≈62 s (both pgsql hostgroups SHUNNED, MySQL ONLINE); the pgsql monitor
    logs as read at t≈80 s (connect checks refused since t≈70 s)."""
    double = ProxySQLDouble(recording=recording, start_frame=pool_frame)
    for table in ("pgsql_server_connect_log", "pgsql_server_ping_log"):
        double.set_frame(table, log_frame)
    return double.start()


# ----- the monitor-log twin against the double ---------------------------------------------------

def test_the_pgsql_monitor_twin_reads_its_own_logs_with_its_own_state(recording):
    double = outage_double(recording)
    try:
        session = open_admin(Endpoint(port=double.port, user="admin", password="admin", timeout=5.0))
        mysql = MonitorLogs()
        twin = for_side(mysql, PGSQL)
        assert twin.name == "proxysql.pgsql.monitor_logs" and for_side(mysql, PGSQL) is twin
        assert [log.table for log in twin.logs] == ["pgsql_server_ping_log", "pgsql_server_connect_log",
                                                    "pgsql_server_read_only_log"]  # no replication lag log
        readings = twin.collect(session)
        sent = [q for q in double.queries() if "monitor." in q]
        assert all("mysql_server" not in q for q in sent) and any("pgsql_server_connect_log" in q for q in sent)
        # 3.0.1 has no pgsql_server_read_only_log (later 3.x: pg_is_in_recovery()): named, the others read
        assert readings.unavailable == (("read_only", "not in this ProxySQL"),)
        server = readings.server("127.0.0.1", "5442")
        count, _since, message = health.failure_run(server.connect)
        assert count >= 1 and message == REFUSED
        # the MySQL side's collector keeps its own place in its own logs
        assert mysql._after == {"ping": None, "connect": None, "read_only": None, "lag": None}
        theirs = mysql.collect(session)
        assert theirs.server("127.0.0.1", "3341").ping and theirs.server("127.0.0.1", "5442") is None
        assert twin._after["connect"] is not None and twin._after is not mysql._after
    finally:
        double.stop()


# ----- the header alarm and the health view, from worked readings ---------------------------------

class View:
    """What a screen reads: {collector name: (previous, current)} and a connected ProxySQL."""

    def __init__(self, readings: Dict[str, Tuple[Optional[Snapshot], Snapshot]], connected=True):
        self.by_name = readings
        self.connected = connected

    def latest(self, name):
        return self.by_name.get(name, (None, None))[1]

    def pair(self, name):
        return self.by_name.get(name, (None, None))

    def readings(self, name, after, until):
        return tuple(s for s in self.history(name) if (after is None or s.taken_at > after) and s.taken_at <= until)

    def not_recorded(self, name):
        return False

    def history(self, name):
        return tuple(s for s in self.pair(name) if s is not None)

    def error(self, name):
        return None

    def state(self, source):
        return SimpleNamespace(connected=self.connected)

    def source(self, name):
        return SimpleNamespace(session=SimpleNamespace(is_admin=True, version=(3, 0, 1), pgsql_servers=2,
                                                       tables=frozenset({"runtime_pgsql_servers"})))

    def now(self):
        return 101.0

    def interval_in_force(self, name):
        return 1.0


def pool(name, statuses, at):
    rows = tuple((hg, host, port, status, "0", "0", "4", "94", "4", "219836", "1", "1", "206")
                 for (hg, host, port), status in statuses)
    return Snapshot(name, Table(POOL, rows), at, 0.01, wall_time=1.8e9 + at)


def readings(mysql_status="ONLINE", pgsql_status="SHUNNED", errors=()):
    start = 1_795_387_826_250_696
    monitor = MonitorReadings(servers={"127.0.0.1:5442": ServerMonitor(
        ping=((start - 2_000_000, 8346, None, None), (start + 4_830_000_000_000, 0, None, None)),  # 3.0.1's future ping
        connect=((start - 10_000_000, 95147, None, None), (start, 0, REFUSED, None),
                 (start + 10_307_945, 0, REFUSED, None)))}, server_now_us=start + 12_000_000,
        unavailable=(("read_only", "not in this ProxySQL"),))  # as 3.0.1 answers
    servers = Snapshot("proxysql.pgsql.runtime_servers", Table(
        ("hostgroup_id", "hostname", "port", "status", "weight", "compression", "max_connections",
         "max_replication_lag", "use_ssl", "max_latency_ms", "comment"),
        (("30", "127.0.0.1", "5442", "ONLINE", "1", "0", "200", "0", "0", "0", "pg-writer"),
         ("40", "127.0.0.1", "5442", "ONLINE", "100", "0", "100", "0", "0", "0", "pg-reader"))), 90.0, 0.01)
    error_columns = ("hostgroup", "hostname", "port", "username", "client_address", "database", "sqlstate",
                     "count_star", "first_seen", "last_seen", "last_error")
    return {
        "proxysql.connection_pool": (None, pool("proxysql.connection_pool", [(("10", "127.0.0.1", "3341"), mysql_status)],
                                                100.0)),
        "proxysql.pgsql.connection_pool": (
            pool("proxysql.pgsql.connection_pool", [(("30", "127.0.0.1", "5442"), "ONLINE"),
                                                    (("40", "127.0.0.1", "5442"), "ONLINE")], 99.0),
            pool("proxysql.pgsql.connection_pool", [(("30", "127.0.0.1", "5442"), pgsql_status),
                                                    (("40", "127.0.0.1", "5442"), pgsql_status)], 100.0)),
        "proxysql.pgsql.runtime_servers": (None, servers),
        "proxysql.pgsql.monitor_logs": (None, Snapshot("proxysql.pgsql.monitor_logs", monitor, 99.5, 0.01,
                                                       wall_time=1.8e9 + 99.5)),
        "proxysql.pgsql.errors": (None, Snapshot("proxysql.pgsql.errors", Table(error_columns, tuple(errors)), 100.0, 0.01)),
    }


def screen_on(side):
    return ConnPoolScreen(SimpleNamespace(args=SimpleNamespace(side=side.key)))


def test_a_shunned_pgsql_backend_is_in_the_alarm_on_either_side():
    view = View(readings())
    for side in (MYSQL, PGSQL):
        assert screen_on(side).alarm(view) == "PgSQL 127.0.0.1:5442 SHUNNED (2 failed connection checks)"
    both = View(readings(mysql_status="OFFLINE_HARD"))
    assert screen_on(MYSQL).alarm(both) == "127.0.0.1:3341 OFFLINE_HARD  (+1 more)"  # the shown side's first
    assert screen_on(PGSQL).alarm(both) == "PgSQL 127.0.0.1:5442 SHUNNED (2 failed connection checks)  (+1 more)"
    mysql_only = View(readings(mysql_status="OFFLINE_HARD", pgsql_status="ONLINE"))
    assert screen_on(PGSQL).alarm(mysql_only) == "MySQL 127.0.0.1:3341 OFFLINE_HARD"  # which side, said there
    assert screen_on(PGSQL).alarm(View(readings(pgsql_status="ONLINE"))) is None
    assert screen_on(PGSQL).alarm(View(readings(), connected=False)) is None  # stale readings: the header says why


def test_the_status_log_of_each_side_is_its_own_and_the_alarm_keeps_both():
    screen = screen_on(MYSQL)
    online, shunned = readings(), readings()
    online["proxysql.pgsql.connection_pool"] = (None, online["proxysql.pgsql.connection_pool"][0])  # ONLINE at 99 s
    screen.alarm(View(online))  # the MySQL side shown: the alarm still folds the pgsql pool
    screen.alarm(View(shunned))
    assert [(c.key[0], c.old, c.new) for c in screen.status_logs["pgsql"].changes] == \
        [("30", "ONLINE", "SHUNNED"), ("40", "ONLINE", "SHUNNED")]
    assert set(screen.status_logs["mysql"].since) == {("10", "127.0.0.1", "3341")}
    assert screen.status_logs["mysql"].changes == ()
    screen.set_side(PGSQL)
    assert screen.status_log is screen.status_logs["pgsql"]


def test_pgsql_rows_have_monitor_and_in_state_but_no_lag_column():
    screen = screen_on(PGSQL)
    rows = {r["hostgroup"]: r for r in screen.rows(View(readings()))}
    assert rows[30]["status"] == "SHUNNED" and rows[30]["in_state"] == 0.0 and rows[30]["_state_seen"]
    assert rows[30]["monitor"] == "connect err 2s ago"  # the future ping (0 µs, no error) says nothing
    keys = [c.key for c in screen.columns]
    assert "monitor" in keys and "in_state" in keys and "lag" not in keys
    assert "ro" not in keys  # 3.0.1 has no read_only log: no column of dashes
    later = readings()
    monitor = later["proxysql.pgsql.monitor_logs"][1]
    checked = MonitorReadings(servers={"127.0.0.1:5442": ServerMonitor(read_only=((1, 300, None, "0"),))},
                              server_now_us=monitor.data.server_now_us)
    later["proxysql.pgsql.monitor_logs"] = (None, Snapshot(monitor.collector, checked, 100.5, 0.01))
    rows = screen.rows(View(later))
    assert "ro" in [c.key for c in screen.columns] and rows[0]["ro"] == "no"
    assert "lag" in [c.key for c in screen_on(MYSQL).columns]


def text_of(detail):
    return "\n".join("".join(t for t, _s in line) for line in detail.lines)


def test_the_pgsql_health_view_says_why_in_its_own_words():
    screen = screen_on(PGSQL)
    view = View(readings(errors=[("30", "127.0.0.1", "5442", "sbtest", "", "sbtest", "08006", "12", "1795387820",
                                  "1795387830", "server closed the connection unexpectedly")]))
    row = next(r for r in screen.rows(view) if r["hostgroup"] == 30)
    detail = screen.detail(row, view)
    text = text_of(detail)
    assert detail.title == "Health of PostgreSQL backend 127.0.0.1:5442 in hostgroup 30"
    since = health.clock(1_795_387_826_250_696)
    assert f"SHUNNED: 2 failed connection checks since {since}: Connection refused Is the server running" in text
    assert "weight 1  max_connections 200  max_latency_ms 0" in text and "max_replication_lag" not in text
    assert "ONLINE \u2192 SHUNNED" in text  # the state change seen between the two pool readings
    assert "connect: last 3 of 3 read, 2 failed" in text and "replication lag" not in text
    assert "read_only: not read: not in this ProxySQL" in text
    assert "ok in 8.35ms" in text and "no time and no error: not a finished check" in text  # 3.0.1's future ping
    assert "Errors (stats_pgsql_errors)" in text and "08006 connection_exception" in text
    assert "hg 30 sbtest@sbtest" in text
    assert "Free connections (stats_pgsql_free_connections" in text
    assert "mysql" not in text.lower().replace("mysql_", "")  # no MySQL wording left
    assert screen.health_open and "proxysql.pgsql.free_connections" in screen.active_collectors()


def test_a_shunned_pgsql_backend_without_monitor_failures_names_the_pgsql_settings():
    screen = screen_on(PGSQL)
    view = View(readings())
    view.by_name.pop("proxysql.pgsql.monitor_logs")
    row = next(r for r in screen.rows(view) if r["hostgroup"] == 40)
    text = text_of(screen.detail(row, view))
    assert "pgsql-shun_on_failures" in text and "mysql-shun" not in text


@pytest.mark.parametrize("name", ["proxytop.screens.connpool", "proxytop.metrics.health", "proxytop.collectors.sides"])
def test_worked_examples_in_docstrings(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


# ----- the real program in a terminal ----------------------------------------------------------

def count(double, table):
    return sum(table in q for q in double.queries())


def test_shunned_pgsql_backend_in_the_header_on_every_screen_and_its_health_view(proxytop_term, recording):
    double = outage_double(recording)
    try:
        term = proxytop_term("-P", str(double.port), "-d", "1", "--no-discover", cols=170, rows=50)
        term.wait_until(lambda s: "127.0.0.1:3341" in s and re.search(PGSQL_ALARM, s) is not None, timeout=20,
                        what="the MySQL side's ConnPool with the PostgreSQL backend's alarm")
        term.send("3")  # GloStat, MySQL side
        term.wait_until(lambda s: "MyHGM_myconnpoll" in s and re.search(PGSQL_ALARM, s) is not None,
                        what="the alarm on GloStat")
        term.send("m")  # GloStat, PostgreSQL side
        term.wait_until(lambda s: "PgHGM_pgconnpoll" in s and re.search(PGSQL_ALARM, s) is not None,
                        what="the alarm on the PostgreSQL side's GloStat")
        term.send("1")
        screen = term.wait_until(lambda s: "InState" in s and "Monitor" in s and "connect err" in s, timeout=20,
                                 what="ConnPool's PostgreSQL side with its health columns")
        titles = next(line for line in screen.splitlines() if "Server" in line and "Status" in line)
        assert " Lag " not in titles + " " and " RO " not in titles + " "
        assert "Monitor logs not read (read_only): not in this ProxySQL." in screen
        term.send(ENTER)
        screen = term.wait_until(lambda s: "Health of PostgreSQL backend 127.0.0.1:5442" in s
                                 and "Errors (stats_pgsql_errors)" in s and "no errors recorded" in s,
                                 what="the PostgreSQL backend's health view")
        assert "max_replication_lag" not in screen and "replication lag:" not in screen
        assert "connect: " in screen and "Connection refused" in screen
        term.wait_until(lambda s: count(double, "stats_pgsql_free_connections") >= 1, what="free connections read")
        term.send(ESC)
        term.wait_until(lambda s: "Health of" not in s, what="back on the table")
        assert count(double, "stats_mysql_free_connections") == 0 and count(double, "stats_mysql_errors") == 0
        assert not any("_reset" in q for q in double.queries())
    finally:
        double.stop()


def test_the_alarm_reads_a_side_without_backends_rarely(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording)
    double.transforms["stats_mysql_connection_pool"] = lambda columns, rows: (columns, [])  # no MySQL backends
    double.start()
    try:
        term = proxytop_term("-P", str(double.port), "-d", "1", "--no-discover", "--side", "pgsql", "--screen",
                             "glostat", cols=150, rows=30)
        term.wait_until(lambda s: "PgHGM_pgconnpoll" in s and count(double, "stats_pgsql_connection_pool") >= 2,
                        timeout=20, what="GloStat with the alarm's pgsql pool readings")
        mysql_reads = count(double, "stats_mysql_connection_pool")
        assert mysql_reads >= 1  # read once: found empty
        pgsql_reads = count(double, "stats_pgsql_connection_pool")
        term.wait_until(lambda s: count(double, "stats_pgsql_connection_pool") >= pgsql_reads + 4, timeout=30,
                        what="four more pgsql pool readings (8 s at the alarm's 2 s pace)")
        assert count(double, "stats_mysql_connection_pool") <= mysql_reads + 1  # at most one under way
    finally:
        double.stop()


def test_the_stats_user_note_names_the_pgsql_table_and_no_lag_threshold():
    class StatsUser(View):
        def source(self, name):
            return SimpleNamespace(session=SimpleNamespace(is_admin=False, version=(3, 0, 1), pgsql_servers=None,
                                                           tables=frozenset({"stats_pgsql_global"})))

    notes = ["".join(t for t, _s in line) for line in screen_on(PGSQL).notes(StatsUser(readings()))]
    assert "Weight, MaxConn, Used%, Comment need an admin user (runtime_pgsql_servers)." in notes
    mysql = ["".join(t for t, _s in line) for line in screen_on(MYSQL).notes(StatsUser(readings()))]
    assert any("and the lag thresholds need an admin user (runtime_mysql_servers)" in n for n in mysql)
