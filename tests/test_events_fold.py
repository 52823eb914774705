"""The events fold (proxytop.metrics.events) over readings recorded from real ProxySQLs
(/work/shared/proxysql, tests/data) and over MySQL server readings: what changed, once, with
old -> new; the first reading is the baseline; a restart is one event. And a source's
connection from hand-made engine states: unreachable once, then back after how long."""
from __future__ import annotations

from typing import List, Optional

from proxytop.collectors.mysql_server import Channel, ServerReading
from proxytop.core import Table
from proxytop.metrics.events import EMPTY, Event, EventLog, VariablesReading, fold, fold_reach
from proxytop.polling.engine import SourceState
from tests.proxysql_double import Recording


def tables(recording: Recording, table: str) -> List[Table]:
    return [Table(tuple(columns), tuple(tuple(row) for row in rows)) for columns, rows in recording.series[table]]


def fold_all(readings, name: str, start: float = 1000.0) -> List[Event]:
    """Every reading of one collector, one a second, through the fold."""
    state, events = EMPTY, []
    for i, data in enumerate(readings):
        state, found = fold(state, name, data, start + i)
        events += found
    return events


def changes(events: List[Event]):
    return [(e.source, e.kind, e.what, e.old, e.new) for e in events]


def test_a_backend_shunned_and_back_online_in_the_recorded_pool_is_two_events():
    # README.md of the recording: reader 3313 was stopped from about t=60 s to t=120 s
    events = fold_all(tables(Recording.load(), "stats_mysql_connection_pool"), "proxysql.connection_pool")
    assert changes(events) == [("proxysql", "status", "hg 20 127.0.0.1:3313", "ONLINE", "SHUNNED"),
                               ("proxysql", "status", "hg 20 127.0.0.1:3313", "SHUNNED", "ONLINE")]
    shunned, back = events
    assert 1040 < shunned.wall_time < 1080 and 1100 < back.wall_time < 1140  # seconds since the first reading
    assert (shunned.severity, back.severity) == ("warning", "info")
    assert shunned.label == "hg 20 127.0.0.1:3313 SHUNNED" and shunned.marker == "S"


def test_replication_lag_shunning_on_the_recorded_cluster_node():
    cluster = Recording.load("cluster")
    events = fold_all(tables(cluster, "stats_mysql_connection_pool"), "proxysql.connection_pool")
    # README-cluster.md: 3333 lag-shunned at 66.8 s and back at 136.4 s, then 3332 at 150.4 s and 186.6 s
    assert [(e.what, e.new) for e in events] == [
        ("hg 20 127.0.0.1:3333", "SHUNNED_REPLICATION_LAG"), ("hg 20 127.0.0.1:3333", "ONLINE"),
        ("hg 20 127.0.0.1:3332", "SHUNNED_REPLICATION_LAG"), ("hg 20 127.0.0.1:3332", "ONLINE")]


def test_the_recorded_cluster_drift_lasts_the_whole_recording_so_no_drift_event_until_it_ends():
    cluster = Recording.load("cluster")
    checksums = tables(cluster, "stats_proxysql_servers_checksums")
    assert fold_all(checksums, "proxysql.cluster_checksums") == []  # the baseline already differs
    # the drift ends: node 3 takes the others' query rules (its row gets their checksum)
    last = checksums[-1]
    at = {c: i for i, c in enumerate(last.columns)}
    reference = next(r[at["checksum"]] for r in last.rows
                     if r[at["name"]] == "mysql_query_rules" and r[at["port"]] == "6042")
    synced = Table(last.columns, tuple(
        tuple(reference if (c == "checksum" and r[at["name"]] == "mysql_query_rules") else v
              for c, v in zip(last.columns, r)) for r in last.rows))
    events = fold_all(checksums + [synced], "proxysql.cluster_checksums")
    assert changes(events) == [("cluster", "drift", "mysql_query_rules", "differs on 127.0.0.1:6062", "in sync")]
    # and begins again
    events = fold_all(checksums + [synced, last], "proxysql.cluster_checksums")
    assert [(e.what, e.old, e.new, e.severity) for e in events[1:]] == [
        ("mysql_query_rules", "in sync", "differs on 127.0.0.1:6062", "warning")]


