"""The Galera screen over a real three-node MariaDB Galera cluster (tests/galera.py): all
Synced; one node desynced by the test (SET GLOBAL wsrep_desync) and back, with the header
alarm on this screen and on another; one node stopped (cluster size 2). ProxySQL's side comes
from the ProxySQL double: no recording has Galera backends, so its Galera hostgroups and
monitor log rows are written here, in the shapes of ProxySQL's source (see
tests/proxysql_double.py), and are not a real ProxySQL's."""
from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from proxytop.collectors.galera import GaleraReading
from proxytop.collectors.innodb_fleet import Fleet
from proxytop.config.mysql_options import Credentials
from proxytop.core import Snapshot
from proxytop.polling.connection import Endpoint
from proxytop.recordings.recording import dumps, loads
from proxytop.screens.galera import GaleraScreen
from proxytop.screens.base import DataView
from tests.bench_health import SnapshotEngine
from tests.galera import galera_or_skip
from tests.test_servers import mysql_args, row_of
from tests.terminal import proxytop_command

GALERA_HOSTGROUPS = [[10, 11, 20, 30, 1, 1, 0, 100, "galera"]]


@pytest.fixture(scope="module")
def cluster():
    started = galera_or_skip(3)
    try:
        yield started
    finally:
        started.stop()


def alarm_of(screen: str) -> str:
    return next((line for line in screen.splitlines()[:6] if line.startswith("! ")), "")


def synced(screen: str, node, size: int = 3) -> bool:
    return re.search(rf"Primary\s+Synced\s+{size}\s+\d+\s+no\b.*\bON\b", row_of(screen, node.address)) is not None


# ----- over the real cluster ------------------------------------------------------------------

def test_every_node_synced_is_a_row_and_no_alarm(cluster, proxytop_term):
    nodes = cluster.nodes
    term = proxytop_term(*mysql_args(*nodes), "--screen", "galera", "-d", "1", cols=200, rows=24)
    screen = term.wait_until(lambda s: all(synced(s, n) for n in nodes), timeout=30, what="three Synced rows")
    assert "Server" in screen and "FCpaus%" in screen and "Split" in screen
    for n, node in enumerate(nodes, 1):
        assert f" n{n} " in row_of(screen, node.address)
    # rates need two readings: flow-control paused share and certification failures appear
    term.wait_until(lambda s: re.search(r"Synced\s+3\s+\d+\s+no\s+0(\.0)?\s", row_of(s, nodes[0].address)) is not None,
                    timeout=15, what="a paused fraction")
    assert "galera" not in alarm_of(term.text())
    term.send("q")
    assert term.wait_exit(5) == 0


def test_a_desynced_node_and_back_with_the_header_alarm_on_another_screen(cluster, proxytop_term):
    nodes = cluster.nodes
    victim = nodes[1]
    term = proxytop_term(*mysql_args(*nodes), "-d", "1", cols=200, rows=24)  # the Servers screen
    term.wait_until(lambda s: all("galera" in row_of(s, n.address) for n in nodes), timeout=30, what="three nodes")
    victim.query("SET GLOBAL wsrep_desync = ON")
    try:
        # off the Galera screen its readings come every 5 s, for the alarm alone
        term.wait_until(lambda s: f"galera {victim.address} Donor/Desynced" in alarm_of(s), timeout=20,
                        what="the alarm on the Servers screen")
        term.go("Galera")
        screen = term.wait_until(lambda s: "Donor/Desynced" in row_of(s, victim.address), timeout=15,
                                 what="the desynced row")
        assert "wsrep_desync=ON" in row_of(screen, victim.address)
        assert synced(screen, nodes[0]) and synced(screen, nodes[2])
    finally:
        victim.query("SET GLOBAL wsrep_desync = OFF")
    term.wait_until(lambda s: synced(s, victim) and "galera" not in alarm_of(s), timeout=30,
                    what="Synced again, no alarm")
    term.send("q")
    assert term.wait_exit(5) == 0


