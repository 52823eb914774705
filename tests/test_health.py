"""Backend health: the monitor-log collector against the ProxySQL double (recorded monitor logs
of a real 2.7.2 cluster and of 3.0.1), and the pure health logic with worked numbers."""
from __future__ import annotations

import dataclasses
import re
import time

import pytest

from proxytop.core import Snapshot, Table
from proxytop.collectors.monitor import KEEP, ROWS_PER_READING, MonitorLogs, MonitorReadings, ServerMonitor
from proxytop.metrics import health
from proxytop.polling.connection import Endpoint, open_admin
from screens.connpool import with_health
from tests.proxysql_double import ProxySQLDouble, Recording

NODE1 = "127.0.0.1:6042"


@pytest.fixture(scope="module")
def cluster():
    return Recording.load("cluster", node=NODE1)


def session_of(double, user="admin", timeout=5.0):
    return open_admin(Endpoint(port=double.port, user=user, password=user, timeout=timeout))


def monitor_queries(double):
    return [q for q in double.queries() if "monitor." in q]


# ----- the collector against the double ----------------------------------------------------------

def test_reads_all_four_logs_in_one_query_then_only_newer_rows(cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=20).start()
    try:
        session = session_of(double)
        collector = MonitorLogs()
        first = collector.collect(session)
        assert len(monitor_queries(double)) == 1  # one admin query per reading
        sql = monitor_queries(double)[0]
        for table in ("mysql_server_ping_log", "mysql_server_connect_log", "mysql_server_read_only_log",
                      "mysql_server_replication_lag_log"):
            assert f"monitor.{table}" in sql
        assert "- 60000000" in sql  # the first reading: the minute before each log's newest row
        assert first.unavailable == ()
        assert set(first.servers) == {"127.0.0.1:3331", "127.0.0.1:3332", "127.0.0.1:3333"}
        replica = first.server("127.0.0.1", "3333")
        assert replica.lag and replica.read_only and replica.ping
        assert first.server("127.0.0.1", "3331").lag == ()  # max_replication_lag 0: lag not monitored
        newest_ping = max(e[0] for s in first.servers.values() for e in s.ping)

        second = collector.collect(session)
        sql = monitor_queries(double)[1]
        bounds = [int(n) for n in re.findall(r"time_start_us > (\d+)", sql)]
        assert len(bounds) == 4 and newest_ping in bounds  # incremental: after the newest row seen
        assert second.new_rows > 0
        times = [e[0] for e in second.server("127.0.0.1", "3333").ping]
        assert times == sorted(times) and len(times) == len(set(times))  # nothing read twice
        assert len(second.server("127.0.0.1", "3333").ping) <= KEEP["ping"]
    finally:
        double.stop()


def test_the_stats_user_reads_the_monitor_logs_as_the_recorded_proxysql_allowed(cluster):
    # The recording: `select * from monitor.mysql_server_ping_log limit 1` as stats answered a row.
    assert cluster.fixed[("stats", "select * from monitor.mysql_server_ping_log limit 1")]["rows"]
    double = ProxySQLDouble(recording=cluster, start_frame=20).start()
    try:
        session = session_of(double, "stats")
        assert not session.is_admin
        readings = MonitorLogs().collect(session)
        assert readings.unavailable == () and readings.server("127.0.0.1", "3332").lag
    finally:
        double.stop()


def test_a_log_this_proxysql_lacks_is_named_and_the_others_still_read(recording):
    # A ProxySQL without a read_only or replication-lag log (the 2.7 recording's tables, without those two)
    lacking = dataclasses.replace(recording, series={name: frames for name, frames in recording.series.items()
                                                     if name not in ("mysql_server_read_only_log",
                                                                     "mysql_server_replication_lag_log")})
    double = ProxySQLDouble(recording=lacking).start()
    try:
        session = session_of(double)
        collector = MonitorLogs()
        readings = collector.collect(session)
        assert dict(readings.unavailable) == {"read_only": "not in this ProxySQL", "lag": "not in this ProxySQL"}
        assert readings.server("127.0.0.1", "3311").ping
        count = len(monitor_queries(double))
        collector.collect(session)
        assert len(monitor_queries(double)) == count + 1  # the missing logs are not asked again
        assert "read_only_log" not in monitor_queries(double)[-1]
    finally:
        double.stop()