def test_a_rules_reload_is_a_new_version_and_a_changed_checksum_says_so():
    cluster = Recording.load("cluster")
    recorded = tables(cluster, "runtime_checksums_values")
    assert fold_all(recorded, "proxysql.checksums") == []  # nothing was loaded during the recording
    last = recorded[-1]
    reloaded = Table(last.columns, tuple(
        (r[0], "3", r[2], "0xFEEDFACE00000000") if r[0] == "mysql_query_rules" else r for r in last.rows))
    same = Table(last.columns, tuple((r[0], "4", r[2], "0xFEEDFACE00000000") if r[0] == "mysql_query_rules" else r
                                     for r in last.rows))
    events = fold_all(recorded + [reloaded, same], "proxysql.checksums")
    assert [(e.what, e.change) for e in events] == [
        ("mysql_query_rules", "v2 \u2192 v3 (checksum 0xFEEDFACE00000000)"),
        ("mysql_query_rules", "v3 \u2192 v4 (same checksum)")]
    assert events[0].marker == "L"


def global_status(uptime: int, questions: int = 0) -> dict:
    return {"ProxySQL_Uptime": str(uptime), "Questions": str(questions)}


def test_a_proxysql_restart_is_one_event_and_no_variable_or_backend_event():
    recorded = Recording.load()
    pools = tables(recorded, "stats_mysql_connection_pool")
    variables = {"mysql-max_connections": "2048", "mysql-threads": "4", "admin-version": "2.7.2"}
    log = EventLog()
    log.feed("proxysql.header_status", global_status(500), 100.0)
    log.feed("proxysql.variables", VariablesReading(variables, 500), 100.5)
    log.feed("proxysql.connection_pool", pools[70], 101.0)  # 3313 SHUNNED
    log.feed("proxysql.header_status", global_status(502), 102.0)
    log.feed("proxysql.header_status", global_status(3), 200.0)  # it went back: restarted
    # read after the restart: another configuration and every backend ONLINE again
    log.feed("proxysql.variables", VariablesReading(dict(variables, **{"mysql-threads": "8"}), 4), 201.0)
    log.feed("proxysql.connection_pool", pools[0], 201.5)
    log.feed("proxysql.header_status", global_status(5), 202.0)
    [restart] = log.events()
    assert (restart.source, restart.kind, restart.wall_time, restart.old, restart.new) == (
        "proxysql", "restart", 200.0, "8m22s", "3s")
    assert restart.label == "proxysql restarted" and restart.marker == "R"
    # after the restart, changes are events again
    log.feed("proxysql.variables", VariablesReading(dict(variables, **{"mysql-threads": "16"}), 34), 231.0)
    assert changes(log.events()[1:]) == [("proxysql", "variable", "mysql-threads", "8", "16")]


def test_the_variables_reading_sees_a_restart_of_its_own():
    log = EventLog()
    log.feed("mysql.variables.db1:3306", VariablesReading({"max_connections": "151"}, 1000), 10.0)
    log.feed("mysql.variables.db1:3306", VariablesReading({"max_connections": "500"}, 20), 40.0)
    assert changes(log.events()) == [("db1:3306", "restart", "Uptime", "16m40s", "20s")]


def server(uptime: int, *channels: Channel, denied: Optional[str] = None) -> ServerReading:
    return ServerReading(status={"Uptime": uptime, "Questions": 5}, variables={"read_only": "ON"},
                         channels=tuple(channels), replication_denied=denied)


def channel(io: str, sql: str, name: str = "") -> Channel:
    return Channel(name=name, source="127.0.0.1:3331", io_running=io, sql_running=sql, lag=None)


def test_a_replica_thread_stopped_and_started_again():
    readings = [server(100, channel("Yes", "Yes")), server(102, channel("Yes", "No")),
                server(104, denied="SLAVE MONITOR"),  # not read: nothing said about the threads
                server(106, channel("Yes", "Yes"))]
    events = fold_all(readings, "mysql.server.127.0.0.1:3332")
    assert [(e.source, e.what, e.change, e.severity) for e in events] == [
        ("127.0.0.1:3332", "SQL thread", "Yes \u2192 No", "danger"),
        ("127.0.0.1:3332", "SQL thread", "No \u2192 Yes", "info")]


def test_a_named_channel_and_a_replica_that_became_a_primary():
    events = fold_all([server(100, channel("Yes", "Yes", name="east")), server(101)], "mysql.server.db:3306")
    assert [(e.what, e.change) for e in events] == [
        ("channel 'east' IO thread", "Yes \u2192 (none)"), ("channel 'east' SQL thread", "Yes \u2192 (none)")]


def test_a_mysql_server_restart_from_its_status_readings():
    events = fold_all([server(5000), server(5001), server(2), server(3)], "mysql.server.db:3306")
    assert changes(events) == [("db:3306", "restart", "Uptime", "1h23m", "2s")]


