"""The Queries screen end to end: the installed proxytop in a pseudo-terminal against the ProxySQL
double serving the cluster recording (109 digest rows, hostgroups 10/20/-1, users sbtest and
reporting), its route drill-down, QueryRules' "queries this rule catches", what it costs
ProxySQL, bad input, and --batch."""
from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from proxytop.collectors.digest import MYSQL_TABLES, statement
from proxytop.polling.connection import admin_statement
from tests.proxysql_double import ProxySQLDouble, Recording
from tests.terminal import DOWN, ENTER, ESC, proxytop_command

DIGEST = "stats_mysql_query_digest"
READ = statement(MYSQL_TABLES, (2, 7, 2)).lower()  # the read of the recorded 2.7.2


@pytest.fixture(scope="module")
def cluster():
    return Recording.load("cluster", node="127.0.0.1:6042")


@pytest.fixture
def double(cluster):
    started = ProxySQLDouble(recording=cluster, start_frame=30).start()
    yield started
    started.stop()


def digest_reads(double):
    return [q for q in double.queries() if q.strip().lower() == READ]


def start(proxytop_term, double, *args, cols=200, rows=50, user=("-u", "admin", "-p", "admin")):
    return proxytop_term("-P", str(double.port), *user, "--screen", "queries", "--digest-min-interval", "1",
                         *args, cols=cols, rows=rows)


def with_rates(screen: str) -> bool:
    return re.search(r"COMMIT\s+10\s+[\d.]+\s+[\d.]+m?s\s+[\d.]+%", screen) is not None


def test_top_digests_by_time_per_second_with_units_and_cost(proxytop_term, double):
    term = start(proxytop_term, double)
    screen = term.wait_until(with_rates, timeout=30, what="COMMIT with rates")
    assert "sort Time/s \u2193" in screen and "83 rows" in screen
    # the interval in force: 1 s asked for, more when a read took over 1/20 of it (a busy machine)
    assert re.search(r"Digest\s+109 rows, 83 digests\s+read at \d\d:\d\d:\d\d in [\d.]+(µs|ms|s)\s+every \d+s", screen)
    lines = [l for l in screen.splitlines() if re.search(r"\s\d+(\.\d+)?%\s", l)]
    shares = [float(re.search(r"\s(\d+(?:\.\d+)?)%\s", l).group(1)) for l in lines]
    assert shares == sorted(shares, reverse=True)  # sorted by Time/s, so by share too
    assert re.search(r"SELECT c FROM sbtest\d WHERE id=\?\s+10,20,cache\s", screen)
    term.send("b")
    term.wait_for("by digest \\+ hostgroup")
    term.send("/hg:cache" + ENTER)
    screen = term.wait_until(lambda s: "filter hg:cache  4/" in s, what="the four cached point selects")
    assert len(re.findall(r"SELECT c FROM sbtest\d WHERE id=\?\s+cache\s", screen)) == 4
    term.send("b")
    screen = term.wait_for("by digest \\+ user")
    term.send("\\")
    term.send("/user:reporting" + ENTER)
    screen = term.wait_until(lambda s: "filter user:reporting" in s and "SELECT SLEEP(?),?" in s)
    assert "reporting" in screen.split("SELECT SLEEP(?),?")[1].splitlines()[0]


def test_digest_is_read_only_while_visible_at_the_interval_in_force(proxytop_term, double):
    term = proxytop_term("-P", str(double.port), "--screen", "connpool", cols=200, rows=50)
    term.wait_for("127.0.0.1:3331")
    time.sleep(2)
    assert digest_reads(double) == []
    term.send("8")
    term.wait_until(lambda s: "83 rows" in s, timeout=20, what="the digest")
    term.wait_until(lambda s: len(digest_reads(double)) >= 3, timeout=30, what="three digest reads")
    with double._lock:
        times = [t for t, _user, sql in double.query_log if sql.strip().lower() == admin_statement(READ)]
    # the 5 s floor between two reads (the screen's own interval is 1 s)
    assert all(b - a >= 4.9 for a, b in zip(times, times[1:])), times
    assert "every 5s" in term.text()
    term.send("1")
    term.wait_for("127.0.0.1:3331")
    time.sleep(0.5)
    hidden = len(digest_reads(double))
    time.sleep(6)
    assert len(digest_reads(double)) == hidden
    assert not any("_reset" in q for q in double.queries())


