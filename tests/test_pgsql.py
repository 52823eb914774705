"""ProxySQL 3.x and its PostgreSQL side: recognised from version and tables, every ProxySQL
screen on both sides of a ProxySQL 3.0.1 (the admin double serving the 3.0.1 recording: a
MariaDB and a PostgreSQL backend under load), ``m`` in the live view, ``--side``, batch,
recordings and replay, and a 2.x ProxySQL that has no PostgreSQL side."""
from __future__ import annotations

import doctest
import gzip
import importlib
import json
import os
import re
import subprocess
from types import SimpleNamespace
from typing import Dict, List

import pytest

from proxytop.core import Snapshot, Table
from proxytop.collectors.proxysql import ConnectionPool, GlobalStatus, RuntimeServers
from proxytop.collectors.proxysql_stats import (CommandCounters, ConfigQueryRules, MemoryMetrics, MySQLVariables,
                                                ProcessList, QueryRuleHits, RuntimeQueryRules)
from proxytop.collectors.sides import for_side
from proxytop.errors import NotInThisVersion, describe
from proxytop.metrics.sides import MYSQL, NO_PGSQL, NO_PGSQL_SERVERS, PGSQL, digest_memory, pgsql_problem
from proxytop.screens.glostat import TEXT, global_rows
from proxytop.screens.glostat import classify_pgsql
from proxytop.screens.proclist import NO_PGSQL_KILL, ProcListScreen
from proxytop.screens.sided import _text_of_side
from tests.proxysql_double import RECORDINGS, ProxySQLDouble, Recording
from tests.terminal import DOWN, proxytop_command

PROXYSQL_SCREENS = ("connpool", "queryrules", "glostat", "proclist", "comcount")


# ----- pure parts ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["proxytop.metrics.sides", "proxytop.collectors.sides", "proxytop.screens.glostat"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("collector, name, table", [
    (ConnectionPool(), "proxysql.pgsql.connection_pool", "stats_pgsql_connection_pool"),
    (RuntimeServers(), "proxysql.pgsql.runtime_servers", "runtime_pgsql_servers"),
    (QueryRuleHits(), "proxysql.pgsql.query_rule_hits", "stats_pgsql_query_rules"),
    (RuntimeQueryRules(), "proxysql.pgsql.runtime_query_rules", "runtime_pgsql_query_rules"),
    (ConfigQueryRules(), "proxysql.pgsql.config_query_rules", "pgsql_query_rules"),
    (ProcessList(), "proxysql.pgsql.processlist", "stats_pgsql_processlist"),
    (CommandCounters(), "proxysql.pgsql.commands_counters", "stats_pgsql_commands_counters"),
    (GlobalStatus(), "proxysql.pgsql.global", "stats_pgsql_global"),
])
def test_each_collector_has_a_twin_reading_the_pgsql_table(collector, name, table):
    twin = for_side(collector, PGSQL)
    assert (twin.name, twin.table) == (name, table)
    assert (collector.name, collector.table) == (collector.name, type(collector).table)  # the original is untouched
    assert (twin.min_interval, twin.own_pace, twin.history) == (collector.min_interval, collector.own_pace,
                                                                collector.history)
    assert for_side(collector, PGSQL) is twin and for_side(collector, MYSQL) is collector


def test_settings_have_twins_and_memory_metrics_serve_both_sides():
    variables = MySQLVariables()
    assert for_side(variables, PGSQL).wanted == ("pgsql-max_connections",)
    memory = MemoryMetrics()
    assert for_side(memory, PGSQL) is memory  # one table for both sides: read once


class FakeSession:
    """What a twin looks at before it queries: version and tables (and it records queries)."""

    def __init__(self, version, tables):
        self.version, self.tables, self.sent = version, frozenset(tables), []

    def query(self, sql):
        self.sent.append(sql)
        return Table(("hostgroup",), ())


def test_a_twin_asks_nothing_of_a_proxysql_without_a_pgsql_side():
    old = FakeSession((2, 7, 2), {"runtime_mysql_servers", "stats_mysql_connection_pool"})
    twin = for_side(ConnectionPool(), PGSQL)
    with pytest.raises(NotInThisVersion) as caught:
        twin.collect(old)
    assert old.sent == []
    assert describe(caught.value) == NO_PGSQL == "this ProxySQL has no PostgreSQL side (3.0 or newer)"
    new = FakeSession((3, 0, 1), {"runtime_pgsql_servers", "stats_pgsql_connection_pool"})
    twin.collect(new)
    assert new.sent == ["select * from stats_pgsql_connection_pool"]


