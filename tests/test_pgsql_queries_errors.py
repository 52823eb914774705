"""The Queries (8) and Errors (9) screens on the PostgreSQL side of ProxySQL 3.x: the digest of
stats_pgsql_query_digest (``database`` for ``schemaname``) with routes through
runtime_pgsql_query_rules and runtime_pgsql_users, and stats_pgsql_errors (a SQLSTATE and its
class instead of an errno) with stats_pgsql_users. Against the admin double serving the 3.0.1
recording; its errors table stayed empty, so its rows are built from the recorded schema."""
from __future__ import annotations

import doctest
import gzip
import importlib
import json
import re
import subprocess
from typing import Dict, List

import pytest

from proxytop.collectors.digest import DigestVariables, QueryDigest, RuntimeUsers
from proxytop.collectors.errors import PGSQL_ERRORS, BackendErrors, FrontendUsers
from proxytop.collectors.sides import for_side
from proxytop.metrics import digests
from proxytop.metrics.route import compile_rules, evaluate
from proxytop.metrics.sides import PGSQL
from proxytop.screens.queries import query_of
from screens.errors import error_detail, errors_rows
from proxytop.core import Snapshot, Table
from tests.proxysql_double import RECORDINGS, ProxySQLDouble, Recording
from tests.terminal import ENTER, proxytop_command

EPOCH = 1795387757  # the recording's clock at t=0 (README-3.0.md)


# ----- pure parts ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["proxytop.metrics.sqlstates", "proxytop.collectors.sides", "screens.errors",
                                  "proxytop.metrics.route"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def recorded(sql: str, user: str = "admin") -> List[dict]:
    with gzip.open(RECORDINGS["3.0"], "rt", encoding="utf-8") as handle:
        return [e for e in map(json.loads, handle) if e["sql"] == sql and e["user"] == user]


def created_columns(table: str) -> List[str]:
    """The column names of a recorded ``SHOW CREATE TABLE stats.<table>``."""
    create = recorded(f"SHOW CREATE TABLE stats.{table}")[0]["rows"][0][1]
    body = create.split("(", 1)[1]
    return [line.split()[0] for line in body.splitlines() if line.strip() and not line.strip().startswith("PRIMARY")]


def test_twins_read_the_pgsql_tables_and_settings():
    digest = for_side(QueryDigest(), PGSQL)
    assert (digest.name, digest.tables.digest, digest.tables.schema_column) == \
        ("proxysql.pgsql.query_digest", "stats_pgsql_query_digest", "database")
    assert (digest.tables.rules, digest.tables.users) == ("runtime_pgsql_query_rules", "runtime_pgsql_users")
    assert digest.min_interval == QueryDigest().min_interval and QueryDigest.tables.digest == "stats_mysql_query_digest"
    assert for_side(RuntimeUsers(), PGSQL).tables.users == "runtime_pgsql_users"
    assert for_side(DigestVariables(), PGSQL).wanted == (
        "pgsql-query_digests", "pgsql-query_processor_iterations", "pgsql-query_digests_track_hostname",
        "pgsql-query_processor_regex")
    assert for_side(BackendErrors(), PGSQL).table == "stats_pgsql_errors"
    assert for_side(FrontendUsers(), PGSQL).table == "stats_pgsql_users"


def test_declared_pgsql_columns_are_those_proxysql_3_0_created():
    errors = created_columns("stats_pgsql_errors")
    assert errors == ["hostgroup", "hostname", "port", "username", "client_address", "database", "sqlstate",
                      "count_star", "first_seen", "last_seen", "last_error"]
    declared = [getattr(PGSQL_ERRORS, f) for f in PGSQL_ERRORS.__dataclass_fields__ if f != "table"]
    assert sorted(declared) == sorted(errors) and PGSQL_ERRORS.table == "stats_pgsql_errors"
    digest = created_columns("stats_pgsql_query_digest")
    assert for_side(QueryDigest(), PGSQL).tables.schema_column in digest and "schemaname" not in digest
    assert created_columns("stats_pgsql_users") == ["username", "frontend_connections", "frontend_max_connections"]


def recorded_table(sql: str) -> Table:
    entry = recorded(sql)[-1]
    return Table(tuple(entry["columns"]), tuple(tuple(r) for r in entry["rows"]))


