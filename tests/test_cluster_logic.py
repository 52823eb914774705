"""Cluster arithmetic and the node list, without a terminal: drift, restarts, per-peer rates,
-H parsing, the all-nodes sums; worked numbers from the three-node cluster recording."""
from __future__ import annotations


import pytest

from proxytop.core import Table
from proxytop import options
from proxytop.metrics import cluster
from proxytop.polling.connection import Endpoint
from proxytop.polling.nodes import NodeSet
from proxytop.screens.cluster import node_rows
from proxytop.screens import allnodes
from tests.cluster_doubles import node_recording
from tests.proxysql_double import CLUSTER_NODES

NODE1, NODE2, NODE3 = CLUSTER_NODES


def frames(node: str, table: str):
    return [Table(tuple(columns), tuple(tuple(r) for r in rows))
            for columns, rows in node_recording(node).series[table]]


def names(label: str) -> str:
    return {NODE1: "node-1", NODE2: "node-2", NODE3: "node-3"}.get(label, label)


# ----- drift ------------------------------------------------------------------------------------

@pytest.mark.parametrize("watched", CLUSTER_NODES)
def test_every_node_sees_node3_drift_in_query_rules_and_admin_variables(watched):
    checksums = frames(watched, "stats_proxysql_servers_checksums")
    found = cluster.modules(checksums[10], checksums[11])
    by_name = {m.name: m for m in found}
    assert len(found) == 7
    assert by_name["mysql_query_rules"].differing == (NODE3,)
    assert by_name["mysql_query_rules"].reference == "0x555DC6F33968FB9A"
    assert by_name["admin_variables"].differing == (NODE3,)
    assert all(by_name[n].in_sync for n in ("mysql_servers", "mysql_users", "mysql_variables",
                                             "proxysql_servers", "mysql_servers_v2"))
    text, differs = cluster.drift_summary(found, names)
    assert differs and "mysql_query_rules differs on node-3 for " in text


def test_drift_duration_is_on_proxysqls_clock():
    # Node 1, first reading: node 3's rules changed_at 1795385751, updated_at 1795385808 -> 57 s
    first = frames(NODE1, "stats_proxysql_servers_checksums")[0]
    module = {m.name: m for m in cluster.modules(None, first)}["mysql_query_rules"]
    newest = max(c.updated_at for c in module.cells.values())
    assert module.since == newest - 1795385751
    assert module.cells[NODE3].short == "E2185D39 v2"


def test_climbing_diff_check_is_marked_and_steady_one_is_not():
    checksums = frames(NODE1, "stats_proxysql_servers_checksums")
    module = {m.name: m for m in cluster.modules(checksums[30], checksums[31])}["mysql_query_rules"]
    assert module.cells[NODE3].climbing and module.cells[NODE3].diff_check > 58
    assert not module.cells[NODE2].climbing and module.cells[NODE2].diff_check == 0


def test_two_nodes_without_majority_both_differ():
    columns = ("hostname", "port", "name", "version", "epoch", "checksum", "changed_at", "updated_at", "diff_check")
    table = Table(columns, (("a", "1", "mysql_users", "3", "10", "0x1", "100", "160", "5"),
                            ("b", "1", "mysql_users", "2", "9", "0x2", "130", "160", "0")))
    [module] = cluster.modules(None, table)
    assert module.reference is None and module.differing == ("a:1", "b:1") and module.since == 30
    assert cluster.drift_summary([module], str) == ("mysql_users differs between a:1 and b:1 for 30s", True)


# ----- restarts and rates -----------------------------------------------------------------------

