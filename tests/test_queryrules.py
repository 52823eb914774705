"""QueryRules: rules joined with their hits, inactive rules, configuration vs runtime, drill-down."""
from __future__ import annotations

import doctest
import re

import pytest

from proxytop.core import Snapshot, Table
from proxytop.screens import queryrules
from proxytop.screens.queryrules import (ADMIN_COLUMNS, STATS_COLUMNS, QueryRulesScreen, hits_series, rule_detail,
                                         rule_rows)
from tests.proxysql_double import ProxySQLDouble
from tests.terminal import ESC, HOME

DOWN = "\x1bOB"  # the down arrow as a terminal in keypad (application) mode sends it

RULE_COLUMNS = ("rule_id", "active", "username", "schemaname", "flagIN", "digest", "match_digest", "match_pattern",
                "negate_match_pattern", "flagOUT", "destination_hostgroup", "cache_ttl", "apply", "comment")


def rule(rule_id, active="1", username=None, flag_in="0", match_digest=None, match_pattern=None, negate="0",
         flag_out=None, dest="20", cache_ttl=None, apply="1", comment=None):
    return (str(rule_id), active, username, None, flag_in, None, match_digest, match_pattern, negate, flag_out,
            dest, cache_ttl, apply, comment)


RUNTIME = [
    rule(1, match_digest="^SELECT .* FOR UPDATE", dest="10", comment="locking reads"),
    rule(2, match_digest="^SELECT", cache_ttl="2000"),
    rule(5, match_pattern="^DELETE", negate="1", dest=None),
    rule(6, username="reporting", flag_out="100", apply="0"),
]
CONFIG = [
    RUNTIME[0],
    rule(2, match_digest="^SELECT", cache_ttl="5000"),  # edited, not loaded to runtime
    RUNTIME[2],
    RUNTIME[3],
    rule(20, active="0", match_digest="^UPDATE", dest="10", comment="inactive"),
]


def rules(rows):
    return queryrules.definitions(Snapshot("rules", Table(RULE_COLUMNS, tuple(rows)), 0.0, 0.0))


def hits(taken_at, **by_rule):
    rows = tuple((name.split("_")[1], str(value)) for name, value in by_rule.items())
    return Snapshot("proxysql.query_rule_hits", Table(("rule_id", "hits"), rows), taken_at, 0.01)


BEFORE = hits(10.0, r_1=100, r_2=5000, r_5=0, r_6=0)
AFTER = hits(12.0, r_1=140, r_2=5160, r_5=0, r_6=0)  # 2 s later: rule 1 +40, rule 2 +160


def by_id(rows):
    return {r["rule_id"]: r for r in rows}


def test_docstring_examples():
    result = doctest.testmod(queryrules)
    assert result.attempted > 0 and result.failed == 0


def test_every_rule_with_hits_rates_and_shares_including_zero_hits_and_inactive():
    rows = by_id(rule_rows(BEFORE, AFTER, rules(RUNTIME), rules(CONFIG)))
    assert sorted(rows) == [1, 2, 5, 6, 20]
    assert rows[1]["hits"] == 140 and rows[1]["hits_s"] == 20.0 and rows[2]["hits_s"] == 80.0
    assert rows[1]["share"] == pytest.approx(20.0) and rows[2]["share"] == pytest.approx(80.0)
    assert rows[5]["hits"] == 0 and rows[5]["hits_s"] == 0.0 and rows[5]["share"] == 0.0  # zero hits, still listed
    assert rows[1]["match"] == "^SELECT .* FOR UPDATE" and rows[1]["dest"] == 10
    assert rows[5]["match"] == "NOT query~ ^DELETE" and rows[5]["dest"] is None
    assert rows[6]["match"] == "(any)" and rows[6]["flags"] == "0\u2192100" and rows[6]["apply"] == "no"
    assert rows[6]["user"] == "reporting" and rows[2]["cache_ttl"] == 2000
    inactive = rows[20]
    assert inactive["active"] == "no" and inactive["_style"] == "dim" and inactive["hits"] is None
    assert inactive["match"] == "^UPDATE" and inactive["comment"] == "inactive"


