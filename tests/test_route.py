"""The route evaluator against ProxySQL's rule walk (lib/Query_Processor.cpp), table-driven."""
from __future__ import annotations

import doctest

import pytest

from proxytop.metrics import route
from proxytop.metrics.route import Query, compile_rule, compile_rules, evaluate
from tests.proxysql_double import Recording


def rule(rule_id, **fields):
    """A runtime_mysql_query_rules row as ProxySQL sends it: text, NULL for unset."""
    row = {"rule_id": str(rule_id), "active": "1", "flagIN": "0", "apply": "0", "negate_match_pattern": "0",
           "re_modifiers": "CASELESS"}
    row.update({k: (None if v is None else str(v)) for k, v in fields.items()})
    return row


SELECT = Query(digest=0x1D, digest_text="SELECT c FROM sbtest1 WHERE id=?", username="app", schemaname="shop")
UPDATE = Query(digest=0x2E, digest_text="UPDATE sbtest1 SET k=k+? WHERE id=?", username="app", schemaname="shop")

CASES = [
    # (name, rules, query, iterations, expected matched ids, destination, ended_by, undecided ids)
    ("first rule with apply=1 ends the walk",
     [rule(1, match_digest="^SELECT", destination_hostgroup=20, apply=1),
      rule(2, match_digest="^SELECT", destination_hostgroup=30, apply=1)],
     SELECT, 0, (1,), 20, 1, ()),
    ("apply=0 goes on, the last destination wins",
     [rule(1, match_digest="^SELECT", destination_hostgroup=20),
      rule(2, match_digest="sbtest1", destination_hostgroup=30)],
     SELECT, 0, (1, 2), 30, None, ()),
    ("no rule matches: the user's default hostgroup",
     [rule(1, match_digest="^DELETE", destination_hostgroup=20, apply=1)],
     SELECT, 0, (), None, None, ()),
    ("flagOUT hands over to rules with that flagIN, later in rule_id order",
     [rule(1, username="app", flagOUT=100),
      rule(2, flagIN=100, match_digest="^SELECT", destination_hostgroup=20, apply=1),
      rule(3, match_digest="^SELECT", destination_hostgroup=30, apply=1)],
     SELECT, 0, (1, 2), 20, 2, ()),
    ("a flagIN rule before the flagOUT one is not seen without iterations",
     [rule(1, flagIN=100, match_digest="^SELECT", destination_hostgroup=20, apply=1),
      rule(2, username="app", flagOUT=100)],
     SELECT, 0, (2,), None, None, ()),
    ("mysql-query_processor_iterations restarts from the first rule",
     [rule(1, flagIN=100, match_digest="^SELECT", destination_hostgroup=20, apply=1),
      rule(2, username="app", flagOUT=100)],
     SELECT, 1, (2, 1), 20, 1, ()),
    ("negate_match_pattern inverts match_digest",
     [rule(1, match_digest="^SELECT", negate_match_pattern=1, destination_hostgroup=10, apply=1)],
     UPDATE, 0, (1,), 10, 1, ()),
    ("negate_match_pattern: a match is a miss",
     [rule(1, match_digest="^SELECT", negate_match_pattern=1, destination_hostgroup=10, apply=1)],
     SELECT, 0, (), None, None, ()),
    ("CASELESS",
     [rule(1, match_digest="^select", re_modifiers="CASELESS", destination_hostgroup=20, apply=1)],
     SELECT, 0, (1,), 20, 1, ()),
    ("without CASELESS the case counts",
     [rule(1, match_digest="^select", re_modifiers="", destination_hostgroup=20, apply=1)],
     SELECT, 0, (), None, None, ()),
    ("match_digest is searched, not anchored",
     [rule(1, match_digest="WHERE id", destination_hostgroup=20, apply=1)],
     SELECT, 0, (1,), 20, 1, ()),
    ("username and schemaname must be equal, case-sensitively",
     [rule(1, username="App", destination_hostgroup=5, apply=1),
      rule(2, username="app", schemaname="other", destination_hostgroup=6, apply=1),
      rule(3, username="app", schemaname="shop", destination_hostgroup=7, apply=1)],
     SELECT, 0, (3,), 7, 3, ()),
    ("digest hash",
     [rule(1, digest="0x000000000000002E", destination_hostgroup=10, apply=1),
      rule(2, digest="0x000000000000001D", destination_hostgroup=20, apply=1)],
     SELECT, 0, (2,), 20, 2, ()),
    ("match_pattern runs on the query text: undecided, the walk goes on as if it missed",
     [rule(1, match_pattern="^SELECT .* FOR UPDATE", destination_hostgroup=10, apply=1),
      rule(2, match_digest="^SELECT", destination_hostgroup=20, apply=1)],
     SELECT, 0, (2,), 20, 2, (1,)),
    ("a definite miss beats an unknown field",
     [rule(1, match_pattern="x", username="other", destination_hostgroup=10, apply=1)],
     SELECT, 0, (), None, None, ()),
    ("proxy_port is not in the digest: undecided",
     [rule(1, proxy_port=6033, destination_hostgroup=10, apply=1)],
     SELECT, 0, (), None, None, (1,)),
    ("a pattern Python rejects: undecided, said on the rule",
     [rule(1, match_digest="^SELECT(?<!(a|bc))", destination_hostgroup=10, apply=1)],
     SELECT, 0, (), None, None, (1,)),
    ("inactive rules are not evaluated",
     [rule(1, active=0, match_digest="^SELECT", destination_hostgroup=10, apply=1)],
     SELECT, 0, (), None, None, ()),
    ("rules are walked in rule_id order whatever the table order",
     [rule(9, match_digest="^SELECT", destination_hostgroup=90, apply=1),
      rule(3, match_digest="^SELECT", destination_hostgroup=30, apply=1)],
     SELECT, 0, (3,), 30, 3, ()),
]