def test_peer_rates_from_two_refreshes_of_the_recording():
    metrics = frames(NODE1, "stats_proxysql_servers_metrics")
    samples = cluster.peer_samples(metrics[:60])
    node1 = samples[NODE1]
    assert len(node1) >= 3 and all(b[0] > a[0] for a, b in zip(node1, node1[1:]))
    (u0, q0, c0), (u1, q1, c1) = node1[-2], node1[-1]
    queries_s, created_s = cluster.peer_rates(node1)
    assert queries_s == pytest.approx((q1 - q0) / (u1 - u0))
    assert 300 < queries_s < 1500  # node 1 carries most of the sysbench load
    assert cluster.peer_rates(samples[NODE3])[0] in (0, None)  # node 3 has no client traffic
    assert not cluster.restarted(node1)


def test_uptime_drop_is_a_restart_and_gives_no_rate_across_it():
    metrics = frames(NODE1, "stats_proxysql_servers_metrics")[:30]
    columns = metrics[0].columns
    up, queries = columns.index("Uptime_s"), columns.index("Queries")
    restarted_frame = Table(columns, tuple(
        tuple("5" if i == up else ("12" if i == queries else v) for i, v in enumerate(row))
        if f"{row[0]}:{row[1]}" == NODE2 else row for row in metrics[-1].rows))
    samples = cluster.peer_samples(metrics + [restarted_frame])
    assert cluster.restarted(samples[NODE2]) and not cluster.restarted(samples[NODE1])
    assert cluster.peer_rates(samples[NODE2]) == (None, None)


def test_node_rows_worked_from_the_recording():
    rec_metrics = frames(NODE1, "stats_proxysql_servers_metrics")[:40]
    checksums = frames(NODE1, "stats_proxysql_servers_checksums")
    servers = Table(*[(tuple(e["columns"]), tuple(tuple(r) for r in e["rows"]))
                      for e in [node_recording(NODE1).fixed[("admin", "select * from runtime_proxysql_servers")]]][0])
    node_set = NodeSet([Endpoint(host="127.0.0.1", port=6042)])
    rows = {r["_id"]: r for r in node_rows(servers, rec_metrics[-1], cluster.peer_samples(rec_metrics),
                                           cluster.modules(checksums[0], checksums[1]), checksums[1], None,
                                           node_set, {NODE1: ("ok 1ms", "good")}, 0)}
    assert set(rows) == set(CLUSTER_NODES)
    assert rows[NODE1]["watched"] and not rows[NODE2]["watched"]
    assert rows[NODE2]["name"] == "node-2" and rows[NODE2]["role"] == "core"
    assert rows[NODE3]["config"] == "differs: admin_variables, mysql_query_rules"
    assert rows[NODE1]["config"] == "in sync"
    assert rows[NODE1]["queries_s"] > rows[NODE2]["queries_s"] > 0
    assert rows[NODE1]["reach"] == "ok 1ms" and rows[NODE2]["reach"] == "\u2014"
    assert rows[NODE1]["check_age_s"] == int(rec_metrics[-1].dicts()[2]["last_check_ms"]) / 1000.0


def test_clients_status_tells_when_each_peer_last_polled():
    [(columns, rows)] = node_recording(NODE1).series["stats_proxysql_servers_clients_status"][:1]
    seen = cluster.clients_seen(Table(tuple(columns), tuple(tuple(r) for r in rows)))
    assert set(seen) == set(CLUSTER_NODES)


# ----- the node list ----------------------------------------------------------------------------

def test_dash_h_repeated_and_comma_separated_give_every_node_in_order():
    config = options.parse(["-H", "10.0.0.1:6032,10.0.0.2", "-H", "10.0.0.3:7032", "-P", "6100", "-u", "radmin"],
                           {})
    assert [e.label for e in config.endpoints] == ["10.0.0.1:6032", "10.0.0.2:6100", "10.0.0.3:7032"]
    assert {e.user for e in config.endpoints} == {"radmin"}
    assert config.endpoint.label == "10.0.0.1:6032" and not config.cluster


def test_single_host_is_unchanged_and_cluster_flag_is_kept():
    config = options.parse(["-H", "db1", "--cluster"], {})
    assert config.endpoint.label == "db1:6032" and [e.label for e in config.endpoints] == ["db1:6032"]
    assert config.cluster