def test_route_drill_down_explains_the_cache_and_transactions(proxytop_term, double):
    term = start(proxytop_term, double)
    term.wait_until(with_rates, timeout=30, what="rates")
    term.send("/text:^SELECT.c.FROM.sbtest1.WHERE.id=" + ENTER)
    term.wait_until(lambda s: "1/83 rows" in s, what="the point select on sbtest1 alone")
    term.send(ENTER)
    screen = term.wait_until(lambda s: "served by" in s and "Time/s" in s, timeout=20, what="the route")
    assert "Digest 0x" in screen and "SELECT c FROM sbtest1 WHERE id=?" in screen
    assert re.search(r"latency\s+min [\d.]+(µs|ms|s)\s+avg [\d.]+(µs|ms|s)\s+max [\d.]+(µs|ms|s) since first seen", screen)
    assert re.search(r"rule 2\s+flagIN 0\s+matched match_digest \(CASELESS\)\s+\u2192 HG 20, cache 2s, "
                     r"apply: ends here", screen)
    assert "destination hostgroup 20 (rule 2)" in screen
    assert "served by   10,20,cache" in screen
    assert "cache: the query cache answered it (cache_ttl 2s)" in screen
    assert "10: inside a transaction: transaction_persistent=1 for sbtest" in screen
    assert re.search(r"hostgroup\s+(20|cache|10)\s+[\d.]+/s", screen)


def test_queryrules_drill_down_lists_the_queries_a_rule_catches(proxytop_term, double):
    term = proxytop_term("-P", str(double.port), "--screen", "queryrules", "--digest-min-interval", "1",
                         cols=200, rows=60)
    term.wait_for("reporting sleeps")
    time.sleep(1.5)
    assert digest_reads(double) == []  # the table alone does not read the digest
    term.send(DOWN)
    term.send(ENTER)
    screen = term.wait_until(lambda s: "Queries this rule catches" in s and re.search(r"[\d.]+m?s Time/s", s),
                             timeout=30, what="caught queries with rates")
    caught = re.findall(r"HG \S+\s+(SELECT c FROM sbtest\d WHERE id=\?)", screen)
    assert sorted(caught) == [f"SELECT c FROM sbtest{n} WHERE id=?" for n in (1, 2, 3, 4)]
    # rule 2 sends them to hostgroup 20, but hostgroup 10 served some of them too (inside
    # sysbench's transactions, transaction_persistent=1): the view says why the two differ
    served = set(re.findall(r"HG (\S+)\s+SELECT c FROM sbtest\d WHERE id=\?", screen))
    assert served and "20" not in served
    assert "it differs from this rule's destination_hostgroup 20" in screen and "transaction_persistent=1" in screen
    assert "DISTINCT" not in screen.split("Queries this rule catches")[1]
    assert digest_reads(double)
    term.send(ESC)
    term.wait_for("reporting sleeps")
    time.sleep(0.5)
    closed = len(digest_reads(double))
    time.sleep(3)
    assert len(digest_reads(double)) == closed  # stopped with the drill-down


def test_the_stats_user_sees_digests_and_is_told_routes_need_an_admin(proxytop_term, double):
    term = start(proxytop_term, double, user=("-u", "stats", "-p", "stats"))
    term.wait_until(lambda s: "83 rows" in s, timeout=30)
    screen = term.wait_for("Routes \\(Enter\\) need an admin user")
    term.send(ENTER)
    screen = term.wait_for("Routes need an admin user")
    assert "Traceback" not in screen


def test_query_digests_disabled_is_said(proxytop_term, cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=30)

    def disabled(columns, rows):
        return columns, [[r[0], "false"] if r[0] == "mysql-query_digests" else r for r in rows]

    double.transforms["global_variables"] = disabled
    double.transforms[DIGEST] = lambda columns, rows: (columns, [])
    double.start()
    try:
        term = start(proxytop_term, double)
        screen = term.wait_for("mysql-query_digests=false: ProxySQL collects no query digests", timeout=30)
        assert "0 rows, 0 digests" in screen
    finally:
        double.stop()