def test_monitor_disabled_gives_empty_readings(cluster):
    double = ProxySQLDouble(recording=cluster).start()
    for table in ("mysql_server_ping_log", "mysql_server_connect_log", "mysql_server_read_only_log",
                  "mysql_server_replication_lag_log"):
        double.transforms[table] = lambda columns, rows: (columns, [])
    try:
        readings = MonitorLogs().collect(session_of(double))
        assert readings.servers == {} and readings.unavailable == () and readings.new_rows == 0
    finally:
        double.stop()


def test_a_hundred_thousand_rows_are_read_a_bounded_part_at_a_time(cluster):
    double = ProxySQLDouble(recording=cluster).start()

    def huge(columns, rows):
        start = columns.index("time_start_us")
        base = max(int(r[start]) for r in rows)
        extra = [["10.0.0.%d" % (n % 250), "3306", str(base - 7_200_000_000 + n * 72_000), "100", None]
                 for n in range(100_000)]
        return columns, extra + rows

    double.transforms["mysql_server_ping_log"] = huge
    try:
        collector = MonitorLogs()
        session = session_of(double, timeout=60.0)  # the double fills 100,000 rows into SQLite per query
        readings = collector.collect(session)
        # the first reading covers the last minute only, not two hours of 100,000 rows
        assert 0 < readings.new_rows <= ROWS_PER_READING
        assert readings.new_rows < 5_000
        assert all(len(s.ping) <= KEEP["ping"] for s in readings.servers.values())
    finally:
        double.stop()


def test_future_stamped_rows_are_kept_once_and_later_rows_still_arrive(cluster):
    """ProxySQL 3.0.1 wrote ping rows about 80 minutes in the future: "last seen" is capped at
    ProxySQL's clock, so a future row doesn't hide the rows that follow it."""
    collector = MonitorLogs()
    columns = ("kind", "hostname", "port", "time_start_us", "success_us", "error", "value")
    now = 1_000_000_000_000_000
    future = ("ping", "h", "1", now + 4_800_000_000, 0, "Can't connect", None)
    first = collector._absorb(columns, [("now", None, None, now, None, None, None),
                                        ("ping", "h", "1", now - 1_000_000, 120, None, None), future])
    assert [e[0] for e in first.server("h", "1").ping] == [now - 1_000_000, now + 4_800_000_000]
    assert collector._after["ping"] == now  # capped at ProxySQL's clock, not the future row
    later = now + 2_000_000
    second = collector._absorb(columns, [("now", None, None, later, None, None, None),
                                         ("ping", "h", "1", later - 500_000, 90, None, None), future])
    times = [e[0] for e in second.server("h", "1").ping]
    assert times.count(now + 4_800_000_000) == 1 and later - 500_000 in times


def test_3_0_recording_monitor_logs_read(tmp_path):
    double = ProxySQLDouble(recording=Recording.load("3.0")).start()
    try:
        readings = MonitorLogs().collect(session_of(double))
        assert readings.server("127.0.0.1", "3341").ping
        assert readings.server_now_us is not None
    finally:
        double.stop()


def test_null_lag_and_non_utf8_error_text_and_an_unconfigured_server(cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=20).start()

    def odd(columns, rows):
        start = columns.index("time_start_us")
        newest = max(int(r[start]) for r in rows)
        return columns, rows + [["127.0.0.1", "3332", str(newest + 1), "150", None, None],
                                ["10.9.9.9", "3306", str(newest + 2), "0", None, b"caf\xe9 \xff timeout"]]

    double.transforms["mysql_server_replication_lag_log"] = odd
    try:
        readings = MonitorLogs().collect(session_of(double))
        assert health.latest_lag(readings.server("127.0.0.1", "3332"))[0] == health.NULL_LAG
        gone = readings.server("10.9.9.9", "3306")
        assert gone is not None and "timeout" in gone.lag[-1][2]  # decoded with replacement characters
        rows = [{"_id": ("20", "127.0.0.1", "3332"), "status": "ONLINE"}]
        with_health(rows, {}, Snapshot("m", readings, 1.0, 0.0), health.StatusLog(), readings.server_now_us, 0.0)
        assert rows[0]["lag"] == "NULL"  # the unconfigured server adds no row and breaks nothing
    finally:
        double.stop()


# ----- the pure logic, worked numbers ------------------------------------------------------------

LAGGING = ServerMonitor(lag=((1_000_000, 150, None, "3"), (3_000_000, 140, None, "12")))