@pytest.mark.parametrize("name, rules, query, iterations, matched, destination, ended_by, undecided", CASES,
                         ids=[c[0] for c in CASES])
def test_route(name, rules, query, iterations, matched, destination, ended_by, undecided):
    result = evaluate(compile_rules(rules), query, iterations)
    assert result.matched_ids == matched
    assert result.destination == destination
    assert result.ended_by == ended_by
    assert tuple(s.rule.rule_id for s in result.undecided) == undecided


def test_an_uncompilable_pattern_says_why_on_its_rule():
    compiled = compile_rule(rule(1, match_digest="^SELECT(?<!(a|bc))"))
    assert compiled.problem and "Python can't compile" in compiled.problem
    step = evaluate((compiled,), SELECT).undecided[0]
    assert any("Python can't compile" in field for field in step.fields)


def test_undecided_match_pattern_says_what_proxytop_cannot_see():
    step = evaluate(compile_rules([rule(1, match_pattern="^DELETE")]), SELECT).undecided[0]
    assert "query text" in step.fields[0]


def test_client_address_is_undecided_unless_tracked_and_wildcards_are_prefixes():
    rules = compile_rules([rule(1, client_addr="10.0.%", destination_hostgroup=10, apply=1)])
    untracked = evaluate(rules, SELECT)
    assert untracked.matched_ids == () and untracked.undecided[0].rule.rule_id == 1
    tracked = Query(SELECT.digest, SELECT.digest_text, "app", "shop", "10.0.3.4")
    assert evaluate(rules, tracked).matched_ids == (1,)
    other = Query(SELECT.digest, SELECT.digest_text, "app", "shop", "192.168.0.1")
    assert evaluate(rules, other).matched_ids == () and evaluate(rules, other).undecided == ()


def test_cache_ttl_and_error_msg_are_carried_on_the_route():
    result = evaluate(compile_rules([rule(1, match_digest="^SELECT", cache_ttl=2000),
                                     rule(2, match_digest="sbtest", error_msg="blocked", apply=1)]), SELECT)
    assert result.cache_ttl == 2000 and result.answered_by_proxysql == "blocked"


def test_the_recorded_cluster_agrees_with_proxysqls_own_rule_hits():
    """Over the cluster recording's 109 digest rows, the evaluator sends reporting's SLEEP
    queries through rule 4 (^SELECT, apply=1) before rule 6 is reached, so rule 7 (flagIN 100,
    SLEEP) catches nothing — as ProxySQL's stats_mysql_query_rules says: rule 7 has 0 hits
    while rules 2, 3 and 4 have thousands and rule 6 a few (reporting's non-SELECTs)."""
    rec = Recording.load("cluster")
    runtime = rec.fixed[("admin", "select * from runtime_mysql_query_rules")]
    rules = compile_rules([dict(zip(runtime["columns"], row)) for row in runtime["rows"]])
    columns, rows = rec.series["stats_mysql_query_digest"][-1]
    at = {c: i for i, c in enumerate(columns)}
    passed = {rule_id: 0 for rule_id in range(1, 8)}
    for row in rows:
        query = Query(route.parse_digest(row[at["digest"]]), row[at["digest_text"]], row[at["username"]],
                      row[at["schemaname"]], row[at["client_address"]])
        for rule_id in evaluate(rules, query).matched_ids:
            passed[rule_id] += int(row[at["count_star"]])
    hits = dict(rec.series["stats_mysql_query_rules"][-1][1])
    assert passed[7] == 0 and hits["7"] == "0"
    assert passed[1] == 0 or int(hits["1"]) > 0
    for rule_id in (2, 3, 4):
        assert passed[rule_id] > 0 and int(hits[str(rule_id)]) > 0
    sleep = next(r for r in rows if r[at["digest_text"]] == "SELECT SLEEP(?),?")
    query = Query(route.parse_digest(sleep[at["digest"]]), sleep[at["digest_text"]], "reporting",
                  sleep[at["schemaname"]], "")
    assert evaluate(rules, query).matched_ids == (4,)


def test_doctests():
    result = doctest.testmod(route)
    assert result.attempted > 0 and result.failed == 0