def test_a_rule_whose_configuration_differs_is_marked():
    rows = by_id(rule_rows(BEFORE, AFTER, rules(RUNTIME), rules(CONFIG)))
    assert rows[2]["active"] == "yes*" and rows[2]["_differs"]
    assert rows[1]["active"] == "yes" and not rows[1]["_differs"]
    assert rows[2]["cache_ttl"] == 2000  # the table shows what runs: the runtime definition


def test_rule_reload_is_a_reset_not_a_negative_rate():
    reloaded = hits(13.0, r_1=3, r_2=12, r_5=0, r_6=0)  # LOAD MYSQL QUERY RULES TO RUNTIME
    rows = by_id(rule_rows(AFTER, reloaded, rules(RUNTIME), rules(CONFIG)))
    assert rows[1]["hits_s"] is None and rows[2]["hits_s"] is None
    assert rows[1]["share"] is None and rows[5]["hits_s"] == 0.0
    assert all(r["hits_s"] is None or r["hits_s"] >= 0 for r in rows.values())
    later = hits(14.0, r_1=13, r_2=52, r_5=0, r_6=0)
    assert by_id(rule_rows(reloaded, later, rules(RUNTIME), rules(CONFIG)))[2]["hits_s"] == 40.0


def test_stats_user_rows_have_ids_and_hits_only():
    rows = by_id(rule_rows(BEFORE, AFTER, None, None))
    assert sorted(rows) == [1, 2, 5, 6]
    assert rows[2]["hits_s"] == 80.0 and rows[2]["match"] is None and rows[2]["dest"] is None
    screen = QueryRulesScreen()
    screen.admin = False
    assert [c.key for c in screen.columns] == ["rule_id", "hits_s", "hits", "share"]
    assert screen.columns == STATS_COLUMNS
    screen.admin = True
    assert screen.columns == ADMIN_COLUMNS


def test_hits_sparkline_series_leaves_a_gap_at_a_reset():
    history = [hits(0.0, r_2=0), hits(1.0, r_2=10), hits(2.0, r_2=30), hits(3.0, r_2=2), hits(4.0, r_2=6)]
    assert hits_series(history, 2) == [10.0, 20.0, None, 4.0]
    assert hits_series(history, 99) == [None, None, None, None]


def detail_text(detail):
    return "\n".join("".join(t for t, _ in line) for line in detail.lines)


def test_detail_lists_the_definition_and_says_when_not_loaded_to_runtime():
    history = [BEFORE, AFTER]
    row = by_id(rule_rows(BEFORE, AFTER, rules(RUNTIME), rules(CONFIG)))[2]
    text = detail_text(rule_detail(row, history, rules(RUNTIME), rules(CONFIG), admin=True))
    assert "mysql_query_rules differs from runtime: not loaded to runtime (cache_ttl)" in text
    assert re.search(r"cache_ttl\s+2000\s+configuration: 5000", text)
    assert re.search(r"match_digest\s+\^SELECT", text) and re.search(r"destination_hostgroup\s+20", text)
    assert "username" not in text  # empty columns are left out
    assert re.search(r"hits/s\s+\S+\s+last 2s, max 80/s", text)

    same = by_id(rule_rows(BEFORE, AFTER, rules(RUNTIME), rules(CONFIG)))[1]
    assert "runtime matches the configuration" in detail_text(rule_detail(same, history, rules(RUNTIME),
                                                                          rules(CONFIG), admin=True))
    inactive = by_id(rule_rows(BEFORE, AFTER, rules(RUNTIME), rules(CONFIG)))[20]
    text = detail_text(rule_detail(inactive, history, rules(RUNTIME), rules(CONFIG), admin=True))
    assert "inactive (active=0): only in mysql_query_rules" in text and "Configuration (mysql_query_rules)" in text


def test_detail_for_the_stats_user_says_what_is_missing():
    row = by_id(rule_rows(BEFORE, AFTER, None, None))[2]
    text = detail_text(rule_detail(row, [BEFORE, AFTER], None, None, admin=False))
    assert "hits/s" in text and "need an admin user" in text