def test_moving_positions_are_not_settings_and_passwords_are_never_shown():
    before = {"gtid_binlog_pos": "0-1-10", "max_connections": "151", "mysql-monitor_password": "s3cret"}
    after = {"gtid_binlog_pos": "0-1-99", "max_connections": "151", "mysql-monitor_password": "n3wer"}
    events = fold_all([VariablesReading(before, 10), VariablesReading(after, 40)], "proxysql.variables")
    assert [(e.what, e.old, e.new) for e in events] == [("mysql-monitor_password", "(hidden)", "(hidden)")]
    # a setting about passwords is no password: shown as it is
    events = fold_all([VariablesReading({"password_history": "0"}, 10), VariablesReading({"password_history": "5"}, 40)],
                      "mysql.variables.127.0.0.1:3306")
    assert [(e.what, e.old, e.new) for e in events] == [("password_history", "0", "5")]


def test_the_log_keeps_the_last_events_and_counts_what_is_new():
    log = EventLog(limit=3)
    for i in range(6):
        log.feed("proxysql.variables", VariablesReading({"v": str(i)}, 100 + i), float(i))
    assert [e.new for e in log.events()] == ["3", "4", "5"]
    new, mark = log.since(0)
    assert [e.new for e in new] == ["3", "4", "5"] and mark == 5
    log.feed("proxysql.variables", VariablesReading({"v": "6"}, 200), 6.0)
    assert [e.new for e in log.since(mark)[0]] == ["6"]
    assert log.between(4.0, 5.5) == [(4.0, "V", "v 4"), (5.0, "V", "v 5")]
    assert [e.new for e in log.events(until=4.5)] == ["4"]


def test_with_several_nodes_each_node_is_compared_with_its_own_readings():
    """-H a,b: watching another node (n) is no change; each node's events name it."""
    pools = tables(Recording.load(), "stats_mysql_connection_pool")
    online, shunned = pools[0], pools[70]  # 3313 SHUNNED in the second
    watched = ["proxysql 10.0.0.1:6032"]
    log = EventLog()
    log.proxysql_name = lambda: watched[0]
    log.feed("proxysql.connection_pool", online, 1.0)
    watched[0] = "proxysql 10.0.0.2:6032"  # n: the other node, whose 3313 is SHUNNED
    log.feed("proxysql.connection_pool", shunned, 2.0)
    watched[0] = "proxysql 10.0.0.1:6032"  # and back
    log.feed("proxysql.connection_pool", online, 3.0)
    assert log.events() == []
    log.feed("proxysql.connection_pool", shunned, 4.0)
    assert changes(log.events()) == [("proxysql 10.0.0.1:6032", "status", "hg 20 127.0.0.1:3313", "ONLINE", "SHUNNED")]


def test_a_proxysql_3_compares_each_side_s_pool_with_its_own():
    cols = ("hostgroup", "srv_host", "srv_port", "status")
    mysql = Table(cols, (("10", "127.0.0.1", "3306", "ONLINE"),))
    pgsql = lambda status: Table(cols, (("100", "127.0.0.1", "5432", status),))  # noqa: E731
    log = EventLog()
    for i in range(3):  # the two pools read in turn: no change
        log.feed("proxysql.connection_pool", mysql, 10.0 * i)
        log.feed("proxysql.pgsql.connection_pool", pgsql("ONLINE"), 10.0 * i + 1)
    assert log.events() == []
    log.feed("proxysql.pgsql.connection_pool", pgsql("SHUNNED"), 40.0)
    log.feed("proxysql.connection_pool", mysql, 41.0)
    assert changes(log.events()) == [("proxysql", "status", "pgsql hg 100 127.0.0.1:5432", "ONLINE", "SHUNNED")]


def test_a_cluster_node_restart_is_one_event_naming_the_node():
    metrics = tables(Recording.load("cluster"), "stats_proxysql_servers_metrics")[:30]
    assert fold_all(metrics, "proxysql.cluster_metrics") == []  # every node's uptime only grows
    last = metrics[-1]
    at = {c: i for i, c in enumerate(last.columns)}

    def restarted(uptime: str) -> Table:
        return Table(last.columns, tuple(tuple(uptime if (c == "Uptime_s" and r[at["port"]] == "6052") else v
                                               for c, v in zip(last.columns, r)) for r in last.rows))

    # the same uptimes a few seconds behind, as another node saw them (the watched node changed)
    behind = Table(last.columns, tuple(tuple(str(int(v) - 5) if c == "Uptime_s" else v for c, v in zip(last.columns, r))
                                       for r in last.rows))
    assert fold_all(metrics + [behind], "proxysql.cluster_metrics") == []
    events = fold_all(metrics + [restarted("3"), restarted("4")], "proxysql.cluster_metrics")
    assert [(e.source, e.kind, e.what, e.new, e.label, e.marker) for e in events] == [
        ("cluster", "node", "127.0.0.1:6052", "3s", "127.0.0.1:6052 restarted", "N")]