def tables_of(recording: str) -> frozenset:
    rec = Recording.load(recording)
    names = set()
    for sql in ("SHOW TABLES", "SHOW TABLES FROM stats"):
        names |= {row[0] for row in rec.fixed[("admin", sql)]["rows"]}
    return frozenset(names)


@pytest.mark.parametrize("version, recording, servers, expected", [
    ((2, 7, 2), "2.7", None, NO_PGSQL),
    ((3, 0, 1), "2.7", None, NO_PGSQL),  # a 3.x version alone is not enough: the tables must be there
    ((3, 0, 1), "3.0", 2, None),
    ((3, 0, 1), "3.0", None, None),  # the stats user can't count them: allowed, the screens say the rest
    ((3, 0, 1), "3.0", 0, NO_PGSQL_SERVERS),
])
def test_pgsql_side_recognised_from_version_and_recorded_table_lists(version, recording, servers, expected):
    session = SimpleNamespace(version=version, tables=tables_of(recording), pgsql_servers=servers)
    assert pgsql_problem(session) == expected


def test_digest_memory_under_both_names():
    v2 = {"query_digest_memory": "9280"}
    v3 = {"mysql_query_digest_memory": "512", "pgsql_query_digest_memory": "64"}
    assert (digest_memory(v2), digest_memory(v3), digest_memory(v3, PGSQL), digest_memory(v2, PGSQL)) == \
        ("9280", "512", "64", None)


def test_messages_are_said_of_the_side_but_data_never_rewritten():
    notes = [(("Weight need an admin user (runtime_mysql_servers).", "dim"),),
             (("Query  ", "label"), ("select * from mysql_servers", None))]
    said = _text_of_side(PGSQL, notes)
    assert said[0][0][0] == "Weight need an admin user (runtime_pgsql_servers)."
    assert said[1][1] == ("select * from mysql_servers", None)  # a query is data
    assert _text_of_side(MYSQL, notes) is notes


def recorded_frames(table: str) -> List[Table]:
    with gzip.open(RECORDINGS["3.0"], "rt", encoding="utf-8") as handle:
        return [Table(tuple(e["columns"]), tuple(tuple(r) for r in e["rows"]))
                for e in map(json.loads, handle) if e["sql"] == f"select * from {table}" and e["user"] == "admin"]


def test_every_recorded_stats_pgsql_global_variable_has_a_section_and_kind():
    frames = recorded_frames("stats_pgsql_global")
    names = [row[0] for row in frames[-1].rows]
    assert len(names) == 49
    unknown = [n for n in names if classify_pgsql(n).kind == TEXT]
    assert unknown == ["pgsql_listener_paused"]  # true/false, shown as text


def test_pgsql_global_counters_give_rates_from_recorded_readings():
    first, second = recorded_frames("stats_pgsql_global")[10:12]
    as_dict = lambda t: {r[0]: r[1] for r in t.rows}  # noqa: E731
    previous = Snapshot("proxysql.pgsql.global", as_dict(first), taken_at=10.0, duration=0.01)
    current = Snapshot("proxysql.pgsql.global", as_dict(second), taken_at=11.0, duration=0.01)
    rows = {r["name"]: r for r in global_rows(previous, current, None, classify=classify_pgsql)}
    get = rows["PgHGM_pgconnpoll_get"]
    assert get["section"] == "Connections" and get["type"] == "counter"
    assert get["rate"] == float(as_dict(second)["PgHGM_pgconnpoll_get"]) - float(as_dict(first)["PgHGM_pgconnpoll_get"])
    assert rows["Client_Connections_connected"]["type"] == "gauge" and rows["Client_Connections_connected"]["rate"] is None
    assert rows["PgSQL_Monitor_ping_check_OK"]["section"] == "Monitor"