def test_routes_through_the_recorded_pgsql_rules_and_users():
    rules = compile_rules(recorded_table("select * from runtime_pgsql_query_rules").dicts())
    assert [r.rule_id for r in rules] == [1, 2, 3, 4]  # rule 20 is inactive: not at runtime
    digest_table = recorded_table("select * from stats_pgsql_query_digest")
    now = digests.parse(digest_table.columns, digest_table.rows, EPOCH, "database")
    by_text = {now.texts[key[4]]: key for key in now.entries}
    sleep = evaluate(rules, query_of(by_text["SELECT pg_sleep(?)"], now.texts))
    assert (sleep.destination, sleep.ended_by) == (40, 1)
    point = evaluate(rules, query_of(by_text["SELECT abalance FROM pgbench_accounts WHERE aid = ?;"], now.texts))
    assert (point.destination, point.cache_ttl) == (30, 2000)
    update = evaluate(rules, query_of(next(k for t, k in by_text.items() if t.startswith("UPDATE")), now.texts))
    assert update.destination is None  # the user's default hostgroup: runtime_pgsql_users says 30
    assert [s.rule.rule_id for s in update.undecided] == [4]  # match_pattern: the query text is not in the digest
    users = recorded_table("select * from runtime_pgsql_users").dicts()
    assert {(u["username"], u["default_hostgroup"]) for u in users} == {("sbtest", "30")}


def errors_reading(rows, taken_at):
    columns = ("hostgroup", "hostname", "port", "username", "client_address", "database", "sqlstate",
               "count_star", "first_seen", "last_seen", "last_error")
    return Snapshot("proxysql.pgsql.errors", Table(columns, tuple(rows)), taken_at, 0.01, wall_time=EPOCH + taken_at)


def test_sqlstate_rows_worked_numbers():
    first = errors_reading([("30", "127.0.0.1", "5442", "sbtest", "", "sbtest", "08006", "10", str(EPOCH),
                             str(EPOCH), "connection refused")], 0.0)
    second = errors_reading([("30", "127.0.0.1", "5442", "sbtest", "", "sbtest", "08006", "40", str(EPOCH),
                              str(EPOCH + 4), "connection refused"),
                             ("40", "127.0.0.1", "5442", "sbtest", "", "sbtest", "57P01", "3", str(EPOCH + 5),
                              str(EPOCH + 5), "terminating connection due to administrator command")], 5.0)
    rows = {r["errno"]: r for r in errors_rows(first, second, e=PGSQL_ERRORS)}
    assert rows["08006"]["errors_s"] == 6.0  # (40 - 10) / 5 s
    assert rows["57P01"]["errors_s"] == 0.6  # new since the last reading: all 3 are new
    assert (rows["08006"]["errno_name"], rows["57P01"]["errno_name"]) == ("connection_exception", "operator_intervention")
    assert (rows["08006"]["schema"], rows["08006"]["server"], rows["08006"]["last_seen_age"]) == \
        ("sbtest", "127.0.0.1:5442", 1.0)
    detail = "\n".join("".join(t for t, _ in line) for line in error_detail(rows["57P01"], list(rows.values()),
                                                                            "SQLSTATE").lines)
    assert "SQLSTATE 57P01 admin_shutdown (57 operator_intervention)" in detail
    assert "Same SQLSTATE elsewhere" in detail and "errno" not in detail
    assert "user sbtest  database sbtest  client" in detail


# ----- the real program against the 3.0.1 double ---------------------------------------------

ERRORS = [  # (hostgroup, sqlstate, errors per read, last_error): what a PostgreSQL outage leaves
    ("30", "08006", 7, "Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?"),
    ("40", "57P01", 2, "terminating connection due to administrator command"),
    ("30", "28P01", 1, 'password authentication failed for user "sbtest"'),
]


def errors_from_schema():
    """A transform for stats_pgsql_errors: the recorded (empty) table's own columns, with rows
    whose count_star grows by the given number at each read."""
    reads = []

    def transform(columns, rows):
        assert rows == [] and "sqlstate" in columns  # the recording's table, as ProxySQL 3.0.1 made it
        reads.append(1)
        made = []
        for hostgroup, sqlstate, per_read, message in ERRORS:
            values = {"hostgroup": hostgroup, "hostname": "127.0.0.1", "port": "5442", "username": "sbtest",
                      "client_address": "", "database": "sbtest", "sqlstate": sqlstate,
                      "count_star": str(per_read * len(reads)), "first_seen": str(EPOCH),
                      "last_seen": str(EPOCH + 60), "last_error": message}
            made.append([values[c] for c in columns])
        return columns, made

    transform.reads = reads
    return transform


