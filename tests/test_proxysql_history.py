"""ProxySQL's own history (stats_history): read from the ProxySQL double (the tables a real
ProxySQL 2.7.2 recorded, and longer histories of their shapes), turned into series, and seamed
to proxytop's own readings of the same figure."""
from __future__ import annotations

import doctest
import json
import subprocess
import time

import pytest

from proxytop.collectors.proxysql_history import ProxySQLHistory
from proxytop.collectors.proxysql import GlobalStatus
from proxytop.config.endpoints import Endpoint
from proxytop.metrics import proxysql_history
from proxytop.metrics.proxysql_history import (PROXYSQL, PROXYSQL_HOURLY, PROXYTOP, history_series,
                                               history_status, seamed)
from proxytop.metrics.rates import rate
from proxytop.polling.connection import open_admin
from proxytop.recordings.recording import dumps, loads
from tests.proxysql_double import ProxySQLDouble, StatsHistory
from tests.terminal import proxytop_command

# ProxySQL's clock when the recording ended (its `SELECT strftime('%s','now')`)
RECORDED_END = 1795632006


@pytest.fixture(scope="module")
def recorded():
    return StatsHistory.recorded()


def started(recording, history, **kwargs):
    return ProxySQLDouble(recording=recording, history=history, **kwargs).start()


def read(double, user="admin", reader=None):
    reader = reader or ProxySQLHistory()
    session = open_admin(Endpoint(port=double.port, user=user, password=user))
    return reader, session, reader.collect(session)


def by_name(readings):
    return {s.name: s for s in history_series(readings)}


def test_docstring_examples():
    result = doctest.testmod(proxysql_history)
    assert result.attempted > 0 and result.failed == 0


def test_the_recorded_history_read_and_its_rates_worked_by_hand(recording, recorded):
    double = started(recording, recorded)
    try:
        _, _, reading = read(double)
    finally:
        double.stop()
    assert reading.first and reading.problem is None
    assert dict(reading.intervals) == {"admin-stats_mysql_connections": 60, "admin-stats_system_cpu": 60,
                                       "admin-stats_system_memory": 60}
    # 72 raw rows a table; the one finished hour lies within the raw rows, so none is read
    assert [(name, len(table.rows)) for name, table in reading.tables] == [
        ("mysql_connections", 72), ("mysql_connections_hour", 0), ("system_cpu", 72), ("system_memory", 72),
        ("system_memory_hour", 0)]
    series = by_name([reading])
    # The last two recorded rows of mysql_connections:
    #   1795631935: Client_Connections_created 693, Questions 17903291, Slow_queries 633, Server_Connections_connected 26
    #   1795631995: Client_Connections_created 705, Questions 18236172, Slow_queries 645, Client_Connections_connected 0
    assert series["questions_per_s"].points[-1] == (1795631995.0, pytest.approx((18236172 - 17903291) / 60))
    assert series["slow_queries_per_s"].points[-1] == (1795631995.0, pytest.approx(12 / 60))
    assert series["client_connections_created_per_s"].points[-1][1] == pytest.approx(12 / 60)
    assert series["server_connections"].points[-1] == (1795631995.0, 26.0)
    assert series["client_connections"].points[-1] == (1795631995.0, 0.0)
    # system_cpu 1795631935: 39849 user + 60318 system ticks; 1795631995: 40529 + 61466.
    # (680 + 1148) ticks / 100 a second / 60 s = 30.47 % of one core
    assert series["proxysql_cpu_pct"].points[-1][1] == pytest.approx((680 + 1148) / 100 / 60 * 100)
    # system_memory 1795631995: resident 22564864, allocated 14726080 (gauges, as they are)
    assert series["proxysql_memory_bytes"].points[-1] == (1795631995.0, 22564864.0)
    assert series["proxysql_allocated_bytes"].points[-1][1] == 14726080.0
    # a rate per interval: one point fewer than rows; a gauge per row
    assert len(series["questions_per_s"].points) == 71 and len(series["server_connections"].points) == 72
    assert {s.resolution_s for s in series.values()} == {60.0}
    assert history_status([reading]) == "ProxySQL's own 1-minute history, 71 minutes"


