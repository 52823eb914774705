"""The Replication screen over real MariaDB replication the suite sets up itself: a primary
and two GTID replicas (one of them multi-source), shared by the whole module; each test breaks
something (a stopped SQL thread, a duplicate key, a delay, a wrong port) and mends it again.
The MySQL 8 shapes come from tests/mysql8_double.py. proxytop only reads: every STOP/START
SLAVE here is the test's own."""
from __future__ import annotations

import json
import re
import subprocess
import time
from typing import Dict, List

import pytest

from proxytop.collectors.innodb import DiscoveredServer
from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.collectors.monitor import MonitorLogs
from proxytop.collectors.mysql_server import Channel
from proxytop.collectors.proxysql import RuntimeServers
from proxytop.collectors.replication import ChannelStatus, ReplicationReading
from proxytop.config.mysql_options import Credentials
from proxytop.core import Snapshot, Table
from proxytop.metrics.health import MonitorReadings, ServerMonitor
from proxytop.polling.connection import Endpoint
from proxytop.recordings.recording import dumps, loads
from proxytop.screens.base import DataView
from proxytop.screens.replication import ReplicationScreen, channel_problems, grouped_fields, lag_series
from tests.mariadb import free_port, start_or_skip
from tests.mysql8_double import PASSWORD, USER, MySQL8Double
from tests.terminal import ENTER, proxytop_command

REPL_USER, REPL_PASSWORD = "repl", "repl-pw"


def wait(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")


def slave_status(server, connection: str = "") -> Dict[str, object]:
    conn = server.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("SHOW ALL SLAVES STATUS")
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, row)) for row in cursor.fetchall()]
    finally:
        conn.close()
    return next((row for row in rows if row["Connection_name"] == connection), {})


def unlogged(server, *statements: str) -> None:
    """Statements kept out of the server's binary log (its replicas don't repeat them)."""
    conn = server.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("SET SESSION sql_log_bin = 0")
            for statement in statements:
                cursor.execute(statement)
    finally:
        conn.close()


def change_master(replica, source, connection: str = "", extra: str = "MASTER_USE_GTID=slave_pos") -> None:
    name = f"'{connection}' " if connection else ""
    if "slave_pos" in extra:  # from the source's current position: not its bootstrap's statements
        replica.query("SET GLOBAL gtid_slave_pos = %s", (source.query("SELECT @@gtid_binlog_pos")[0][0],))
    replica.query(f"CHANGE MASTER {name}TO MASTER_HOST='127.0.0.1', MASTER_PORT={source.port}, "
                  f"MASTER_USER='{REPL_USER}', MASTER_PASSWORD='{REPL_PASSWORD}', MASTER_CONNECT_RETRY=1, {extra}")
    replica.query(f"START SLAVE {name}".strip())


def running(replica, connection: str = "") -> bool:
    status = slave_status(replica, connection)
    return status.get("Slave_IO_Running") == "Yes" and status.get("Slave_SQL_Running") == "Yes"


def caught_up(primary, replica) -> bool:
    position = primary.query("SELECT @@gtid_binlog_pos")[0][0]
    return set(position.split(",")) <= set(replica.query("SELECT @@gtid_slave_pos")[0][0].split(","))


@pytest.fixture(scope="module")
def topology():
    """primary -> replica (default connection); primary -> second ('main') and, multi-source,
    replica -> second ('other', by file and position: the replica writes its own binary log)."""
    servers = []
    try:
        for n, name in enumerate(("repl-primary", "repl-replica", "repl-second"), start=1):
            servers.append(start_or_skip({"server_id": str(n), "gtid_domain_id": str(n - 1)}, name=name))
        primary, replica, second = servers
        for server in (primary, replica):  # each its own, not replicated
            unlogged(server, f"CREATE USER '{REPL_USER}'@'%' IDENTIFIED BY '{REPL_PASSWORD}'",
                     f"GRANT REPLICATION SLAVE ON *.* TO '{REPL_USER}'@'%'")
        change_master(replica, primary)
        change_master(second, primary, "main")
        primary.query("CREATE DATABASE rt")
        primary.query("CREATE TABLE rt.t (id INT PRIMARY KEY)")
        file, position = replica.query("SHOW MASTER STATUS")[0][:2]
        change_master(second, replica, "other", f"MASTER_LOG_FILE='{file}', MASTER_LOG_POS={position}")
        wait(lambda: running(replica) and running(second, "main") and running(second, "other"),
             what=lambda: f"replication: {slave_status(replica)} {slave_status(second, 'other')}")
        wait(lambda: caught_up(primary, replica) and caught_up(primary, second), what="the replicas to catch up")
        yield primary, replica, second
    finally:
        for server in servers:
            server.stop()