def test_proclist_pgsql_rows_database_and_backend_pid_where_present():
    columns = recorded_frames("stats_pgsql_processlist")[30].columns
    assert "database" in columns and "db" not in columns and "backend_pid" not in columns  # 3.0.1
    newer = columns + ("backend_pid", "backend_state")
    table = Table(newer, (("1", "7", "sbtest", "sbtest", "10.0.0.5", "5000", "30", "127.0.0.1", "40000",
                           "127.0.0.1", "5442", "Query", "1500", "SELECT pg_sleep(2)", "0", None, "4242", "active"),))
    screen = ProcListScreen(SimpleNamespace(args=SimpleNamespace(side="pgsql")))
    view = SimpleNamespace(latest=lambda name: Snapshot(name, table, 1.0, 0.01))
    rows = screen.rows(view)
    assert rows[0]["db"] == "sbtest" and rows[0]["backend_pid"] == 4242 and rows[0]["backend_state"] == "active"
    titles = [c.title for c in screen.columns]
    assert "Database" in titles and "Schema" not in titles and titles[-2:] == ["PID", "State"]
    old = Table(columns, (table.rows[0][:-2],))
    screen.rows(SimpleNamespace(latest=lambda name: Snapshot(name, old, 1.0, 0.01)))
    assert [c.title for c in screen.columns][-1] == "Query"  # 3.0.1 has no backend_pid: no empty columns


# ----- the real program against the 3.0.1 double ---------------------------------------------