@pytest.fixture
def double3():
    started = ProxySQLDouble(recording=Recording.load("3.0"))
    started.transforms["stats_pgsql_errors"] = errors_from_schema()
    started.start()
    yield started
    started.stop()


def batch(double, screen: str, side: str, count: int = 2) -> dict:
    result = subprocess.run(list(proxytop_command()) + [
        "--batch", "--count", str(count), "-d", "1", "--screen", screen, "--format", "json", "-P", str(double.port),
        "--no-discover", "--side", side, "--digest-min-interval", "1"],
        capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()][-1]


def reads_of(double, table: str) -> int:
    return sum(1 for q in double.queries() if q.strip().startswith("select") and q.strip().endswith(f"from {table}"))


def served(double, table: str, reads: int):
    """The recorded frame the double served at the ``reads``-th read of ``table``."""
    frames = double.recording.series[table]
    columns, rows = frames[(double.start_frame + reads - 1) % len(frames)]
    return [dict(zip(columns, row)) for row in rows]


@pytest.mark.parametrize("side, table, schema_column", [
    ("pgsql", "stats_pgsql_query_digest", "database"),
    ("mysql", "stats_mysql_query_digest", "schemaname"),
])
def test_queries_batch_on_both_sides_gives_the_recorded_counts(double3, side, table, schema_column):
    report = batch(double3, "queries", side)
    assert report["side"] == side and report["status"] is None, report["status"]
    frame = served(double3, table, reads_of(double3, table))
    expected: Dict[str, int] = {}
    for row in frame:
        expected[row["digest"]] = expected.get(row["digest"], 0) + int(row["count_star"])
    assert {r["digest"]: r["count"] for r in report["rows"]} == expected
    assert {r["schema"] for r in report["rows"]} == {row[schema_column] for row in frame} == {"sbtest"}
    assert any(r["time_s"] for r in report["rows"])  # rates from two readings
    assert f"{len(frame)} rows" in report["notes"][0]
    other = "stats_mysql_query_digest" if side == "pgsql" else "stats_pgsql_query_digest"
    assert reads_of(double3, other) == 0  # one side's digest only: each read is costly
    assert not any("_reset" in q for q in double3.queries())
    if side == "pgsql":
        rows = {r["text"]: r for r in report["rows"]}
        assert rows["SELECT pg_sleep(?)"]["hg"] == "40" and rows["BEGIN;"]["hg"] == "30"


def test_each_side_reads_its_own_digest_settings(double3):
    def settings(columns, rows):
        changed = {"pgsql-query_digests": "false", "admin-stats_mysql_query_digest_to_disk": "60"}
        return columns, [[r[0], changed.get(r[0], r[1])] + list(r[2:]) for r in rows]

    double3.transforms["global_variables"] = settings
    pgsql = "\n".join(batch(double3, "queries", "pgsql")["notes"])
    assert "pgsql-query_digests=false: ProxySQL collects no query digests" in pgsql
    assert "to_disk" not in pgsql  # it saves the MySQL side's digest only
    mysql = "\n".join(batch(double3, "queries", "mysql")["notes"])
    assert "query_digests=false" not in mysql  # mysql-query_digests is still true
    assert "admin-stats_mysql_query_digest_to_disk is on" in mysql


def test_errors_batch_pgsql_side_sqlstates_rates_and_users(double3):
    report = batch(double3, "errors", "pgsql", count=3)
    assert report["side"] == "pgsql" and report["status"] is None, report["status"]
    rows = {r["errno"]: r for r in report["rows"]}
    assert set(rows) == {"08006", "57P01", "28P01"}  # SQLSTATEs stay text
    assert (rows["08006"]["errno_name"], rows["28P01"]["errno_name"]) == \
        ("connection_exception", "invalid_authorization_specification")
    reads = len(double3.transforms["stats_pgsql_errors"].reads)  # the last table made was the last one read
    assert reads >= reads_of(double3, "stats_pgsql_errors") >= 2
    assert rows["08006"]["count"] == 7 * reads and rows["57P01"]["count"] == 2 * reads
    assert rows["08006"]["errors_s"] > rows["57P01"]["errors_s"] > rows["28P01"]["errors_s"] > 0
    assert (rows["57P01"]["hostgroup"], rows["57P01"]["server"], rows["57P01"]["schema"]) == (40, "127.0.0.1:5442", "sbtest")
    users = served(double3, "stats_pgsql_users", reads_of(double3, "stats_pgsql_users"))
    line = next(n for n in report["notes"] if n.startswith("users "))
    assert line.startswith(f"users sbtest {users[0]['frontend_connections']}/500")
    assert not any("stats_mysql_errors" in q or "stats_mysql_users" in q for q in double3.queries())


