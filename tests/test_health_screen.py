"""ConnPool's health columns, the header alarm and the health view, end to end: the installed
proxytop in a pseudo-terminal against the double serving node 1 of the recorded 2.7.2 cluster,
where replica 3333 lags into SHUNNED_REPLICATION_LAG (t 67-136) and back."""
from __future__ import annotations

import re

import pytest

from tests.proxysql_double import ProxySQLDouble, Recording
from tests.terminal import DOWN, ENTER, ESC

MONITOR_LOGS = ("mysql_server_ping_log", "mysql_server_connect_log", "mysql_server_read_only_log",
                "mysql_server_replication_lag_log")
ALARM = r"! 127\.0\.0\.1:3333 SHUNNED_REPLICATION_LAG \(lag (\d+)s > 5s\)"


@pytest.fixture(scope="module")
def cluster():
    return Recording.load("cluster", node="127.0.0.1:6042")


def lagging_double(cluster, pool_frame=100, monitor_frame=20):
    """The pool at t≈100 s (3333 shunned for lag), the monitor logs at t≈100 s (lag ≈ 40 s)."""
    double = ProxySQLDouble(recording=cluster, start_frame=pool_frame)
    for table in MONITOR_LOGS:
        double.set_frame(table, monitor_frame)
    return double.start()


def count(double, table):
    return sum(table in q for q in double.queries())


def test_lag_and_read_only_columns_and_the_alarm_on_every_screen(proxytop_term, cluster):
    double = lagging_double(cluster)
    try:
        term = proxytop_term("-P", str(double.port), cols=160, rows=40)
        screen = term.wait_for(ALARM, timeout=20)
        lag = int(re.search(ALARM, screen).group(1))
        assert 30 <= lag <= 58  # the measured lag, not the 5 s threshold
        row = next(line for line in screen.splitlines() if re.match(r"\s+20\s+127\.0\.0\.1:3333", line))
        assert re.search(r"\s\d+s\s+yes\s", row), row  # Lag in seconds, read_only yes
        writer = next(line for line in screen.splitlines() if "127.0.0.1:3331" in line and not line.startswith("!"))
        assert re.search(r"\s\u2014\s+no\s", writer), writer  # lag not monitored on the primary; read_only no
        term.send("3")  # GloStat: the alarm stays in the header
        term.wait_until(lambda s: "Variable" in s and re.search(ALARM, s) is not None, what="GloStat with the alarm")
        # the monitor logs are read only while ConnPool is visible
        seen = count(double, "monitor.")
        before_pool = count(double, "stats_mysql_connection_pool")
        term.wait_until(lambda s: count(double, "stats_mysql_connection_pool") >= before_pool + 2,
                        timeout=15, what="two more pool readings for the alarm")
        assert count(double, "monitor.") <= seen + 1  # at most one already under way
    finally:
        double.stop()


def test_monitor_reads_are_incremental_and_at_most_one_query_per_two_seconds(proxytop_term, cluster):
    double = lagging_double(cluster)
    try:
        term = proxytop_term("-P", str(double.port), "-d", "0.5", cols=160, rows=40)
        term.wait_for(ALARM, timeout=20)
        term.wait_until(lambda s: count(double, "monitor.") >= 4, timeout=20, what="four monitor readings")
        stamps = [t for t, _user, sql in double.query_log if "monitor." in sql]
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        # its own interval, even with a 0.5 s screen interval: readings are timed from their
        # schedule, so one sent late on a busy machine makes the next gap a little shorter
        assert (stamps[-1] - stamps[0]) / len(gaps) >= 1.9 and min(gaps) >= 1.5, gaps
        later = [sql for _t, _u, sql in double.query_log if "monitor." in sql][1:]
        assert all("(select max(time_start_us)" not in sql for sql in later)  # incremental after the first
    finally:
        double.stop()


