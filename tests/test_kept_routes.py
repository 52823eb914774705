"""QueryRules' "queries this rule catches" keeps each digest's route from reading to reading:
the same routes as evaluating every row, re-evaluated only for new rows, changed texts or
changed rules."""
from __future__ import annotations

from unittest import mock

from proxytop.metrics import digests
from proxytop.metrics.route import compile_rules
from proxytop.screens import queries
from tests.test_route import rule

COLUMNS = ("hostgroup", "schemaname", "username", "client_address", "digest", "digest_text", "count_star",
           "first_seen", "last_seen", "sum_time", "min_time", "max_time", "sum_rows_affected", "sum_rows_sent")


def reading(texts, wall=100.0):
    rows = [("10", "shop", "app", "", digest, text, "1", "90", "95", "100", "1", "9", "0", "1")
            for digest, text in texts.items()]
    return digests.parse(COLUMNS, rows, wall)


RULES = compile_rules([rule(1, match_digest="^SELECT", destination_hostgroup=20, apply=1),
                       rule(2, match_digest="^UPDATE", destination_hostgroup=10, apply=1)])


def test_routes_are_those_of_every_row_and_evaluated_once_per_row():
    first = reading({"0x1": "SELECT a FROM t", "0x2": "UPDATE t SET a=?"})
    again = digests.parse(COLUMNS, [("10", "shop", "app", "", "0x1", "SELECT a FROM t", "5", "90", "99", "500",
                                     "1", "9", "0", "5"),
                                    ("10", "shop", "app", "", "0x2", "UPDATE t SET a=?", "1", "90", "95", "100",
                                     "1", "9", "0", "1")], 105.0)
    third = reading({"0x1": "SELECT a FROM t", "0x2": "SELECT b FROM t", "0x3": "UPDATE u SET b=?"})
    other = compile_rules([rule(1, match_digest="^UPDATE", destination_hostgroup=30, apply=1)])
    # (reading, rules, evaluations expected): the same rows again cost nothing; a new digest and
    # a changed text cost one each; other rules re-evaluate everything
    steps = [(first, RULES, 2), (again, RULES, 0), (third, RULES, 2), (third, other, 3)]
    expected = [queries.routes(current, rules) for current, rules, _ in steps]
    kept = queries.KeptRoutes()
    with mock.patch.object(queries, "evaluate", wraps=queries.evaluate) as evaluated:
        for (current, rules, evaluations), routes in zip(steps, expected):
            evaluated.reset_mock()
            assert kept.routes(current, rules) == routes
            assert evaluated.call_count == evaluations


def test_caught_rows_are_the_passing_digests_by_time():
    before = reading({"0x1": "SELECT a FROM t", "0x2": "UPDATE t SET a=?", "0x3": "SELECT c FROM t"})
    now = digests.parse(COLUMNS, [
        ("10", "shop", "app", "", "0x1", "SELECT a FROM t", "3", "90", "99", "300", "1", "9", "0", "3"),
        ("10", "shop", "app", "", "0x2", "UPDATE t SET a=?", "9", "90", "99", "9000", "1", "9", "0", "9"),
        ("10", "shop", "app", "", "0x3", "SELECT c FROM t", "2", "90", "99", "5100", "1", "9", "0", "2")], 110.0)
    found = queries.KeptRoutes().routes(now, RULES)
    caught, undecided = queries.caught("1", before, now, 10.0, found)
    assert [r["digest"] for r in caught] == ["0x3", "0x1"] and undecided == set()
    assert queries.passing("2", found) == ({"0x2"}, set())


def test_a_reading_with_new_rows_evaluates_only_those_rows():
    first = reading({"0x1": "SELECT a FROM t", "0x2": "UPDATE t SET a=?", "0x3": "SELECT c FROM t"})
    grown = reading({"0x1": "SELECT a FROM t", "0x9": "UPDATE z SET q=?", "0x2": "UPDATE t SET a=?",
                     "0x3": "SELECT c FROM t", "0x8": "SELECT new FROM n"})
    expected = queries.routes(grown, RULES)
    kept = queries.KeptRoutes()
    kept.routes(first, RULES)
    with mock.patch.object(queries, "evaluate", wraps=queries.evaluate) as evaluated:
        assert kept.routes(grown, RULES) == expected
        assert evaluated.call_count == 2
    assert queries.passing("2", kept.routes(grown, RULES))[0] == {"0x2", "0x9"}