def test_reason_for_each_status():
    settings = {"max_replication_lag": "5"}
    assert health.reason("SHUNNED_REPLICATION_LAG", settings, LAGGING) == "SHUNNED_REPLICATION_LAG: lag 12s > 5s"
    null = ServerMonitor(lag=((1, 1, None, None),))
    assert "Seconds_Behind_Master NULL" in health.reason("SHUNNED_REPLICATION_LAG", settings, null)
    pings = ServerMonitor(ping=((10, 200, None, None),) + tuple((t, 0, "Can't connect to MySQL server on '10.0.0.1'", None)
                                                                for t in (20_000_000, 22_000_000, 24_000_000)))
    text = health.reason("SHUNNED", settings, pings)
    assert text.startswith(f"SHUNNED: 3 failed pings since {health.clock(20_000_000)}: Can't connect")
    assert "connection errors" in health.reason("SHUNNED", settings, ServerMonitor(), conn_err_s=7.0)
    assert health.reason("ONLINE", settings, LAGGING).startswith("ONLINE, but lag 12s > 5s")
    assert health.reason("ONLINE", {"max_replication_lag": "0"}, LAGGING) == "ONLINE: taking traffic"
    assert health.reason("OFFLINE_SOFT", None, None).startswith("OFFLINE_SOFT: draining")
    assert "needs an admin user" in health.reason("SHUNNED_REPLICATION_LAG", None, LAGGING)


def test_alarm_lines():
    settings = {"max_replication_lag": "5"}
    assert health.alarm("SHUNNED_REPLICATION_LAG", settings, LAGGING, "127.0.0.1:3313") == \
        "127.0.0.1:3313 SHUNNED_REPLICATION_LAG (lag 12s > 5s)"
    assert health.alarm("ONLINE", settings, LAGGING, "h:1") == "h:1 ONLINE, lag 12s > 5s"
    assert health.alarm("ONLINE", settings, ServerMonitor(lag=((1, 1, None, "5"),)), "h:1") is None  # 5 is not > 5
    assert health.alarm("OFFLINE_HARD", None, None, "h:1") == "h:1 OFFLINE_HARD"


def test_monitor_cell_latency_or_failed_check_with_age():
    ok = ServerMonitor(ping=((10_000_000, 1500, None, None),), connect=((9_000_000, 400, None, None),))
    assert health.monitor_cell(ok, 11e6) == 1.5  # the newest check (the ping), in ms
    failed = ServerMonitor(ping=((10_000_000, 0, "timeout", None),), connect=((12_000_000, 0, "refused", None),))
    assert health.monitor_cell(failed, 15e6) == "connect err 3s ago"
    assert health.monitor_cell(None, 1.0) is None


def test_in_state_tracks_changes_seen_and_marks_the_first_status_as_at_least():
    key = ("20", "127.0.0.1", "3333")
    log = health.track(health.StatusLog(), [(key, "ONLINE")], 1000.0, 1.0)
    log = health.track(log, [(key, "ONLINE")], 1001.0, 2.0)
    rows = [{"_id": key, "status": "ONLINE"}]
    with_health(rows, {}, None, log, None, 1030.0)
    assert rows[0]["in_state"] == 30.0 and rows[0]["_state_seen"] is False
    log = health.track(log, [(key, "SHUNNED_REPLICATION_LAG")], 1040.0, 3.0)
    log = health.track(log, [(key, "ONLINE")], 1110.0, 4.0)
    rows = [{"_id": key, "status": "ONLINE"}]
    with_health(rows, {"_": {}}, None, log, None, 1125.0)
    assert rows[0]["in_state"] == 15.0 and rows[0]["_state_seen"] is True
    assert [(c.old, c.new, c.at) for c in log.changes] == [
        ("ONLINE", "SHUNNED_REPLICATION_LAG", 1040.0), ("SHUNNED_REPLICATION_LAG", "ONLINE", 1110.0)]


def test_lag_column_values():
    readings = MonitorReadings(servers={"127.0.0.1:3333": LAGGING})
    rows = [{"_id": ("20", "127.0.0.1", "3333"), "status": "ONLINE"},
            {"_id": ("10", "127.0.0.1", "3331"), "status": "ONLINE"}]
    config = {("20", "127.0.0.1", "3333"): {"max_replication_lag": "5"}}
    with_health(rows, config, Snapshot("m", readings, 1.0, 0.0), health.StatusLog(), 4e6, 0.0)
    assert (rows[0]["lag"], rows[0]["_max_lag"]) == (12, 5)
    assert rows[1]["lag"] is None and rows[1]["ro"] is None and rows[1]["monitor"] is None


@pytest.mark.parametrize("name", ["proxytop.metrics.health", "proxytop.metrics.errnames", "proxytop.collectors.monitor",
                                  "proxytop.screens.errors"])
def test_worked_examples_in_docstrings(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