def test_errors_batch_mysql_side_of_3_0_is_empty_and_says_so(double3):
    report = batch(double3, "errors", "mysql")
    assert report["side"] == "mysql" and report["status"] is None and report["rows"] == []
    assert any("stats_mysql_errors" in n for n in report["notes"])
    assert any(n.startswith("users sbtest ") for n in report["notes"])


@pytest.mark.parametrize("screen", ["queries", "errors"])
def test_side_pgsql_on_a_2_x_proxysql_says_it_has_none(proxysql_double, screen):
    before = len(proxysql_double.queries())
    result = subprocess.run(list(proxytop_command()) + [
        "--batch", "--count", "1", "--screen", screen, "-P", str(proxysql_double.port), "--side", "pgsql"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "this ProxySQL has no PostgreSQL side (3.0 or newer)" in result.stdout
    assert not any("pgsql" in q for q in proxysql_double.queries()[before:])


# ----- the live view ---------------------------------------------------------------------------

def start(proxytop_term, double, screen, *args):
    return proxytop_term("-P", str(double.port), "-d", "1", "--no-discover", "--digest-min-interval", "1",
                         "--screen", screen, *args, cols=200, rows=50)


def test_m_on_queries_shows_pgsql_digests_and_their_route(proxytop_term, double3):
    term = start(proxytop_term, double3, "queries")
    term.wait_until(lambda s: "MySQL" in s.splitlines()[0] and "COMMIT" in s, timeout=30, what="MySQL digests")
    term.send("m")
    screen = term.wait_until(lambda s: "PgSQL" in s.splitlines()[0] and "pg_sleep" in s and "Database" in s,
                             timeout=30, what="the PostgreSQL digests")
    assert "COMMIT" not in screen and "Schema" not in screen
    term.send("/text:pg_sleep" + ENTER)
    term.wait_until(lambda s: re.search(r"1/\d+ rows", s) is not None, what="the pg_sleep digest alone")
    term.send(ENTER)
    screen = term.wait_until(lambda s: "served by" in s and "destination" in s, timeout=20, what="its route")
    assert re.search(r"rule 1\s+flagIN 0\s+matched", screen), screen
    assert "hostgroup 40 (rule 1)" in screen and "sleeps to reader hg" in screen
    assert "user sbtest, database sbtest" in screen and "schema" not in screen  # PostgreSQL's word
    assert "Last interval by hostgroup, user, database, client" in screen


def test_m_on_errors_shows_sqlstates_with_their_class(proxytop_term, double3):
    term = start(proxytop_term, double3, "errors")
    term.wait_until(lambda s: "MySQL" in s.splitlines()[0] and "No backend errors" in s, timeout=30,
                    what="the empty MySQL side")
    term.send("m")
    # the errors and the users are read in the same batch, one after the other: wait for both
    screen = term.wait_until(lambda s: "SQLSTATE" in s and "08006" in s and "connection_exception" in s
                             and re.search(r"users\s+sbtest \d+/500", s) is not None,
                             timeout=30, what="the PostgreSQL errors and users")
    assert "PgSQL" in screen.splitlines()[0] and "Class" in screen and "Errno" not in screen
    term.send("/errno:57P01" + ENTER)
    term.wait_until(lambda s: "1/3 rows" in s, what="the admin_shutdown row alone")
    term.send(ENTER)
    term.wait_for("SQLSTATE 57P01 admin_shutdown (57 operator_intervention)")
    term.wait_for("terminating connection due to administrator command")


def test_m_on_errors_of_a_2_x_proxysql(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "-d", "1", "--screen", "errors", cols=150, rows=30)
    term.wait_until(lambda s: "users reporting" in s, what="the Errors screen with its first reading")
    term.send("m")
    screen = term.wait_for("this ProxySQL has no PostgreSQL side (3.0 or newer)")
    assert "Errno" in screen and "SQLSTATE" not in screen
    assert not any("pgsql" in q for q in proxysql_double.queries())