def test_enter_opens_the_health_view_which_reads_free_connections_only_while_open(proxytop_term, cluster):
    double = lagging_double(cluster)
    try:
        term = proxytop_term("-P", str(double.port), cols=160, rows=60)
        term.wait_for(ALARM, timeout=20)
        assert count(double, "stats_mysql_free_connections") == 0
        term.send(DOWN)
        term.send(DOWN)
        term.send(ENTER)
        screen = term.wait_for(r"Health of 127\.0\.0\.1:3333 in hostgroup 20", timeout=15)
        screen = term.wait_until(lambda s: re.search(r"SHUNNED_REPLICATION_LAG: lag \d+s > 5s", s) is not None,
                                 what="the reason")
        assert "max_replication_lag 5s" in screen and "weight 50" in screen and "comment replica-b" in screen
        assert "writer 10 / reader 20" in screen and "this is the reader hostgroup" in screen
        assert re.search(r"replication lag: last 5 of \d+ read", screen)
        assert re.search(r"[\u2581-\u2588]{5,}\s+max \d+s", screen)  # the lag sparkline
        assert re.search(r"lag \d+s\s+in ", screen)
        screen = term.wait_until(lambda s: "ER_NO_SUCH_TABLE" in s, what="this server's errors")
        assert "1146" in screen and "ER_OPTION_PREVENTS_STATEMENT" in screen and "127.0.0.1:3331" not in \
            screen.split("Errors (stats_mysql_errors)")[1]
        term.wait_until(lambda s: count(double, "stats_mysql_free_connections") >= 1, what="a free-connections read")
        term.wait_until(lambda s: re.search(r"idle connections in the pool|\d+ idle", s) is not None,
                        what="the free connections line")
        term.send(ESC)
        term.wait_until(lambda s: "Health of" not in s and "HG" in s, what="back on the table")
        after_close = count(double, "stats_mysql_free_connections")
        pool = count(double, "stats_mysql_connection_pool")
        term.wait_until(lambda s: count(double, "stats_mysql_connection_pool") >= pool + 4, timeout=15,
                        what="four more pool readings")
        assert count(double, "stats_mysql_free_connections") <= after_close + 1
    finally:
        double.stop()


def test_a_state_change_is_seen_and_timed(proxytop_term, cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=132)  # 3333 back ONLINE at frame ≈137
    for table in MONITOR_LOGS:
        double.set_frame(table, 27)
    double.start()
    try:
        term = proxytop_term("-P", str(double.port), cols=160, rows=60)
        term.wait_for("SHUNNED_REP", timeout=20)
        term.wait_until(lambda s: not re.search(r"3333\s+SHUNNED", s), timeout=30, what="3333 back ONLINE")
        term.send(DOWN)
        term.send(DOWN)
        term.send(ENTER)
        screen = term.wait_for(r"SHUNNED_REPLICATION_LAG \u2192 ONLINE", timeout=15)
        assert re.search(r"status ONLINE for \d", screen)  # seen to change: no "at least"
        assert "! 127.0.0.1:3333" not in screen  # the alarm is gone
    finally:
        double.stop()


def test_the_stats_user_sees_the_measured_lag_and_is_told_what_needs_an_admin(proxytop_term, cluster):
    double = lagging_double(cluster)
    try:
        term = proxytop_term("-P", str(double.port), "-u", "stats", "-p", "stats", cols=160, rows=40)
        screen = term.wait_until(lambda s: re.search(r"127\.0\.0\.1:3333\s+SHUNNED_REP\S*.*\s\d+s\s+yes", s)
                                 is not None, timeout=20, what="the lag of 3333 for the stats user")
        assert "lag thresholds need an admin user" in screen
        # without the threshold the alarm names the state and says nothing it doesn't know
        assert re.search(r"! 127\.0\.0\.1:3333 SHUNNED_REPLICATION_LAG", screen)
    finally:
        double.stop()


def test_failed_pings_are_the_reason_and_show_in_the_monitor_column(proxytop_term, recording):
    """The 2.7 recording's reader 3313 is SHUNNED from frame 70; each reading of the ping log
    ends with three failed pings of it."""
    double = ProxySQLDouble(recording=recording, start_frame=70)

    def failing(columns, rows):
        start = columns.index("time_start_us")
        newest = max(int(r[start]) for r in rows)
        message = "Can't connect to MySQL server on '127.0.0.1' (111)"
        return columns, rows + [["127.0.0.1", "3313", str(newest + n * 1_000_000), "0", message] for n in (1, 2, 3)]

    double.transforms["mysql_server_ping_log"] = failing
    double.start()
    try:
        term = proxytop_term("-P", str(double.port), cols=200, rows=60)
        screen = term.wait_until(lambda s: re.search(r"127\.0\.0\.1:3313\s+SHUNNED\s.*ping err \S+ ago", s)
                                 is not None, timeout=20, what="the failed ping in the Monitor column")
        assert re.search(r"! 127\.0\.0\.1:3313 SHUNNED \(\d+ failed pings\)", screen)
        term.send(DOWN)
        term.send(DOWN)
        term.send(ENTER)
        screen = term.wait_for(r"SHUNNED: \d+ failed pings since \d\d:\d\d:\d\d: Can't connect to MySQL server",
                               timeout=15)
        assert re.search(r"ping: last 5 of \d+ read, \d+ failed", screen)
        assert screen.count("error: Can't connect to MySQL server on '127.0.0.1' (111)") >= 3  # in red
    finally:
        double.stop()
