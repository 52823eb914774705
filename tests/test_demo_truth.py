"""proxytop --demo tells the truth: its monitor checks are on the recording's clock, follow
the pool's statuses and are listed once each; every monitor log a real 2.7.2 has is read; a
replay that jumps back forgets the state changes it saw later; its Cluster screen agrees with
the header and counts nothing from before the watched node started; and the detail views say
what a replay is (no other node to watch, no baseline file written) and where a server came from."""
from __future__ import annotations

import bisect
import re
from collections import Counter

from proxytop.collectors.monitor import MonitorLogs
from proxytop.core import Snapshot, Table
from proxytop.metrics import cluster, health
from proxytop.recordings.recording import loads, scan
from proxytop.recordings.replay import DEMO_FILE
from proxytop.screens import HALVES, PROXYSQL_HALF, screen_key
from proxytop.screens.connpool import ConnPoolScreen
from tests.proxysql_double import UNREAD_MONITOR_LOGS, Recording

KEYS = {key: screen_key(i, key) for i, key in enumerate(HALVES[PROXYSQL_HALF])}  # the ProxySQL screens' tabs
DOWN = "\x1b[B"
ENTER = "\r"
ESC = "\x1b"


def readings(collector: str):
    """[(wall time, data)] of the demo's readings of ``collector``."""
    return [(envelope["w"], loads(data)) for envelope, data in scan(DEMO_FILE).records
            if envelope.get("k") == "s" and envelope.get("c") == collector]


def test_the_demo_monitor_checks_are_on_the_recordings_clock():
    """ProxySQL's clock at each reading is the reading's wall time, and the newest check is a
    few seconds older (the monitor pings every 2 s): never days, never in the future."""
    found = readings("proxysql.monitor_logs")
    assert len(found) >= 10
    for wall, data in found:
        assert data.server_now_us is not None and abs(data.server_now_us / 1e6 - wall) < 5, (wall, data.server_now_us)
        newest = max(entry[0] for monitor in data.servers.values()
                     for kind in ("ping", "connect") for entry in monitor.entries(kind))
        assert -1.5 <= (data.server_now_us - newest) / 1e6 <= 15, (wall, newest)


def test_a_failed_check_in_the_demo_is_beside_a_server_that_is_not_online():
    """The monitor never runs ahead of the pool: while the newest ping of a server fails, the
    pool read at about the same moment does not show it ONLINE. (The demo used to serve the
    monitor logs five times as fast as the pool: pings of 3313 failed beside its ONLINE row.)"""
    pools = readings("proxysql.connection_pool")
    for wall, data in readings("proxysql.monitor_logs"):
        for server, monitor in data.servers.items():
            pings = monitor.entries("ping")
            if not pings or not pings[-1][2]:
                continue
            pool = min(pools, key=lambda reading: abs(reading[0] - wall) if reading[0] >= wall - 1 else 1e9)[1]
            statuses = {f"{row['srv_host']}:{row['srv_port']}": row["status"] for row in pool.dicts()}
            later = [reading for reading in pools if wall <= reading[0] <= wall + 4]
            assert any({f"{r['srv_host']}:{r['srv_port']}": r["status"] for r in d.dicts()}.get(server) != "ONLINE"
                       for _, d in later) or statuses.get(server) != "ONLINE", (wall, server)