def test_bad_digest_rows_are_shown_with_a_note_and_nothing_else_is_lost(proxytop_term, cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=30)
    huge = "SELECT " + "c," * 524_288 + "?"

    def bad(columns, rows):
        at = {c: i for i, c in enumerate(columns)}
        rows = [list(r) for r in rows]
        extra = []
        for n, (text, count) in enumerate(((None, "5"), ("", "5"), (b"SELECT \xff\xfe broken", "5"),
                                           (huge, "5"), ("SELECT null_counters", None))):
            row = list(rows[0])
            row[at["digest"]] = f"0x00000000000000B{n}"
            row[at["digest_text"]] = text
            row[at["count_star"]] = count
            row[at["sum_time"]] = None if count is None else "5000"
            extra.append(row)
        return columns, rows + extra

    double.transforms[DIGEST] = bad
    double.start()
    try:
        term = start(proxytop_term, double)
        screen = term.wait_until(lambda s: "88 rows" in s, timeout=30, what="83 digests plus 5 bad ones")
        term.send("/0x00000000000000B" + ENTER)
        screen = term.wait_until(lambda s: "5/88 rows" in s, what="the bad rows filtered")
        assert screen.count("(no digest text)") == 2
        assert "SELECT \ufffd\ufffd broken" in screen
        assert "1 row with NULL or non-numeric counters: no rates for it" in screen
        term.send("\\")
        term.send("/0x00000000000000B3" + ENTER)
        term.wait_until(lambda s: "1/88 rows" in s)
        term.send(ENTER)
        screen = term.wait_for("characters; the first 16.4k are shown", timeout=20)
        assert "Traceback" not in screen
        term.send(ESC)
        term.wait_for("1/88 rows")
    finally:
        double.stop()


def test_a_reset_of_the_digest_statistics_is_said_and_gives_no_rates(proxytop_term, cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=30)
    reads = []

    def truncated_on_the_third_read(columns, rows):
        reads.append(1)
        if len(reads) < 3:
            return columns, rows
        at = {c: i for i, c in enumerate(columns)}
        fresh = []
        for row in rows[:5]:  # TRUNCATE: a handful of rows, counting again from now
            row = list(row)
            row[at["count_star"]], row[at["sum_time"]] = "1", "100"
            row[at["first_seen"]] = row[at["last_seen"]] = str(int(time.time()))
            fresh.append(row)
        return columns, fresh

    double.transforms[DIGEST] = truncated_on_the_third_read
    double.start()
    try:
        term = start(proxytop_term, double)
        screen = term.wait_for(r"digest statistics were reset at \d\d:\d\d:\d\d", timeout=40)
        assert "5 rows" in screen
        assert not re.search(r"-\d", "\n".join(l for l in screen.splitlines() if "SELECT" in l or "COMMIT" in l))
    finally:
        double.stop()


def test_a_rule_regex_python_rejects_is_said_on_that_rule(proxytop_term, cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=30)

    def odd_rule(columns, rows):
        at = {c: i for i, c in enumerate(columns)}
        rule = [None] * len(columns)
        for name, value in (("rule_id", "0"), ("active", "1"), ("flagIN", "0"), ("apply", "0"),
                            ("match_digest", "^COMMIT(?<!(a|bc))"), ("negate_match_pattern", "0"),
                            ("re_modifiers", "CASELESS"), ("comment", "variable lookbehind")):
            rule[at[name]] = value
        return columns, [rule] + [list(r) for r in rows]

    double.transforms["runtime_mysql_query_rules"] = odd_rule
    double.start()
    try:
        term = start(proxytop_term, double)
        term.wait_until(lambda s: "COMMIT" in s, timeout=30)
        term.send("/text:^COMMIT$" + ENTER)
        term.wait_until(lambda s: "1/83 rows" in s)
        term.send(ENTER)
        screen = term.wait_for("Python can't compile", timeout=20)
        assert re.search(r"rule 0\s+flagIN 0\s+can't decide match_digest '\^COMMIT\(\?<!\(a\|bc\)\)' is a pattern "
                         r"Python can't compile", screen)
        assert "default hostgroup of user sbtest: 10" in screen
    finally:
        double.stop()


def test_batch_json_raw_values_per_second_and_milliseconds(double):
    result = subprocess.run(list(proxytop_command()) + [
        "--batch", "--count", "1", "--screen", "queries", "--format", "json", "-P", str(double.port),
        "--digest-min-interval", "1", "--sort", "count_s"], capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    # (an events record may come first: a MySQL server the double lists that cannot be reached)
    report = next(r for r in map(json.loads, result.stdout.splitlines()) if "screen" in r)
    assert report["screen"] == "queries" and report["sort"].startswith("count_s")
    assert report["columns"][:4] == ["text", "hg", "count_s", "time_s"]
    rows = report["rows"]
    assert len(rows) == 83
    counts = [r["count_s"] for r in rows if r["count_s"] is not None]
    assert counts == sorted(counts, reverse=True) and counts[0] > 0
    commit = next(r for r in rows if r["text"] == "COMMIT")
    assert isinstance(commit["time_s"], float) and commit["avg_ms"] == pytest.approx(
        commit["time_s"] / commit["count_s"], rel=1e-6)
    assert any("rows" in note and "digests" in note for note in report["notes"])