def test_a_week_of_minutes_and_a_year_of_hours_then_only_what_is_new(recording, recorded):
    end = int(time.time()) // 60 * 60
    history = recorded.generated(end=end, hour_days=60)  # a year of hours: tests/bench_proxysql_history.py
    double = started(recording, history)
    try:
        reader, session, first = read(double)
        raw = {name: len(table.rows) for name, table in first.tables}
        assert raw["mysql_connections"] == raw["system_cpu"] == raw["system_memory"] == 7 * 24 * 60 + 1
        # the hours that ended before the first raw row only: 60 days less the week of raw rows
        assert 53 * 24 - 1 <= raw["mysql_connections_hour"] <= 53 * 24 + 1
        series = by_name([first])
        questions = series["questions_per_s"]
        assert questions.points[-1][0] == end and questions.hourly_points[-1][0] <= questions.points[0][0] - 60
        assert all(value >= 0 for _, value in questions.all_points())
        # system_cpu_hour is the SUM of cumulative ticks: no hourly CPU
        assert series["proxysql_cpu_pct"].hourly_points == () and series["proxysql_memory_bytes"].hourly_points
        assert history_status([first]) == "ProxySQL's own 1-minute history, 7 days, hourly 53 days before that"

        # ProxySQL writes its next row a minute later: only that row is read
        columns = history.columns("mysql_connections")
        last = history.rows["mysql_connections"][-1]
        written = [end + 60] + [v + 600 if c == "Questions" else v for c, v in zip(columns[1:], last[1:])]
        history.write("mysql_connections", [written])
        sent_before = len(double.queries())
        second = reader.collect(session)
        sent = double.queries()[sent_before:]
        assert not second.first and second.rows_read() == 1
        assert int(second.table("mysql_connections").rows[0][0]) == end + 60
        assert any(f"from stats_history.mysql_connections where timestamp > {end}" in q for q in sent)
        assert not any("_hour" in q for q in sent)  # the hours were read once
        questions = by_name([first, second])["questions_per_s"]
        assert questions.points[-1] == (end + 60.0, 10.0)  # 600 more in 60 s
        # and nothing new: nothing read
        assert reader.collect(session).rows_read() == 0
    finally:
        double.stop()