@pytest.mark.parametrize("bad", ["db1:notaport", "db1:70000", "[::1", ":6032"])
def test_bad_host_is_a_usage_error(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        options.parse(["-H", bad], {})
    assert exc.value.code == 2
    assert "-H" in capsys.readouterr().err


def test_nodeset_titles_steps_and_discovers_with_the_first_nodes_credentials():
    first = Endpoint(host="127.0.0.1", port=6042, user="radmin", password="secret")
    node_set = NodeSet([first], discover=True)
    servers = node_recording(NODE1).fixed[("admin", "select * from runtime_proxysql_servers")]
    added = node_set.learn(Table(tuple(servers["columns"]), tuple(tuple(r) for r in servers["rows"])))
    assert [n.label for n in added] == [NODE3, NODE2]
    assert all(n.endpoint.user == "radmin" and n.endpoint.password == "secret" for n in node_set.nodes)
    assert node_set.title() == f"node 1/3 {NODE1} node-1"
    assert node_set.step(-1).label == NODE2 and node_set.title() == f"node 3/3 {NODE2} node-2"
    assert node_set.learn(Table(tuple(servers["columns"]), tuple(tuple(r) for r in servers["rows"]))) == []


def test_without_discovery_the_cluster_only_names_the_given_nodes():
    node_set = NodeSet([Endpoint(host="127.0.0.1", port=6042)])
    servers = node_recording(NODE1).fixed[("admin", "select * from runtime_proxysql_servers")]
    assert node_set.learn(Table(tuple(servers["columns"]), tuple(tuple(r) for r in servers["rows"]))) == []
    assert len(node_set) == 1 and node_set.title() == NODE1 and node_set.name(NODE1) == "node-1"


# ----- all nodes ----------------------------------------------------------------------------------

def test_all_nodes_pool_adds_each_backends_rates_over_the_nodes():
    from proxytop.core import Snapshot
    from proxytop.screens.connpool import ConnPoolScreen, pool_rows

    def pair(node, at):
        series = frames(node, "stats_mysql_connection_pool")
        return (Snapshot("p", series[at], taken_at=10.0, duration=0.01),
                Snapshot("p", series[at + 1], taken_at=12.0, duration=0.01))

    one, two = pool_rows(*pair(NODE1, 30), None), pool_rows(*pair(NODE2, 30), None)
    merged = {r["_id"]: r for r in allnodes.merge([one, two], ConnPoolScreen.columns)}
    for row in one:
        other = next(r for r in two if r["_id"] == row["_id"])
        total = merged[row["_id"]]
        assert total["_nodes"] == 2
        if row["queries_s"] is not None and other["queries_s"] is not None:
            assert total["queries_s"] == pytest.approx(row["queries_s"] + other["queries_s"])
        assert total["conn_used"] == row["conn_used"] + other["conn_used"]
        assert total["latency_ms"] == max(row["latency_ms"], other["latency_ms"])
    primary = [r for r in merged.values() if r["server"].endswith(":3331")][0]
    assert primary["queries_s"] > 0


def test_peer_tracker_reads_each_reading_once_and_agrees_with_peer_samples():
    from proxytop.core import Snapshot

    metrics = frames(NODE1, "stats_proxysql_servers_metrics")[:80]
    snapshots = [Snapshot("m", t, taken_at=float(i), duration=0.0) for i, t in enumerate(metrics)]
    tracker = cluster.PeerTracker()
    for end in range(1, len(snapshots) + 1):
        window = tuple(snapshots[max(0, end - 30):end])  # a history of 30 readings
        tracked = tracker.update(window)
        expected = cluster.peer_samples([s.data for s in window])
        for label, samples in expected.items():
            assert tracked[label][-len(samples):] == samples
            assert len(tracked[label]) <= len(samples) + 1