# ----- a source's connection: unreachable, then back (the engine's source states) -----------------


def fold_states(states) -> List[Event]:
    """Hand-made source states through the event log, as the engine's observer tells them."""
    log = EventLog()
    for state in states:
        log.observe("state", state)
    return log.events()


def state(name: str, at: float, error: Optional[str] = None, connected: bool = False, connecting: bool = False,
          failures: int = 0) -> SourceState:
    return SourceState(name, connected=connected, connecting=connecting, error=error, failures=failures,
                       changed_at=at - 1000.0, wall_time=at)


def test_a_server_stopped_for_20_seconds_is_unreachable_once_then_back_after_21s():
    server = "mysql:127.0.0.1:3306"
    refused = "connection refused (is the MySQL server running and listening there?)"
    events = fold_states([
        state(server, 100.0, connecting=True),  # the first attempt: says nothing
        state(server, 100.2, connected=True),  # the baseline: no event
        state(server, 140.0, error="Lost connection to server during query", failures=1),
        state(server, 141.0, error="Lost connection to server during query", connecting=True, failures=1),
        state(server, 141.1, error=refused, failures=2),  # retries that fail: no event each
        state(server, 143.1, error=refused, connecting=True, failures=2),
        state(server, 143.2, error=refused, failures=3),
        state(server, 161.3, error=refused, connecting=True, failures=3),
        state(server, 161.4, connected=True),
    ])
    assert [(e.source, e.kind, e.what, e.old, e.new, e.severity) for e in events] == [
        ("127.0.0.1:3306", "reach", "connection", "reachable", "unreachable: Lost connection to server during query",
         "warning"),
        ("127.0.0.1:3306", "reach", "connection", "unreachable", "back after 21s", "info")]
    down, back = events
    assert (down.wall_time, back.wall_time) == (140.0, 161.4)
    assert (down.taken_at, back.taken_at) == (140.0 - 1000.0, 161.4 - 1000.0)  # the engine's clock
    assert (down.marker, down.label, back.label) == ("U", "127.0.0.1:3306 unreachable", "127.0.0.1:3306 back after 21s")


def test_a_server_down_at_start_is_one_unreachable_event_and_no_back():
    denied = "access denied: Access denied for user 'monitor'@'localhost' (using password: YES)"
    events = fold_states([state("mysql:db1:3306", 10.0, connecting=True), state("mysql:db1:3306", 10.5, error=denied),
                          state("mysql:db1:3306", 20.0, error=denied), state("mysql:db1:3306", 30.0, connected=True)])
    assert [(e.source, e.old, e.new) for e in events] == [("db1:3306", "(none)", f"unreachable: {denied}")]
    # reached once since: the next outage is an event again, and its end a "back"
    later = fold_states([state("mysql:db1:3306", 10.5, error=denied), state("mysql:db1:3306", 30.0, connected=True),
                         state("mysql:db1:3306", 90.0, error="timed out"),
                         state("mysql:db1:3306", 150.0, connected=True)])
    assert [e.change for e in later] == [f"(none) \u2192 unreachable: {denied}", "reachable \u2192 unreachable: timed out",
                                         "unreachable \u2192 back after 1m00s"]


def test_proxysql_is_named_as_its_other_events_and_this_host_or_a_cluster_peer_make_none():
    log = EventLog()
    log.proxysql_name = lambda: "proxysql 10.0.0.1:6032"
    for name in ("proxysql", "host", "node 10.0.0.2:6032"):
        log.observe("state", state(name, 1.0, connected=True))
        log.observe("state", state(name, 5.0, error="timed out"))
    assert [(e.source, e.new) for e in log.events()] == [("proxysql 10.0.0.1:6032", "unreachable: timed out")]


def test_reach_and_readings_share_one_fold_state():
    # a reading folded between two connection states keeps the connection's state, and back
    st, _ = fold_reach(EMPTY, "127.0.0.1:3306", True, None, 1.0)
    st, _ = fold_reach(st, "127.0.0.1:3306", False, "timed out", 2.0)
    st, _ = fold(st, "mysql.variables.127.0.0.1:3306", VariablesReading({"max_connections": "151"}, 3.0), 2.5)
    st, back = fold_reach(st, "127.0.0.1:3306", True, None, 9.6)
    assert [e.new for e in back] == ["back after 8s"]