def duration_s(text: str) -> float:
    """'1m32s', '39s', '2h05m' -> seconds."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([dhms])", text))


def test_the_demo_cluster_screen_agrees_with_the_header(proxytop_term):
    """The watched node's Uptime and Queries/s on the Cluster screen are the header's (as
    last reported, every ~10 s); Enter on another node says why a replay cannot watch it; the
    arrow beside a climbing checksum is explained."""
    header = re.compile(r"up (\S+)\s+Q/s ([\d.]+k?)")
    node = re.compile(r"127\.0\.0\.1:6032\s+node-1\s+\S+\s+\S+\s+(\d\S*)\s+(?:\S+ ago\s+)?([\d.]+k?)\s")
    term = proxytop_term("--demo", cols=160, rows=45)
    term.wait_until(lambda s: "playing 1x" in s.splitlines()[1], timeout=15, what="the demo playing")
    term.send(KEYS["cluster"])
    term.wait_until(lambda s: node.search(s) is not None, timeout=30, what="node 1's Uptime and Queries/s")
    term.send("p")

    def both(text: str) -> bool:
        return bool(header.search(text) and node.search(text)) and "paused" in text.splitlines()[1]

    screen = term.wait_until(both, timeout=20, what="the header and node 1's row, paused")
    up, qps = header.search(screen).groups()
    uptime, queries = node.search(screen).groups()
    assert abs(duration_s(up) - duration_s(uptime)) <= 15, (up, uptime)
    qps = float(qps[:-1]) * 1000 if qps.endswith("k") else float(qps)
    queries = float(queries[:-1]) * 1000 if queries.endswith("k") else float(queries)
    assert qps / 3 <= queries <= qps * 3, (qps, queries)
    if "\u2191" in screen:
        assert "\u2191N: diff_check" in screen
    term.send(DOWN)
    term.send("\r")
    term.wait_for("a replay shows the node it recorded")
    term.send("q")
    assert term.wait_exit(5) == 0


def test_the_demo_details_say_what_a_replay_is(proxytop_term):
    term = proxytop_term("--demo", cols=160, rows=60)
    term.wait_until(lambda s: "playing 1x" in s.splitlines()[1], timeout=15, what="the demo playing")
    term.send(KEYS["innodb"])
    term.wait_until(lambda s: re.search(r"3311.*\n.*3312.*\n.*3313", s) is not None, timeout=20,
                    what="the three servers")
    term.send("\r")
    detail = term.wait_until(lambda s: "Sources" in s and "Server " in s, timeout=20, what="the InnoDB detail")
    assert "given on the command line" not in detail
    assert "from runtime_mysql_servers" in detail
    assert "SHOW ENGINE INNODB STATUS" not in detail  # never asked of MariaDB
    term.send("\x1b")
    term.wait_until(lambda s: "Sources" not in s, timeout=10, what="the detail closed")
    term.send(KEYS["iostat"])
    term.wait_until(lambda s: re.search(r"^\s*sda\s", s, re.MULTILINE) is not None, timeout=20, what="the disk")
    term.send("\r")
    term.wait_for("a replay writes no file", timeout=20)
    term.send("q")
    assert term.wait_exit(5) == 0


def test_a_shunned_server_whose_checks_pass_again_says_so():
    recovered = health.ServerMonitor(ping=((10**15, 0, "Lost connection", None), (10**15 + 2 * 10**6, 300, None, None)))
    assert "last failed ping at" in health.reason("SHUNNED", None, recovered)
    assert "every ping and connect check listed passes" in \
        health.reason("SHUNNED", None, health.ServerMonitor(ping=((1, 300, None, None),)))


# ----- every check once --------------------------------------------------------------------------

def test_no_monitor_reading_in_the_demo_holds_a_check_twice():
    """Each ping or connect check is one row of ProxySQL's log: listed once. (Every reading used
    to list the checks of the second it was read in twice: "19:58:16 ok in 0.99ms" two times.)"""
    found = readings("proxysql.monitor_logs")
    assert found
    for wall, data in found:
        for server, monitor in data.servers.items():
            for kind in ("ping", "connect", "read_only", "lag"):
                twice = [at for at, n in Counter(entry[0] for entry in monitor.entries(kind)).items() if n > 1]
                assert not twice, (wall, server, kind, twice)


class WholeSecondProxySQL:
    """A session answering the collector's monitor query as ProxySQL does: its clock
    (strftime('%s','now')) in whole seconds, its checks stamped to the microsecond; one ping of
    127.0.0.1:3311 every 2 s, each at .978 s, read 15 ms later (the demo's pace)."""

    def __init__(self):
        self.now_us = 100_993_000
        self.pings = []

    def tick(self) -> None:
        self.pings.append(self.now_us + 1_985_000)
        self.now_us += 2_000_000

    def query(self, sql):
        match = re.search(r"mysql_server_ping_log where time_start_us > (\d+)", sql)
        after = int(match.group(1)) if match else 0
        rows = [("now", None, None, self.now_us // 1_000_000 * 1_000_000, None, None, None)]
        rows += [("ping", "127.0.0.1", "3311", at, 500, None, None) for at in self.pings if at > after]
        return Table(("kind", "hostname", "port", "time_start_us", "success_us", "error", "value"), tuple(rows))


def test_a_check_from_the_current_second_is_kept_once():
    """A check made in the second ProxySQL's clock is in is after that clock (whole seconds): the
    collector reads it again next time, and keeps it only once."""
    proxysql, collector = WholeSecondProxySQL(), MonitorLogs()
    for _ in range(6):
        proxysql.tick()
        data = collector.collect(proxysql)
    times = [entry[0] for entry in data.server("127.0.0.1", "3311").ping]
    assert times == proxysql.pings


# ----- nothing from the future after a jump back -------------------------------------------------

SHUNNED_AT = re.compile(r"(\d\d:\d\d:\d\d)\s+ONLINE \u2192 SHUNNED")
RECORDED_AT = re.compile(r"recorded \d{4}-\d\d-\d\d (\d\d:\d\d:\d\d)")


def open_health_of_3313(term) -> str:
    term.send(KEYS["connpool"])
    term.wait_until(lambda s: "127.0.0.1:3313" in s and "Health of" not in s, timeout=20, what="ConnPool's rows")
    term.send("/")
    term.send("3313" + ENTER)
    term.wait_until(lambda s: "filter 3313" in s and "127.0.0.1:3312" not in s, timeout=10, what="3313 alone")
    term.send(ENTER)
    return term.wait_until(lambda s: "Health of 127.0.0.1:3313" in s and "State changes seen" in s, timeout=10,
                           what="the health view of 3313")


class PoolAt:
    """A view whose latest pool reading is the one given (a replay's, at its position)."""

    def __init__(self):
        self.current = None

    def show(self, taken_at: float, status: str) -> None:
        table = Table(("hostgroup", "srv_host", "srv_port", "status"), (("20", "127.0.0.1", "3313", status),))
        self.current = Snapshot("proxysql.connection_pool", table, taken_at, 0.0, wall_time=1000.0 + taken_at)

    def latest(self, name: str):
        return self.current

    def readings(self, name: str, after, until):
        return (self.current,) if after is None or self.current.taken_at > after else ()


def test_the_status_log_starts_over_when_the_replay_goes_back():
    screen, view = ConnPoolScreen(), PoolAt()
    for taken_at, status in ((1.0, "ONLINE"), (2.0, "SHUNNED"), (3.0, "ONLINE")):
        view.show(taken_at, status)
        screen.observe(view)
    assert [(c.old, c.new) for c in screen.status_log.changes] == [("ONLINE", "SHUNNED"), ("SHUNNED", "ONLINE")]
    screen.observe(view)
    assert len(screen.status_log.changes) == 2  # the same reading again: nothing new
    view.show(1.0, "ONLINE")  # back at the start
    screen.observe(view)
    assert screen.status_log.changes == ()
    assert screen.status_log.since[("20", "127.0.0.1", "3313")] == ("ONLINE", 1001.0, False)


def test_after_a_jump_back_the_health_view_lists_no_change_from_later(proxytop_term):
    """3313 is shunned 49 s into the demo. Seen there, then the replay jumps back to the start (as
    when the demo loops, or with t or \u2190): the health view lists no change later than the
    replay's clock."""
    term = proxytop_term("--demo", cols=140, rows=50)
    term.wait_until(lambda s: "playing 1x" in s.splitlines()[1], timeout=15, what="the demo playing")
    term.send("p")
    term.send("t")
    term.wait_for("jump to: ")
    term.send("+55s" + ENTER)
    screen = open_health_of_3313(term)
    screen = term.wait_until(lambda s: SHUNNED_AT.search(s) is not None, timeout=10, what="the shun, seen")
    assert SHUNNED_AT.search(screen).group(1) <= RECORDED_AT.search(screen).group(1)
    term.send(ESC, pause=0.4)
    term.wait_until(lambda s: "Health of" not in s, timeout=10, what="the health view closed")
    term.send("t")
    term.wait_for("jump to: ")
    term.send("start" + ENTER)
    term.wait_for(r"  0:00 / ")
    term.send("p")  # the first readings come a moment after the start
    screen = term.wait_until(lambda s: "127.0.0.1:3313" in s, timeout=10, what="3313 at the start")
    assert "SHUNNED" not in screen
    term.send(ENTER)
    screen = term.wait_until(lambda s: "Health of 127.0.0.1:3313" in s and "State changes seen" in s, timeout=10,
                             what="the health view of 3313 at the start")
    assert SHUNNED_AT.search(screen) is None, screen
    assert "none seen since" in screen
    term.send("q")
    assert term.wait_exit(5) == 0


# ----- the monitor logs a real 2.7.2 has ---------------------------------------------------------

def test_the_double_serves_every_monitor_log_of_2_7_2_shaped_as_recorded():
    """The read_only and replication-lag logs have the columns of 2.7.2's tables (the cluster
    recording's SHOW CREATE TABLE); the 2.7 recording's ProxySQL checked neither (no replication
    hostgroups, every max_replication_lag 0), so they are empty there, as they were."""
    created = Recording.load("cluster").create
    for table, columns in UNREAD_MONITOR_LOGS.items():
        ddl = created[table]
        assert re.findall(r"^\s*(\w+) (?:VARCHAR|INT)", ddl, re.MULTILINE) == columns, ddl
    single = Recording.load()
    listed = {row[0] for row in single.fixed[("admin", "SHOW TABLES FROM monitor")]["rows"]}
    assert set(UNREAD_MONITOR_LOGS) <= listed
    servers = single.fixed[("admin", "select * from runtime_mysql_servers")]
    lag_at = servers["columns"].index("max_replication_lag")
    assert all(row[lag_at] == "0" for row in servers["rows"])
    assert not any("replication_hostgroups" in sql and "CREATE" not in sql for _user, sql in single.fixed)
    for table in UNREAD_MONITOR_LOGS:
        assert single.series[table] == [(UNREAD_MONITOR_LOGS[table], [])]


def test_the_demo_reads_every_monitor_log_and_says_what_they_hold(proxytop_term):
    """Not "Monitor logs not read (read_only, lag): not in this ProxySQL.": a 2.7.2 has them."""
    term = proxytop_term("--demo", cols=140, rows=50)
    term.wait_until(lambda s: "playing 1x" in s.splitlines()[1], timeout=15, what="the demo playing")
    screen = open_health_of_3313(term)
    screen = term.wait_until(lambda s: "ping: last" in s, timeout=10, what="the monitor's checks")
    assert "not in this ProxySQL" not in screen
    assert "read_only: no checks (not monitored for this server)" in screen
    assert "replication lag: no checks (not monitored for this server)" in screen
    term.send(ESC, pause=0.4)
    screen = term.wait_until(lambda s: "Health of" not in s and "127.0.0.1:3313" in s, timeout=10,
                             what="ConnPool again")
    assert "Monitor logs not read" not in screen
    term.send("q")
    assert term.wait_exit(5) == 0
    for wall, data in readings("proxysql.monitor_logs"):
        assert data.unavailable == (), wall


# ----- a cluster node counts only what it has seen since it started ------------------------------

def test_the_demo_cluster_counts_no_check_from_before_the_watched_node_started():
    """diff_check counts the watched node's checks, one a second since it started, and a drift it
    reports began when it started at the earliest: neither exceeds its ProxySQL_Uptime (the
    header's "up"). (The demo showed "differs on node-3 for 1m43s", \u2191103, 41 s after the start.)"""
    uptimes = readings("proxysql.global")
    walls = [wall for wall, _ in uptimes]
    checked = 0
    for wall, table in readings("proxysql.cluster_checksums"):
        at = bisect.bisect_right(walls, wall + 0.5) - 1  # the status read with it (same poll)
        assert at >= 0
        uptime = float(uptimes[at][1]["ProxySQL_Uptime"]) + 1  # +1: read up to a second apart
        diff_checks = [float(row["diff_check"]) for row in table.dicts()]
        assert max(diff_checks) <= uptime, (wall, max(diff_checks), uptime)
        for module in cluster.modules(None, table):
            if module.since is not None:
                assert module.since <= uptime, (wall, module.name, module.since, uptime)
        checked += 1
    assert checked >= 30