def mysql_args(*servers) -> List[str]:
    args = []
    for server in servers:
        args += ["--mysql", server.address]
    return args + ["--mysql-user", servers[0].user, "--mysql-password", servers[0].password]


def batch(*servers, count: int = 2, args=()) -> List[dict]:
    result = subprocess.run(list(proxytop_command()) + mysql_args(*servers) + [
        "--batch", "--count", str(count), "-d", "1", "--screen", "replication", "--format", "json", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def rows_of(report: dict, server) -> List[dict]:
    return [row for row in report["rows"] if row["server"] == server.address]


def test_every_channel_and_the_primary_have_a_row(topology):
    primary, replica, second = topology
    report = batch(*topology)[-1]
    channel, feeds = rows_of(report, replica)  # a channel, and a primary's row: the second replica reads it
    assert feeds["channel"] == "(primary)" and feeds["source"] == "\u2192 1 replica"
    assert (channel["channel"], channel["source"], channel["io"], channel["sql"]) == (
        "(default)", primary.address, "Yes", "Yes")
    assert channel["lag"] == 0 and channel["trx"] == 0 and channel["behind"] == 0 and channel["relay"] > 0
    # multi-source: both connections of the second replica
    channels = {row["channel"]: row for row in rows_of(report, second)}
    assert set(channels) == {"main", "other"}
    assert channels["main"]["source"] == primary.address and channels["other"]["source"] == replica.address
    assert all(row["io"] == "Yes" and row["sql"] == "Yes" for row in channels.values())
    # the primary: its binary log, the two replicas it feeds, its durability settings
    (source,) = rows_of(report, primary)
    file, position = primary.query("SHOW MASTER STATUS")[0][:2]
    assert source["channel"] == "(primary)" and source["source"] == "\u2192 2 replicas"
    assert source["binlog"] == f"{file}:{position}" and source["sync"].count("/") == 1
    assert source["binlog_s"] is not None  # MariaDB's Binlog_bytes_written over the interval


def test_a_stopped_sql_thread_is_in_the_row_and_the_header_alarm(topology, proxytop_term):
    primary, replica, second = topology
    replica.query("STOP SLAVE SQL_THREAD")  # the test's, never proxytop's
    try:
        term = proxytop_term(*mysql_args(*topology), "-d", "1", "--screen", "replication", cols=200, rows=30)
        screen = term.wait_until(lambda s: re.search(rf"{re.escape(replica.address)}\s+\(default\)\s+\S+\s+Yes\s+No",
                                                     s) is not None, timeout=20, what="the stopped SQL thread")
        assert f"! {replica.address} SQL thread stopped" in screen
        # the alarm is the header's on every screen of the half, from the servers' own readings
        term.go("Status")
        term.wait_for(f"! {re.escape(replica.address)} SQL thread stopped", timeout=15)
    finally:
        replica.query("START SLAVE SQL_THREAD")
    wait(lambda: running(replica), what="the SQL thread again")


def test_a_duplicate_key_shows_its_number_and_text_in_the_row_the_detail_and_the_alarm(topology, proxytop_term):
    primary, replica, second = topology
    unlogged(replica, "INSERT INTO rt.t VALUES (1062)")  # the replica has the row first (its replica hasn't)
    primary.query("INSERT INTO rt.t VALUES (1062)")
    wait(lambda: slave_status(replica).get("Last_SQL_Errno") == 1062, what="the duplicate key error")
    try:
        row = rows_of(batch(replica, count=1)[-1], replica)[0]
        assert row["sql"] == "No" and re.search(r"SQL 1062 .*Duplicate entry '1062'", row["note"])
        term = proxytop_term(*mysql_args(*topology), "-d", "1", "--screen", "replication", cols=200, rows=40)
        screen = term.wait_for(rf"! {re.escape(replica.address)} SQL thread stopped: 1062 ", timeout=20)
        assert "Duplicate entry '1062'" in screen
        # Enter on the replica's row: its whole status, the errors first
        term.send("/")
        term.wait_for("filter: ")
        term.send(f"server:{re.escape(replica.address)} channel:default\r")  # its channel's row alone
        term.wait_for(r"1/\d+ rows")
        term.send(ENTER)
        detail = term.wait_until(lambda s: "Channel (default) of " + replica.address in s, timeout=10,
                                 what="the channel's detail")
        lines = detail.splitlines()
        errors = next(i for i, line in enumerate(lines) if line.strip() == "Errors")
        assert any(re.match(r"\s+Last_SQL_Errno\s+1062", line) for line in lines[errors:errors + 9])
        assert "Threads" in detail and detail.index("Errors") < detail.index("Threads")
    finally:
        replica.query("STOP SLAVE")
        unlogged(replica, "DELETE FROM rt.t WHERE id = 1062")  # the replica's own row goes; the primary's applies
        replica.query("START SLAVE")
    wait(lambda: running(replica) and caught_up(primary, replica), what="the replica mended")


def test_a_master_delay_lag_grows_then_recovers(topology):
    primary, replica, second = topology
    second.query("STOP SLAVE 'main'")
    second.query("CHANGE MASTER 'main' TO MASTER_DELAY = 4")
    second.query("START SLAVE 'main'")
    wait(lambda: running(second, "main"), what="the delayed connection running")
    try:
        process = subprocess.Popen(list(proxytop_command()) + mysql_args(second) + [
            "--batch", "--count", "12", "-d", "1", "--screen", "replication", "--format", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        lags = []
        first = json.loads(process.stdout.readline())
        lags.append(next(r["lag"] for r in first["rows"] if r["channel"] == "main"))
        primary.query("INSERT INTO rt.t VALUES (4)")
        for line in process.stdout:
            lags.append(next(r["lag"] for r in json.loads(line)["rows"] if r["channel"] == "main"))
        assert process.wait(30) == 0, process.stderr.read()
    finally:
        second.query("STOP SLAVE 'main'")
        second.query("CHANGE MASTER 'main' TO MASTER_DELAY = 0")
        second.query("START SLAVE 'main'")
    peak = max((lag for lag in lags if lag is not None), default=None)
    assert peak is not None, lags
    assert peak >= 2, lags  # held back on purpose...
    after = lags[lags.index(peak):]
    assert 0 in after, lags  # ...then applied
    wait(lambda: caught_up(primary, second), what="the second replica to catch up")


def test_an_io_thread_that_cannot_connect(topology):
    primary, replica, second = topology
    second.query(f"CHANGE MASTER 'broken' TO MASTER_HOST='127.0.0.1', MASTER_PORT={free_port()}, "
                 f"MASTER_USER='{REPL_USER}', MASTER_PASSWORD='x', MASTER_CONNECT_RETRY=1")
    second.query("START SLAVE 'broken'")
    try:
        wait(lambda: slave_status(second, "broken").get("Last_IO_Errno"), what="the connection error")
        rows = {row["channel"]: row for row in rows_of(batch(second, count=1)[-1], second)}
        broken = rows["broken"]
        assert broken["io"] == "Connecting" and broken["lag"] is None
        assert re.search(r"IO 2003 .*connecting to master", broken["note"]), broken["note"]
        assert rows["main"]["io"] == "Yes"  # the other connections are untouched
    finally:
        second.query("STOP SLAVE 'broken'")
        second.query("RESET SLAVE 'broken' ALL")


# ----- MySQL 8 names, from the double ---------------------------------------------------------------

def test_mysql_8_channels_by_their_new_names():
    double = MySQL8Double().start()
    try:
        result = subprocess.run(list(proxytop_command()) + [
            "--mysql", f"127.0.0.1:{double.port}", "--mysql-user", USER, "--mysql-password", PASSWORD,
            "--batch", "--count", "1", "--screen", "replication", "--format", "json"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stderr
        rows = {row["channel"]: row for row in json.loads(result.stdout.splitlines()[-1])["rows"]}
        europe, asia = rows["europe"], rows["asia"]
        assert europe["source"] == "db8-eu.example:3306" and europe["lag"] >= 95
        assert europe["behind"] == 4410221 - 3901112 and europe["trx"] == 902211 - 901977
        assert asia["sql"] == "No" and asia["note"].startswith("SQL 1062 Coordinator stopped")
        assert "(at 241126 22:41:07)" in asia["note"] and asia["trx"] == 10
        assert "SHOW REPLICAS" in " ".join(double.queries()) and not any("SLAVE" in q for q in double.queries())
    finally:
        double.stop()


# ----- pure parts ------------------------------------------------------------------------------------

def test_problems_name_the_thread_and_the_channel():
    assert channel_problems("h:1", Channel("", "p:1", "Yes", "Yes", 0), {}) == []
    assert channel_problems("h:1", Channel("eu", "p:1", "No", "No", None), {}) == [
        "h:1 channel 'eu' SQL thread stopped", "h:1 channel 'eu' IO thread stopped"]


def test_lag_buckets_keep_the_worst_and_fields_group_errors_first():
    assert lag_series(list(range(10)), 5) == [1, 3, 5, 7, 9]
    groups = grouped_fields([("Seconds_Behind_Source", 3), ("Last_IO_Errno", 0), ("Source_Host", "h")])
    assert [title for title, _ in groups] == ["Errors", "Lag and delay", "Source"]


# ----- ProxySQL's view and the lag alarm, from readings made up here ------------------------------------

class Readings:
    """What the screen reads of an engine: made-up snapshots by name, a clock."""

    def __init__(self, now: float = 100.0):
        self.snapshots: Dict[str, list] = {}
        self.clock = now

    def add(self, name: str, data, at: float) -> None:
        self.snapshots.setdefault(name, []).append(Snapshot(name, data, at, 0.01))

    def latest(self, name):
        return (self.snapshots.get(name) or [None])[-1]

    def last_two(self, name):
        kept = self.snapshots.get(name) or []
        return (kept[-2] if len(kept) > 1 else None, kept[-1] if kept else None)

    def history(self, name):
        return tuple(self.snapshots.get(name) or ())

    def error(self, name):
        return None

    def state(self, source):
        return None

    def source(self, name):
        return None

    def now(self):
        return self.clock

    def collector(self, name):
        return None


def proxysql_fleet_screen():
    fleet = Fleet(Credentials(user="monitor"), 2.0, discover=True)
    found = DiscoveredServer("10.0.0.2", 3306, (20,), ("ONLINE",))
    fleet.servers[found.label] = Server(found.label, Endpoint(host=found.host, port=found.port, socket=None,
                                                              **fleet.auth()), discovered=found)
    return ReplicationScreen(fleet=fleet), fleet.servers[found.label]


def replica_reading(lag: int, lags=()) -> ReplicationReading:
    channel = Channel("", "10.0.0.1:3306", "Yes", "Yes", lag)
    return ReplicationReading(channels=(ChannelStatus(channel, (("Seconds_Behind_Master", lag),), tuple(lags) + (lag,)),))


def runtime_servers(max_lag: int) -> Table:
    return Table(("hostgroup_id", "hostname", "port", "status", "max_replication_lag"),
                 (("20", "10.0.0.2", "3306", "ONLINE", str(max_lag)),))


def test_a_rising_lag_nearing_proxysql_max_replication_lag_is_the_header_alarm():
    screen, server = proxysql_fleet_screen()
    readings = Readings()
    readings.add(RuntimeServers.name, runtime_servers(5), 95.0)
    readings.add(server.replication_name, replica_reading(3), 98.0)
    readings.add(server.replication_name, replica_reading(4, (3,)), 99.0)
    view = DataView(readings)
    assert screen.alarm(view) == "10.0.0.2:3306 lag 4 s of 5 s, rising" and screen.alarm_rank == 1
    readings.add(server.replication_name, replica_reading(4, (3, 4)), 99.5)  # steady: no longer rising
    assert screen.alarm(view) is None
    readings.clock = 200.0  # readings of a screen no longer shown say nothing about now
    readings.add(server.replication_name, replica_reading(9, (3, 4, 4)), 100.0)
    assert screen.alarm(view) is None


def test_proxysql_measuring_another_lag_than_the_replica_is_said_on_its_row():
    screen, server = proxysql_fleet_screen()
    readings = Readings()
    readings.add(RuntimeServers.name, runtime_servers(30), 95.0)
    checks = tuple((t * 10_000_000, 900, None, "0") for t in (1, 2, 3))  # every 10 s, lag 0
    monitor = MonitorReadings(servers={"10.0.0.2:3306": ServerMonitor(lag=checks)}, server_now_us=32_000_000)
    readings.add(MonitorLogs.name, monitor, 99.0)
    readings.add(server.replication_name, replica_reading(25), 99.0)
    (row,) = screen.rows(DataView(readings))
    assert row["px_lag"] == 0 and row["max_lag"] == 30 and row["proxysql"] == "20 ONLINE"
    assert row["note"].startswith("ProxySQL measured 0 s 3 s ago, the replica says 25 s: more than")
    assert "SLAVE MONITOR" in row["note"] and row["_note_style"] == "warning"


def test_a_replication_reading_survives_a_recording():
    reading = ReplicationReading(
        channels=(ChannelStatus(Channel("eu", "h:1", "Yes", "No", None, sql_errno=1062, sql_error="Duplicate"),
                                (("Connection_name", "eu"), ("Seconds_Behind_Master", None), ("Relay_Log_Space", 4096)),
                                (1, None, 3)),),
        variables={"log_bin": "ON", "sync_binlog": "1"}, status={"Binlog_commits": 9},
        binlog_file="mariadb-bin.000002", binlog_position=1234, replicas=(("2", "localhost:3392"),),
        denied=(("the replicas connected", "REPLICATION MASTER ADMIN"),))
    assert loads(dumps(reading)) == reading


# ----- what each reading sends -----------------------------------------------------------------------

class CountingSession:
    """A MariaDB primary with one replica connected, answering the collector's statements."""

    def __init__(self):
        from proxytop.metrics.innodb import Flavour
        self.conn, self.flavour, self.sent = object(), Flavour("MariaDB", (10, 11, 6)), []

    def query(self, sql):
        self.sent.append(sql)
        if "VARIABLES" in sql:
            return Table(("Variable_name", "Value"), (("log_bin", "ON"), ("sync_binlog", "1")))
        if sql == "SHOW MASTER STATUS":
            return Table(("File", "Position"), (("b.000001", 328),))
        if sql == "SHOW SLAVE HOSTS":
            return Table(("Server_id", "Host", "Port", "Master_id"), ((2, "localhost", 3392, 1),))
        return Table(("Variable_name", "Value"), ())

    def read_unless_denied(self, key, sql, now):
        return self.query(sql), False, None

    def retry_denied(self, now):
        pass


def test_variables_and_replicas_are_read_every_10_s_the_rest_every_reading():
    from proxytop.collectors.replication import ReplicationStatus
    clock = [0.0]
    collector = ReplicationStatus(Endpoint(host="db", port=1, socket=None, user="u", password="", timeout=1.0),
                                  clock=lambda: clock[0])
    session = CountingSession()
    readings = []
    for second in range(11):  # 0..10 s
        clock[0] = float(second)
        readings.append(collector.collect(session))
    per_kind = {kind: sum(kind in sql for sql in session.sent) for kind in ("VARIABLES", "STATUS", "SLAVES", "HOSTS")}
    # SHOW GLOBAL STATUS, SHOW ALL SLAVES STATUS, SHOW MASTER STATUS each reading; the others at 0 and 10 s
    assert per_kind == {"VARIABLES": 2, "STATUS": 11 + 11 + 11, "SLAVES": 11, "HOSTS": 2}, session.sent
    assert all(r.replicas == (("2", "localhost:3392"),) and r.log_bin for r in readings)
    session.conn = object()  # a new connection: asked again at once
    clock[0] = 10.5
    before = len(session.sent)
    collector.collect(session)
    assert sum("VARIABLES" in sql or "HOSTS" in sql for sql in session.sent[before:]) == 2