# ----- end to end -----------------------------------------------------------------------
def rule_lines(screen):
    return [line for line in screen.splitlines() if re.match(r"^\s+\d+\s+(\S+)\s+(\S+)", line)]


def start(proxytop_term, double, *args, cols=140):
    term = proxytop_term("-P", str(double.port), "--screen", "queryrules", *args, cols=cols, rows=40)
    term.wait_until(lambda s: re.search(r"^\s+2\s+[\d.]+k\s", s, re.M) is not None, what="rule 2 with hits/s")
    return term


def cursor_line(term):
    """The text of the line drawn in reverse video (the cursor row)."""
    with term._lock:
        for y in range(term.rows):
            line = term.screen.buffer[y]
            if line[0].reverse and line[1].reverse and line[2].reverse:
                return "".join(line[x].data for x in range(term.cols)).rstrip()
    return None


def test_e2e_drill_into_a_rule_and_back_to_the_same_row(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    screen = term.text()
    assert "Rules  7 at runtime, 1 inactive (dimmed)" in screen
    assert re.search(r"^\s+20\s+\u2014\s+\u2014\s+\u2014\s+no\s+\^UPDATE", screen, re.M), screen
    print("\n" + screen)
    term.send(HOME)
    term.send(DOWN, pause=0.3)  # rule 2
    assert re.match(r"^\s+2\s", cursor_line(term) or ""), term.text()
    term.send("\r")
    screen = term.wait_for("Query rule 2")
    assert re.search(r"match_digest\s+\^SELECT c FROM sbtest\[0-9\]\+ WHERE id=\\\?", screen), screen
    assert re.search(r"destination_hostgroup\s+20", screen) and re.search(r"cache_ttl\s+2000", screen)
    assert "runtime matches the configuration (mysql_query_rules)" in screen
    assert re.search(r"hits/s\s+[\u2581-\u2588 ]+\s+last", screen)
    print("\n" + screen)
    term.send(ESC, pause=0.4)
    term.wait_for("sort Rule")
    assert re.match(r"^\s+2\s", cursor_line(term) or ""), term.text()


def test_e2e_sort_by_hits_per_second_is_one_key_away(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.send("s")
    screen = term.wait_for("sort Hits/s \u2193")
    ids = [int(line.split()[0]) for line in rule_lines(screen)]
    assert ids[:3] == [2, 4, 3], screen  # point selects, other reads, DISTINCT
    term.send("/")
    term.send("hg:20\r")
    screen = term.wait_until(lambda s: "filter hg:20" in s and "5/8 rows" in s, what="rules sending to hostgroup 20")
    shown = sorted(int(line.split()[0]) for line in rule_lines(screen))
    assert shown == [2, 3, 4, 6, 7] and "5/8 rows" in screen, screen  # destination hostgroup 20


def test_e2e_configuration_not_loaded_to_runtime(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording)

    def edit_rule_4(columns, rows):
        at, dest = columns.index("rule_id"), columns.index("destination_hostgroup")
        return columns, [r[:dest] + ["10"] + r[dest + 1:] if r[at] == "4" else r for r in rows]

    double.transforms["mysql_query_rules"] = edit_rule_4
    double.start()
    try:
        term = start(proxytop_term, double)
        screen = term.wait_for("not loaded to runtime")
        assert "differs from runtime for rule 4" in screen
        assert re.search(r"^\s+4\s.*yes\*", screen, re.M), screen
    finally:
        double.stop()


def test_e2e_stats_user_sees_ids_and_hits_and_is_told_why(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double, "-u", "stats", "-p", "stats")
    screen = term.text()
    assert "Rule definitions need an admin user" in screen
    header = [line for line in screen.splitlines() if line.startswith("Rule\u2191")][0]
    assert header.split() == ["Rule\u2191", "Hits/s", "Hits", "Share"], header
    assert not any("runtime_mysql_query_rules" in q for q in proxysql_double.queries("stats"))
    term.send("\r")
    term.wait_for("need an admin user: the stats user")
    print("\n" + term.text())


def test_e2e_1_4_column_set(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording, version="1.4").start()
    try:
        term = start(proxytop_term, double)
        term.send(HOME)
        term.send("\r")
        screen = term.wait_for("Query rule 1")
        assert "^SELECT .* FOR UPDATE" in screen and "gtid_from_hostgroup" not in screen
        assert "runtime matches the configuration" in screen
    finally:
        double.stop()


def hits_double(recording, rows):
    """The double with stats_mysql_query_rules answering ``rows`` (rule_id, hits) every time."""
    double = ProxySQLDouble(recording=recording)
    double.transforms["stats_mysql_query_rules"] = lambda columns, _rows: (["rule_id", "hits"], [list(r) for r in rows])
    return double.start()


@pytest.mark.parametrize("rows", [
    [("1", "10"), ("2", "0"), ("30", "12345678901")],
    [],
])
def test_rule_hits_read_as_two_concatenated_texts_are_the_rows_of_select_star(recording, rows):
    from proxytop.collectors.proxysql_stats import QueryRuleHits
    from proxytop.polling.connection import Endpoint, open_admin

    double = hits_double(recording, rows)
    session = open_admin(Endpoint(port=double.port))
    try:
        collector = QueryRuleHits()
        read = collector.collect(session)
        assert read == session.query("select * from stats_mysql_query_rules")
        assert read.rows == tuple(rows)
        sent = double.queries("admin")
        assert sent[-2] == collector.concatenated_sql()  # one query, no plain one before the test's own
    finally:
        session.conn.close()
        double.stop()


def test_rule_hits_with_a_null_are_read_plainly_for_that_reading(recording):
    """group_concat leaves NULLs out: ids and hits would no longer line up."""
    from proxytop.collectors.proxysql_stats import QueryRuleHits
    from proxytop.polling.connection import Endpoint, open_admin

    double = hits_double(recording, [("1", "10"), ("2", None), ("3", "7")])
    session = open_admin(Endpoint(port=double.port))
    try:
        collector = QueryRuleHits()
        assert collector.collect(session).rows == (("1", "10"), ("2", None), ("3", "7"))
        assert double.queries("admin")[-2:] == [collector.concatenated_sql(), "select * from stats_mysql_query_rules"]
    finally:
        session.conn.close()
        double.stop()


class ConcatRefusingSession:
    """A ProxySQL whose admin interface refuses group_concat."""

    def __init__(self):
        self.sent = []

    def query(self, sql):
        self.sent.append(sql)
        if "group_concat" in sql:
            raise RuntimeError("ProxySQL Admin Error: no such function: group_concat")
        return Table(("rule_id", "hits"), (("1", "5"),))


def test_rule_hits_refused_concatenated_are_read_plainly_from_then_on():
    from proxytop.collectors.proxysql_stats import QueryRuleHits

    session, collector = ConcatRefusingSession(), QueryRuleHits()
    for _ in range(3):
        assert collector.collect(session).rows == (("1", "5"),)
    assert ["group_concat" in sql for sql in session.sent] == [True, False, False, False]


def test_rule_hits_keep_their_query_after_a_locked_admin_database():
    """ProxySQL's "database is locked" (1205) says nothing of the query: the reading fails as
    any reading does, and the next one sends the same query."""
    import pymysql

    from proxytop.collectors.proxysql_stats import QueryRuleHits

    class LockedOnce(ConcatRefusingSession):
        def query(self, sql):
            self.sent.append(sql)
            if len(self.sent) == 1:
                raise pymysql.err.OperationalError(1205, "database is locked")
            return Table(("a", "b", "c"), (("1", "5", "1"),))

    session, collector = LockedOnce(), QueryRuleHits()
    with pytest.raises(pymysql.err.OperationalError):
        collector.collect(session)
    assert collector.collect(session).rows == (("1", "5"),)
    assert ["group_concat" in sql for sql in session.sent] == [True, True]
