"""The Cluster screen and several endpoints, end to end: the installed proxytop in a
pseudo-terminal against three test doubles serving the three-node cluster recording."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from tests.cluster_doubles import ClusterDoubles
from tests.proxysql_double import ProxySQLDouble
from tests.terminal import ENTER, DOWN, proxytop_command


@pytest.fixture
def three():
    cluster = ClusterDoubles().start()
    yield cluster
    cluster.stop()


def count(double, table: str) -> int:
    return sum(1 for sql in double.queries() if table in sql)


def start(proxytop_term, *args, cols=160, rows=40):
    return proxytop_term("-d", "1", "--connect-timeout", "1", *args, cols=cols, rows=rows)


def node_line(screen: str, port: int) -> str:
    for line in screen.splitlines()[3:]:  # below the header and tabs
        if f"127.0.0.1:{port} " in line and ("node-" in line or "given" in line):
            return line
    return ""


def test_cluster_screen_shows_every_node_drift_and_reachability(proxytop_term, three):
    term = start(proxytop_term, "-H", three.hosts(), "--screen", "cluster")
    screen = term.wait_until(lambda s: "mysql_query_rules differs on node-3" in s
                             and all("ok" in node_line(s, p) for p in three.ports), what="drift and three reachable nodes")
    screen = term.wait_for(f"node 1/3 {three.label(0)} node-1")  # the name is learnt from the cluster tables
    assert re.search(r"mysql_query_rules\s+555DC6F3 v2\s+555DC6F3 v2\s+E2185D39 v2", screen)
    assert "differs: admin_variables, mysql_query_rules" in node_line(screen, three.ports[2])
    assert "in sync" in node_line(screen, three.ports[0])
    # Queries/s comes from two of node 1's own reports (every 10 s of its uptime)
    screen = term.wait_until(lambda s: re.search(r"node-1\s+[\d.]+(µs|ms|s)\s+\d+s\s+\S+\s+[\d.]+k?\s+\d+",
                                                 node_line(s, three.ports[0])) is not None,
                             timeout=30, what="node 1's Queries/s")
    print("\n" + screen)


def test_only_the_watched_node_is_polled_for_screen_tables_and_n_switches(proxytop_term, three):
    first, second, third = three.doubles
    term = start(proxytop_term, "-H", three.hosts())
    term.wait_for("127.0.0.1:3331")
    term.wait_until(lambda s: count(first, "stats_mysql_connection_pool") >= 3, what="node 1 polled")
    assert count(second, "stats_mysql_connection_pool") == 0 and count(third, "stats_mysql_connection_pool") == 0
    term.send("n")
    term.wait_for(f"node 2/3 {three.label(1)} node-2")
    term.wait_until(lambda s: count(second, "stats_mysql_connection_pool") >= 2, what="node 2 polled")
    polled_first = count(first, "stats_mysql_connection_pool")
    term.wait_until(lambda s: count(second, "stats_mysql_connection_pool") >= 5, what="more polls of node 2")
    assert count(first, "stats_mysql_connection_pool") <= polled_first + 1  # at most one in flight at the switch
    assert count(third, "stats_mysql_connection_pool") == 0
    term.send("N")
    term.wait_for(f"node 1/3 {three.label(0)} node-1")
    term.send("N")
    term.wait_for(f"node 3/3 {three.label(2)} node-3")


def test_a_node_whose_uptime_drops_is_shown_as_restarted(proxytop_term, three):
    first = three.doubles[0]
    term = start(proxytop_term, "-H", three.hosts(), "--screen", "cluster")
    term.wait_until(lambda s: all("ok" in node_line(s, p) for p in three.ports), what="three reachable nodes")
    assert "restarted" not in term.text()
    node2 = str(three.ports[1])

    def restarted(columns, rows):  # node 2 reports an uptime of 7 s from now on
        at, port_at = columns.index("Uptime_s"), columns.index("port")
        return columns, [[("7" if i == at and row[port_at] == node2 else v) for i, v in enumerate(row)]
                         for row in rows]

    previous = first.transforms["stats_proxysql_servers_metrics"]
    first.transforms["stats_proxysql_servers_metrics"] = lambda c, r: restarted(*previous(c, r))
    screen = term.wait_for("node-2 restarted 7s ago")
    assert "7s ago" in node_line(screen, three.ports[1])
    assert "restarted" not in node_line(screen, three.ports[0])


def test_enter_on_a_cluster_row_watches_that_node(proxytop_term, three):
    term = start(proxytop_term, "-H", three.hosts(), "--screen", "cluster")
    term.wait_until(lambda s: all(node_line(s, p) for p in three.ports), what="three rows")
    second_row = sorted(three.label(i) for i in range(3))[1]  # rows are sorted by address
    index = [three.label(i) for i in range(3)].index(second_row)
    term.send(DOWN)
    term.send(ENTER)
    term.wait_for(f"node {index + 1}/3 {second_row} node-{index + 1}")
    term.wait_until(lambda s: "\u25b6" in node_line(s, three.ports[index]), what="the marker on the watched node")


def test_cluster_discovers_peers_from_the_first_node(proxytop_term, three):
    term = start(proxytop_term, "-H", three.label(0), "--cluster", "--screen", "cluster")
    term.wait_until(lambda s: all("ok" in node_line(s, p) for p in three.ports), what="all discovered nodes reachable")
    term.send("n")
    term.wait_for(re.escape(f"node 2/3 127.0.0.1:"))


def test_a_killed_and_a_hung_node_say_so_while_the_others_keep_answering(proxytop_term, three):
    first, second, third = three.doubles
    term = start(proxytop_term, "-H", three.hosts(), "--screen", "cluster")
    term.wait_until(lambda s: all("ok" in node_line(s, p) for p in three.ports), what="three reachable nodes")
    third.stop()
    second.hang()
    try:
        screen = term.wait_until(lambda s: "down:" in node_line(s, three.ports[2])
                                 and "down:" in node_line(s, three.ports[1]), timeout=20, what="two nodes down")
        assert "ok" in node_line(screen, three.ports[0])
        before = count(first, "stats_proxysql_servers_checksums")
        term.wait_until(lambda s: count(first, "stats_proxysql_servers_checksums") >= before + 2,
                        what="node 1 still polled")
        # watching the dead node says why, in the header, and the keys still answer
        term.send("N")
        term.wait_for(f"node 3/3 {three.label(2)}")
        term.wait_for("disconnected", timeout=15)
        term.send("n")
        term.wait_for(f"node 1/3 {three.label(0)}")
        term.wait_until(lambda s: "connected" in s and "disconnected" not in s, timeout=15, what="node 1 again")
    finally:
        second.hang(False)


def test_without_a_cluster_the_screen_says_so_in_one_line(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording).start()  # the single-node 2.7 recording: no peers
    try:
        term = start(proxytop_term, "-P", str(double.port), "--screen", "cluster")
        screen = term.wait_for("No ProxySQL Cluster on")
        assert "Traceback" not in screen
        term.send("n")
        term.wait_for("one ProxySQL node only")
    finally:
        double.stop()


def test_all_nodes_view_polls_every_node_and_adds_their_rates(proxytop_term, three):
    first, second, third = three.doubles
    term = start(proxytop_term, "-H", three.hosts())
    term.wait_for("127.0.0.1:3331")
    assert count(second, "stats_mysql_connection_pool") == 0
    term.send("a")
    term.wait_for("ALL NODES")
    term.wait_for("sum of 3/3 ProxySQL nodes")
    term.wait_until(lambda s: count(second, "stats_mysql_connection_pool") >= 2
                    and count(third, "stats_mysql_connection_pool") >= 2, what="every node polled")
    term.send("a")
    term.wait_until(lambda s: "ALL NODES" not in s, what="back to the watched node")
    term.send("5")
    term.send("a")
    term.wait_for("stats_mysql_commands_counters on every node")


def test_batch_cluster_json_records_name_their_node(three):
    env = dict(os.environ)
    out = subprocess.run(list(proxytop_command()) + ["-H", three.hosts(), "--batch", "--screen", "cluster",
                                                      "--format", "json", "--count", "1"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env)
    assert out.returncode == 0, out.stderr
    # (not the events' own records: a MySQL server a node lists that cannot be reached is one)
    [record] = [r for r in map(json.loads, out.stdout.splitlines()) if "screen" in r]
    assert record["screen"] == "cluster" and record["node"] == three.label(0)
    rows = {r["node"]: r for r in record["rows"]}
    assert set(rows) == {three.label(i) for i in range(3)}
    assert rows[three.label(2)]["config"] == "differs: admin_variables, mysql_query_rules"
    assert any("mysql_query_rules differs on node-3" in note for note in record["notes"])
    csv_out = subprocess.run(list(proxytop_command()) + ["-H", three.hosts(), "--batch", "--screen", "connpool",
                                                         "--format", "csv", "--count", "1"],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env)
    lines = csv_out.stdout.splitlines()
    assert lines[0].startswith("time,screen,node,")
    assert all(f",connpool,{three.label(0)}," in line for line in lines[1:])