def test_batch_json_gives_the_nodes(cluster):
    result = subprocess.run(list(proxytop_command()) + mysql_args(*cluster.nodes)
                            + ["--batch", "--count", "2", "-d", "1", "--screen", "galera", "--format", "json"],
                            capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    report = [json.loads(line) for line in result.stdout.splitlines()][-1]
    rows = {row["server"]: row for row in report["rows"]}
    assert set(rows) == {node.address for node in cluster.nodes}
    for n, node in enumerate(cluster.nodes, 1):
        row = rows[node.address]
        assert row["node"] == f"n{n}" and row["state"] == "Synced" and row["status"] == "Primary"
        assert row["size"] == 3 and row["split"] == "no" and row["ready"] == "ON"
        assert row["paused_pct"] is not None and row["cert_s"] is not None


def test_the_row_says_why_proxysql_moved_a_node(cluster, proxytop_term, proxysql_double):
    nodes = cluster.nodes
    proxysql_double.replace_table("runtime_mysql_galera_hostgroups", GALERA_HOSTGROUPS)
    now_us = int(time.time() * 1e6)
    checks = [[node.host, node.port, now_us, 900, "YES", "YES", 312 if node is nodes[1] else 0, 4, "NO", "NO", "NO",
               "NO", None] for node in nodes]
    proxysql_double.transforms["mysql_server_galera_log"] = lambda columns, rows: (columns, rows + checks)
    term = proxytop_term("-P", str(proxysql_double.port), "--no-discover", *mysql_args(*nodes), "--screen", "galera",
                         cols=220, rows=30)
    screen = term.wait_until(lambda s: "offline" in row_of(s, nodes[1].address) and "reader" in row_of(s, nodes[0].address),
                             timeout=30, what="ProxySQL's verdicts on the rows")
    assert "ProxySQL: offline hostgroup 30: wsrep_local_recv_queue 312" in row_of(screen, nodes[1].address)
    assert re.search(rf"  {re.escape(nodes[1].address)}  checked \S+  offline hostgroup 30: wsrep_local_recv_queue 312 > "
                     r"max_transactions_behind 100", screen)
    term.send("\r")  # Enter: the selected node's last checks
    term.wait_until(lambda s: re.search(r"ProxySQL's last Galera checks of 127\.0\.0\.1:\d+", s) is not None
                    and "hostgroup" in s, what="the node's checks")
    term.send("q")


def test_a_stopped_node_leaves_a_cluster_of_two(cluster, proxytop_term):  # last: the cluster stays so
    nodes = cluster.nodes
    term = proxytop_term(*mysql_args(*nodes), "--screen", "galera", "-d", "1", cols=200, rows=24)
    term.wait_until(lambda s: all(synced(s, n) for n in nodes), timeout=30, what="three Synced rows")
    gone = nodes[2]
    gone.stop()
    screen = term.wait_until(lambda s: synced(s, nodes[0], size=2) and synced(s, nodes[1], size=2)
                             and "DOWN" in row_of(s, gone.address), timeout=60, what="two nodes left")
    assert f"galera {gone.address} down" in alarm_of(screen)
    term.send("q")
    assert term.wait_exit(5) == 0


def test_a_server_without_wsrep_is_no_row_and_one_line_says_so(mariadb):
    result = subprocess.run(list(proxytop_command()) + mysql_args(mariadb)
                            + ["--batch", "--count", "2", "-d", "1", "--screen", "galera", "--format", "json"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    report = [json.loads(line) for line in result.stdout.splitlines()][-1]
    assert report["rows"] == [] and report["notes"] == ["No Galera node: none of the 1 watched server(s) has wsrep on."]


# ----- ProxySQL's side, from the double --------------------------------------------------------

def galera_log_rows(now_us: int):
    """Three checks, newest last, as ProxySQL's Galera monitor logs them: a writer, a reader
    past max_transactions_behind, a desynced node."""
    row = lambda host, at, ro, queue, desync: [host, 3306, at, 900, "YES", ro, queue, 4, desync, "NO", "NO", "NO", None]
    return [row("10.0.0.1", now_us - 2_000_000, "NO", 0, "NO"), row("10.0.0.2", now_us - 1_000_000, "YES", 312, "NO"),
            row("10.0.0.3", now_us, "YES", 0, "YES")]


def test_proxysql_galera_hostgroups_and_why_it_moved_a_node(proxytop_term, proxysql_double):
    proxysql_double.replace_table("runtime_mysql_galera_hostgroups", GALERA_HOSTGROUPS)
    now_us = int(time.time() * 1e6)
    proxysql_double.transforms["mysql_server_galera_log"] = lambda columns, rows: (columns, rows + galera_log_rows(now_us))
    term = proxytop_term("-P", str(proxysql_double.port), "--no-discover", "--screen", "galera", cols=200, rows=30)
    screen = term.wait_until(lambda s: "10.0.0.3:3306" in s, timeout=20, what="ProxySQL's Galera checks")
    assert ("ProxySQL Galera hostgroups: writer 10, backup writer 11, reader 20, offline 30; max_writers 1, "
            "writer_is_also_reader 0, max_transactions_behind 100") in screen
    assert re.search(r"10\.0\.0\.1:3306\s+checked \d\d:\d\d:\d\d\s+writer hostgroup 10: writable", screen)
    assert re.search(r"10\.0\.0\.2:3306\s+checked \S+\s+offline hostgroup 30: wsrep_local_recv_queue 312 > "
                     r"max_transactions_behind 100", screen)
    assert re.search(r"10\.0\.0\.3:3306\s+checked \S+\s+offline hostgroup 30: wsrep_desync=YES", screen)
    assert "No Galera node" in screen
    term.send("q")
    assert term.wait_exit(5) == 0


def test_a_stats_user_is_told_the_galera_tables_need_an_admin(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "-u", "stats", "-p", "stats", "--no-discover",
                         "--screen", "galera", cols=160, rows=20)
    term.wait_for("ProxySQL's Galera hostgroups and monitor log need an admin user", timeout=15)
    term.send("q")
    assert term.wait_exit(5) == 0
    assert not [q for q in proxysql_double.queries() if "galera" in q]


# ----- the rows' figures, without a server ---------------------------------------------------

def node(taken_at, conf_id, paused_ns, cert, state="Synced"):
    status = {"wsrep_cluster_status": "Primary", "wsrep_local_state_comment": state, "wsrep_cluster_size": "3",
              "wsrep_cluster_conf_id": str(conf_id), "wsrep_cluster_state_uuid": "u", "wsrep_ready": "ON",
              "wsrep_flow_control_paused_ns": str(paused_ns), "wsrep_local_cert_failures": str(cert)}
    return Snapshot("g", GaleraReading(True, {"wsrep_cluster_name": "c"}, status), taken_at, 0.01)


def test_rows_rates_split_and_alarm_from_two_readings():
    fleet = Fleet(Credentials(user="u"), 1.0, discover=False)
    for port in (1, 2, 3):
        fleet.add_explicit(Endpoint(host="db", port=port, socket=None, user="u", password="", timeout=1.0))
    screen = GaleraScreen(fleet=fleet)
    view = DataView(SnapshotEngine({"mysql.galera.db:1": (node(10.0, 7, 0, 0), node(12.0, 7, 500_000_000, 4)),
                 "mysql.galera.db:2": (node(10.0, 7, 0, 0), node(12.0, 7, 0, 0, state="Donor/Desynced")),
                 "mysql.galera.db:3": (node(10.0, 6, 0, 0), node(12.0, 6, 0, 0))}, now=100.0))
    rows = {row["server"]: row for row in screen.rows(view)}
    assert rows["db:1"]["paused_pct"] == 25.0 and rows["db:1"]["cert_s"] == 2.0
    assert [rows[k]["split"] for k in ("db:1", "db:2", "db:3")] == ["no", "no", "split"]
    assert screen.alarm(view) == "galera db:1 flow control paused 25%  (+2 more)"
    assert dict(screen.alarm_readings(view)) == {f"mysql.galera.db:{p}": 5.0 for p in (1, 2, 3)}


def test_a_galera_reading_survives_a_recording():
    reading = node(12.0, 7, 500_000_000, 4).data
    assert loads(dumps(reading)) == reading