def test_it_is_all_read_again_before_the_engine_lets_the_whole_reading_go(recording, recorded):
    double = started(recording, recorded.generated(end=int(time.time()) // 60 * 60, hour_days=10))
    try:
        reader = ProxySQLHistory()
        reader.history = 3  # the engine keeps three readings of it: the fourth is whole again
        reader, session, first = read(double, reader=reader)
        readings = [first] + [reader.collect(session) for _ in range(3)]
        assert [r.first for r in readings] == [True, False, False, True]
        assert readings[3].table("mysql_connections_hour").rows == first.table("mysql_connections_hour").rows  # the hours too
        assert history_status(readings[1:]) == history_status(readings[:1])  # nothing lost to the engine's limit
    finally:
        double.stop()


def test_a_restart_in_the_middle_gives_no_rate_for_its_interval(recording, recorded):
    end = int(time.time()) // 60 * 60
    restart = end - 3 * 86400
    double = started(recording, recorded.generated(end=end, days=7, hour_days=0, restart_at=restart))
    try:
        _, _, reading = read(double)
    finally:
        double.stop()
    rows = reading.table("mysql_connections").rows
    at = [i for i, row in enumerate(rows) if int(row[0]) == restart][0]
    assert int(rows[at][5]) < int(rows[at - 1][5])  # Questions went back: ProxySQL started again
    questions = by_name([reading])["questions_per_s"]
    stamps = [t for t, _ in questions.points]
    assert restart not in stamps and restart + 60 in stamps and restart - 60 in stamps
    assert len(questions.points) == len(rows) - 2
    assert all(value >= 0 for _, value in questions.points)


def test_the_seam_joins_proxysqls_minutes_to_proxytops_own_readings(recording, recorded):
    end = int(time.time()) // 60 * 60 - 60
    double = started(recording, recorded.generated(end=end, days=1, hour_days=2))
    try:
        _, session, reading = read(double)
        # proxytop's own Q/s: the double's stats_mysql_global, read twice
        status = GlobalStatus()
        before, before_wall = status.collect(session), time.time()
        after, after_wall = status.collect(session), time.time()
    finally:
        double.stop()
    live_rate = rate(before["Questions"], after["Questions"], after_wall - before_wall)
    assert live_rate is not None
    history = by_name([reading])["questions_per_s"]
    joined = seamed(history, [(after_wall, live_rate)])
    assert [s.origin for s in joined.segments] == [PROXYSQL_HOURLY, PROXYSQL, PROXYTOP]
    assert [s.resolution_s for s in joined.segments] == [3600, 60.0, None]
    assert joined.seam_at == after_wall
    points = joined.points()
    assert [t for t, _ in points] == sorted(t for t, _ in points)
    assert all(t < after_wall for s in joined.segments[:2] for t, _ in s.points)
    assert joined.segments[1].points == history.points  # every minute ProxySQL had before proxytop began
    assert points[-1] == (after_wall, live_rate)
    # proxytop's points replace ProxySQL's where both have one
    early = seamed(history, [(history.points[-10][0], 1.0)])
    assert early.segments[1].points == history.points[:-10]
    # no history: proxytop's alone
    assert [s.origin for s in seamed(None, [(1.0, 2.0)], "questions_per_s").segments] == [PROXYTOP]


def test_off_empty_and_not_readable_each_say_so(recording, recorded):
    # off: admin-stats_mysql_connections = 0, and no rows
    double = started(recording, StatsHistory(create=dict(recorded.create)))
    try:
        variables = double.first_frame("global_variables")[1]
        double.replace_table("global_variables", [[n, "0" if n == "admin-stats_mysql_connections" else v]
                                                  for n, v in variables])
        _, _, reading = read(double)
    finally:
        double.stop()
    assert history_status([reading]) == "off: admin-stats_mysql_connections = 0"
    # empty: on, but nothing written yet
    double = started(recording, StatsHistory(create=dict(recorded.create)))
    try:
        _, _, reading = read(double)
    finally:
        double.stop()
    assert reading.problem is None and history_series([reading]) == ()
    assert history_status([reading]) == "empty"
    # the stats user: reads the rows (ProxySQL attaches stats_history to its database too) but
    # not global_variables: the interval is learnt from the rows
    double = started(recording, recorded)
    try:
        _, session, reading = read(double, user="stats")
        assert reading.intervals == () and not session.is_admin
        assert history_status([reading]) == "ProxySQL's own 1-minute history, 71 minutes"
        assert not any("global_variables" in q for q in double.queries("stats"))
    finally:
        double.stop()
    # a ProxySQL that refuses it to this user
    denied = StatsHistory(create=dict(recorded.create), rows=dict(recorded.rows), denied=True)
    double = started(recording, denied)
    try:
        reader, session, reading = read(double, user="stats")
        assert reading.tables == ()
        assert history_status([reading]).startswith("not readable by this user: ")
        assert "no such table: stats_history.mysql_connections" in history_status([reading])
        # tried again from the start at the next reading (a grant may come)
        assert reader.collect(session).first
    finally:
        double.stop()


def test_a_tsdb_is_found_by_its_table_and_read(recording, recorded):
    end = int(time.time()) // 60 * 60
    double = started(recording, recorded.generated(end=end, days=1, hour_days=0).with_tsdb())
    try:
        _, _, reading = read(double)
        sent = double.queries()
    finally:
        double.stop()
    assert any("from stats_history.tsdb_metrics" in q for q in sent)
    assert reading.table("mysql_connections").rows == ()
    series = by_name([reading])
    assert len(series["questions_per_s"].points) == 24 * 60
    assert "server_connections" in series and "connpool_get_failures_per_s" not in series
    assert history_status([reading]).endswith("(from its TSDB)")
    # without the table (2.7.2): no TSDB query at all
    double = started(recording, recorded)
    try:
        read(double)
        assert not any("tsdb_metrics from" in q or "from stats_history.tsdb_metrics" in q for q in double.queries())
    finally:
        double.stop()


def test_a_reading_is_recorded_and_replayed_whole(recording, recorded):
    double = started(recording, recorded)
    try:
        _, _, reading = read(double)
    finally:
        double.stop()
    again = loads(dumps(reading))
    assert again == reading and history_series([again]) == history_series([reading])


def test_glostat_notes_and_batch_json_carry_it(recording, recorded, tmp_path):
    double = started(recording, recorded)
    try:
        result = subprocess.run(list(proxytop_command()) + ["--batch", "--count", "1", "--screen", "glostat",
                                                            "--format", "json", "-P", str(double.port)],
                                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                                env={"XDG_STATE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    finally:
        double.stop()
    assert result.returncode == 0, result.stderr
    # (an events record may come first: a MySQL server the double lists that cannot be reached)
    record = next(r for r in map(json.loads, result.stdout.splitlines()) if "screen" in r)
    assert "History       ProxySQL's own 1-minute history, 71 minutes (stats_history)" in record["notes"]
    history = record["proxysql_history"]
    assert history["status"] == "ProxySQL's own 1-minute history, 71 minutes"
    assert history["series"]["questions_per_s"]["points"] == 71
    assert history["series"]["questions_per_s"]["last"] == pytest.approx((18236172 - 17903291) / 60)
    assert history["series"]["proxysql_cpu_pct"]["resolution_s"] == 60.0


def test_e2e_read_from_the_start_on_any_screen_and_shown_on_glostat(proxytop_term, recording, recorded):
    double = started(recording, recorded)
    try:
        term = proxytop_term("-P", str(double.port), "-d", "1", cols=120, rows=40)
        term.wait_for("ConnPool")
        deadline = time.monotonic() + 20
        while not any("from stats_history.mysql_connections" in q for q in double.queries("admin")):
            assert time.monotonic() < deadline, "stats_history not read on the first screen"
            time.sleep(0.1)
        first_reads = [q for q in double.queries("admin") if "from stats_history.mysql_connections " in q]
        term.go("GloStat")
        screen = term.wait_for(r"History\s+ProxySQL's own 1-minute history, 71 minutes \(stats_history\)")
        assert "Traceback" not in screen
        # read once: not again on switching screens (its own pace is ProxySQL's 60 s)
        reads = [q for q in double.queries("admin") if "from stats_history.mysql_connections " in q]
        assert reads[:len(first_reads)] == first_reads and len(first_reads) == 1
        assert all("where timestamp > 1795631995" in q for q in reads[1:])
    finally:
        double.stop()


def test_off_now_beside_what_is_kept(recording, recorded):
    double = started(recording, recorded)
    try:
        variables = double.first_frame("global_variables")[1]
        double.replace_table("global_variables", [[n, "0" if n == "admin-stats_system_cpu" else v]
                                                  for n, v in variables])
        reader, _, reading = read(double)
    finally:
        double.stop()
    assert history_status([reading]) == \
        "ProxySQL's own 1-minute history, 71 minutes; off now: admin-stats_system_cpu = 0"
    assert reader.default_interval == 60.0  # the tables still written: read at their pace


def test_no_proxysql_watched_no_history_read():
    from types import SimpleNamespace
    from proxytop.screens.glostat import GloStatScreen
    screen = GloStatScreen()
    assert screen.alarm_readings(SimpleNamespace(source=lambda name: None)) == ()
    assert screen.alarm_readings(SimpleNamespace(source=lambda name: object())) == (("proxysql.history", 60.0),)