def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment.pop("NO_COLOR", None)
    return subprocess.run(list(proxytop_command()) + list(args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=environment)


def json_reports(text: str) -> Dict[str, dict]:
    return {record["screen"]: record for record in map(json.loads, text.splitlines())}


@pytest.fixture(scope="module")
def double3():
    started = ProxySQLDouble(recording=Recording.load("3.0")).start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def both_sides(double3) -> Dict[str, Dict[str, dict]]:
    """`--batch --screen all --format json` on each side of the 3.0.1 double (side by side)."""
    started = {}
    for side in ("mysql", "pgsql"):
        started[side] = subprocess.Popen(
            list(proxytop_command()) + ["--batch", "--count", "1", "--screen", "all", "--format", "json",
                                        "-P", str(double3.port), "--no-discover", "--side", side],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    reports = {}
    for side, process in started.items():
        out, err = process.communicate(timeout=90)
        assert process.returncode == 0 and "Traceback" not in err, err
        reports[side] = json_reports(out)
    return reports


@pytest.mark.parametrize("side", ["mysql", "pgsql"])
@pytest.mark.parametrize("screen", PROXYSQL_SCREENS)
def test_every_proxysql_screen_works_on_both_sides_of_3_0(both_sides, side, screen):
    report = both_sides[side][screen]
    assert report["side"] == side
    assert report["status"] is None, report["status"]
    if screen == "proclist" and not report["rows"]:
        # every session of the recorded frame read may be idle (hidden, as `i` would show them)
        assert re.search(r"Sessions\s+[1-9]\d* sessions\s+Sleep [1-9]", " ".join(report["notes"])), report["notes"]
        return
    assert report["rows"], f"{screen} ({side}) has no rows"


def test_connpool_sides_show_their_own_backends(both_sides):
    mysql = both_sides["mysql"]["connpool"]["rows"]
    pgsql = both_sides["pgsql"]["connpool"]["rows"]
    assert {(r["hostgroup"], r["server"], r["comment"]) for r in mysql} == \
        {(10, "127.0.0.1:3341", "writer"), (20, "127.0.0.1:3341", "reader")}
    assert {(r["hostgroup"], r["server"], r["comment"], r["max_connections"]) for r in pgsql} == \
        {(30, "127.0.0.1:5442", "pg-writer", 200), (40, "127.0.0.1:5442", "pg-reader", 100)}
    writer = next(r for r in pgsql if r["hostgroup"] == 30)
    assert writer["queries_s"] > 0 and writer["used_pct"] is not None  # rates, and runtime_pgsql_servers joined


def test_queryrules_pgsql_side_has_its_rules_including_the_inactive_one(both_sides):
    rows = {r["rule_id"]: r for r in both_sides["pgsql"]["queryrules"]["rows"]}
    assert sorted(rows) == [1, 2, 3, 4, 20]
    assert rows[1]["match"] == "^SELECT pg_sleep" and rows[1]["dest"] == 40
    assert rows[2]["hits"] > rows[3]["hits"] and rows[2]["cache_ttl"] == 2000
    assert rows[4]["match"].startswith("query~ ^DELETE FROM pgbench_accounts")
    assert rows[20]["active"] == "no" and rows[20]["hits"] is None  # only in pgsql_query_rules
    mysql = {r["rule_id"] for r in both_sides["mysql"]["queryrules"]["rows"]}
    assert mysql == {1, 2, 3, 4, 5, 20}


def test_glostat_pgsql_side_has_its_own_sections_and_notes(both_sides):
    report = both_sides["pgsql"]["glostat"]
    rows = {r["name"]: r for r in report["rows"]}
    assert rows["PgHGM_pgconnpoll_get"]["section"] == "Connections" and rows["PgHGM_pgconnpoll_get"]["rate"] > 0
    assert rows["Commit"]["section"] == "Commands"
    assert "Questions" not in rows and "MyHGM_myconnpoll_get" not in rows
    assert "pgsql_query_digest_memory" in rows  # stats_memory_metrics: one table for both sides
    notes = "\n".join(report["notes"])
    assert "of pgsql-max_connections 2048" in notes
    assert "(stats_pgsql_query_digest)" in notes
    mysql_notes = "\n".join(both_sides["mysql"]["glostat"]["notes"])
    assert "of mysql-max_connections 2048" in mysql_notes and "(stats_mysql_query_digest)" in mysql_notes


def test_proclist_and_comcount_pgsql_sides(both_sides):
    sessions = both_sides["pgsql"]["proclist"]["rows"]
    assert sessions and all(s["db"] == "sbtest" and s["user"] == "sbtest" for s in sessions)
    assert [s["time_ms"] for s in sessions] == sorted((s["time_ms"] for s in sessions), reverse=True)
    assert any(str(s["info"]).startswith("SELECT pg_sleep") for s in sessions)
    commands = {r["command"] for r in both_sides["pgsql"]["comcount"]["rows"]}
    assert {"SELECT", "INSERT", "UPDATE", "UNKNOWN"} <= commands and "BEGIN" not in commands
    row = next(r for r in both_sides["pgsql"]["comcount"]["rows"] if r["command"] == "UPDATE")
    assert row["rate"] > 0 and row["p50"] is not None
    assert any("UNKNOWN" in n for n in both_sides["pgsql"]["comcount"]["notes"])


def test_pgsql_side_reads_only_pgsql_tables(double3):
    before = len(double3.queries())
    result = run("--batch", "--count", "2", "--screen", "connpool", "--format", "json", "-P", str(double3.port),
                 "--side", "pgsql")
    assert result.returncode == 0, result.stderr
    sent = double3.queries()[before:]
    assert any("stats_pgsql_connection_pool" in q for q in sent)
    assert any("stats_pgsql_global" in q for q in sent)  # the header's reading on this side
    assert not any("runtime_mysql_servers" in q for q in sent), sent
    # the MySQL side's pool only as the Events screen watches both sides' backends, at the
    # header alarm's slower pace: never more often than the side shown
    mysql_pool = sum("stats_mysql_connection_pool" in q for q in sent)
    assert mysql_pool <= sum("stats_pgsql_connection_pool" in q for q in sent), sent
    assert not any("_reset" in q for q in sent)


def test_side_pgsql_on_a_2_x_proxysql_says_it_has_none(proxysql_double):
    before = len(proxysql_double.queries())
    result = run("--batch", "--count", "1", "--screen", "connpool", "-P", str(proxysql_double.port),
                 "--side", "pgsql")
    assert result.returncode == 0, result.stderr
    assert "this ProxySQL has no PostgreSQL side (3.0 or newer)" in result.stdout
    assert not any("pgsql" in q for q in proxysql_double.queries()[before:])


def test_recording_and_replay_carry_the_side(double3, tmp_path):
    path = str(tmp_path / "pg.rec.gz")
    result = run("--batch", "--count", "2", "--screen", "all", "--format", "json", "-P", str(double3.port),
                 "--no-discover", "--side", "pgsql", "--record", path)
    assert result.returncode == 0, result.stderr
    replayed = run("--replay", path, "--batch", "--count", "1", "--screen", "connpool", "--format", "json")
    assert replayed.returncode == 0, replayed.stderr
    report = json_reports(replayed.stdout)["connpool"]
    assert report["side"] == "pgsql" and {r["server"] for r in report["rows"]} == {"127.0.0.1:5442"}
    mysql = run("--replay", path, "--batch", "--count", "1", "--screen", "connpool", "--format", "json",
                "--side", "mysql")
    assert json_reports(mysql.stdout)["connpool"]["side"] == "mysql"
    # m in a replay: the recorded session says this ProxySQL has a PostgreSQL side
    from proxytop.cli import build
    from proxytop import options
    from proxytop.recordings.replay import ReplayEngine, replay_config

    engine = ReplayEngine.open(path)
    engine.seek(engine.index.end)
    config = replay_config(engine.index, options.parse([], {}), options.build_parser().parse_args([]))
    engine, controller = build(config, engine)
    assert controller.screen.side.key == "pgsql"
    controller.handle_key("m")
    assert controller.screen.side.key == "mysql" and "proxysql.connection_pool" in engine.active
    controller.handle_key("m")
    assert controller.screen.side.key == "pgsql" and "proxysql.pgsql.connection_pool" in engine.active
    assert {r["server"] for r in controller.rows()} == {"127.0.0.1:5442"}


# ----- the live view ---------------------------------------------------------------------------

def start(proxytop_term, double, *args, cols=150, rows=30):
    return proxytop_term("-P", str(double.port), "-d", "1", "--no-discover", *args, cols=cols, rows=rows)


def test_m_switches_sides_and_the_header_says_which(proxytop_term, double3):
    term = start(proxytop_term, double3, rows=40)
    term.wait_until(lambda s: "127.0.0.1:3341" in s and "MySQL" in s.splitlines()[0], what="the MySQL side")
    term.send("m")
    screen = term.wait_until(lambda s: "127.0.0.1:5442" in s and "PgSQL" in s.splitlines()[0], what="the PostgreSQL side")
    assert "127.0.0.1:5442" in screen and "3341" not in screen.split("sort", 1)[1]
    # Q/s: stats_pgsql_global of 3.0.1 has no Questions; the queries sent to the backends stand in
    term.wait_until(lambda s: re.search(r"Q/s [1-9][\d.,]*k? to backends", s.splitlines()[0]) is not None,
                    what="the PostgreSQL side's Q/s in the header")
    term.send("3")  # GloStat follows the side
    term.wait_until(lambda s: "PgHGM_pgconnpoll" in s, what="stats_pgsql_global on GloStat")
    term.send("m")
    screen = term.wait_until(lambda s: "MyHGM_myconnpoll" in s and "MySQL" in s.splitlines()[0],
                             what="back on the MySQL side")
    assert "PgSQL" not in screen.splitlines()[0]


def test_queryrules_drill_down_on_the_pgsql_side(proxytop_term, double3):
    before = len(double3.queries())
    term = start(proxytop_term, double3, "--screen", "queryrules", "--side", "pgsql")
    term.wait_until(lambda s: "pgbench point selec" in s, what="the pgsql rules")
    term.send(DOWN, pause=0.3)  # rule 2
    term.send("\r")
    screen = term.wait_until(lambda s: "Query rule 2" in s and "runtime_pgsql_query_rules" in s, what="the rule's detail")
    assert "^SELECT abalance FROM pgbench_accounts" in screen
    assert "mysql_query_rules" not in screen.replace("pgsql_query_rules", "")
    # the queries it catches: stats_pgsql_query_digest routed through runtime_pgsql_query_rules
    screen = term.wait_until(lambda s: "Queries this rule catches" in s
                             and re.search(r"HG 30\s+SELECT abalance FROM pgbench_accounts WHERE aid = \?;", s),
                             timeout=20, what="the pgsql digests rule 2 catches")
    assert "pg_sleep" not in screen.split("Queries this rule catches", 1)[1]  # rule 1's, not rule 2's
    sent = double3.queries()[before:]
    assert any("stats_pgsql_query_digest" in q for q in sent)
    assert not any("stats_mysql_query_digest" in q for q in sent)


def test_kill_is_not_offered_for_pgsql_sessions(proxytop_term, double3):
    term = start(proxytop_term, double3, "--screen", "proclist", "--side", "pgsql")
    term.wait_until(lambda s: "pg_sleep" in s and "Database" in s, what="pgsql sessions")
    term.send("k")
    term.wait_for("killing is not available on the PostgreSQL side")
    assert "y to confirm" not in term.text()
    assert double3.kills == []
    assert NO_PGSQL_KILL.startswith("killing is not available on the PostgreSQL side")


def test_m_on_a_2_x_proxysql_says_there_is_no_pgsql_side(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "-d", "1", cols=150, rows=30)
    term.wait_for("127.0.0.1:3313")
    term.send("m")
    screen = term.wait_for("this ProxySQL has no PostgreSQL side (3.0 or newer)")
    assert "PgSQL" not in screen.splitlines()[0] and "MySQL" not in screen.splitlines()[0]
    assert not any("pgsql" in q for q in proxysql_double.queries())
