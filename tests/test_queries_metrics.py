"""Digest metrics with worked numbers: rates per row and per group, resets, bad values."""
from __future__ import annotations

import doctest

import pytest

from proxytop.metrics import digests
from proxytop.metrics.digests import digest_rows, mass_reset, parse, split, time_series, totals
from proxytop.screens import queries
from tests.scale_digests import DIGEST_COLUMNS

COLUMNS = DIGEST_COLUMNS


def row(hg, user, digest, text, count, sum_time, first=1000, last=1100, min_time=100, max_time=900,
        affected=0, sent=0, schema="sbtest", client=""):
    return (str(hg), schema, user, client, digest, text, None if count is None else str(count), str(first),
            str(last), None if sum_time is None else str(sum_time), str(min_time), str(max_time), str(affected),
            str(sent))


def reading(rows, wall):
    return parse(COLUMNS, rows, wall)


# A point select on hostgroups 20 and the cache (-1), and an update on 10; 5 s apart.
BEFORE = reading([
    row(20, "app", "0xA", "SELECT c FROM t WHERE id=?", 1000, 500_000, sent=1000),
    row(-1, "app", "0xA", "SELECT c FROM t WHERE id=?", 4000, 40_000, sent=4000),
    row(10, "app", "0xB", "UPDATE t SET k=k+? WHERE id=?", 200, 1_000_000, affected=200),
], wall=1100.0)
AFTER = reading([
    row(20, "app", "0xA", "SELECT c FROM t WHERE id=?", 1500, 750_000, sent=1500, last=1105),
    row(-1, "app", "0xA", "SELECT c FROM t WHERE id=?", 6000, 60_000, sent=6000, last=1105),
    row(10, "app", "0xB", "UPDATE t SET k=k+? WHERE id=?", 300, 2_000_000, affected=300, last=1104),
], wall=1105.0)


def by_digest(rows):
    return {r["digest"]: r for r in rows}


def test_rates_per_digest_worked_numbers():
    rows = by_digest(digest_rows(BEFORE, AFTER, 5.0))
    select, update = rows["0xA"], rows["0xB"]
    # 0xA: (500 + 2000) executions and (250,000 + 20,000) µs in 5 s
    assert select["count_s"] == pytest.approx(500.0)
    assert select["time_s"] == pytest.approx(54.0)  # 270 ms of query time / 5 s
    assert select["avg_ms"] == pytest.approx(0.108)  # 270,000 µs / 2,500
    assert select["sent_s"] == pytest.approx(500.0)
    assert select["hg"] == "20,cache" and select["count"] == 7500
    assert select["avg_life_ms"] == pytest.approx(810_000 / 7500 / 1000)
    # 0xB: 100 executions, 1,000,000 µs: 200 ms/s, 10 ms each
    assert update["time_s"] == pytest.approx(200.0) and update["avg_ms"] == pytest.approx(10.0)
    assert update["affected_s"] == pytest.approx(20.0) and update["max_ms"] == pytest.approx(0.9)
    assert update["share"] == pytest.approx(100 * 200 / 254) and select["share"] == pytest.approx(100 * 54 / 254)


def test_grouping_by_hostgroup_splits_the_cache_from_the_backend():
    rows = digest_rows(BEFORE, AFTER, 5.0, ("hostgroup",))
    pairs = {(r["digest"], r["hg"]): r for r in rows}
    assert set(pairs) == {("0xA", "20"), ("0xA", "cache"), ("0xB", "10")}
    assert pairs[("0xA", "20")]["time_s"] == pytest.approx(50.0)
    assert pairs[("0xA", "cache")]["time_s"] == pytest.approx(4.0)


def test_grouping_by_user_and_schema():
    before = reading([row(20, "app", "0xA", "SELECT ?", 10, 100), row(20, "report", "0xA", "SELECT ?", 10, 100,
                                                                      schema="dw")], 1100.0)
    after = reading([row(20, "app", "0xA", "SELECT ?", 20, 300), row(20, "report", "0xA", "SELECT ?", 11, 1100,
                                                                     schema="dw")], 1102.0)
    by_user = {r["user"]: r for r in digest_rows(before, after, 2.0, ("username",))}
    assert by_user["app"]["count_s"] == pytest.approx(5.0) and by_user["report"]["count_s"] == pytest.approx(0.5)
    by_schema = {r["schema"]: r for r in digest_rows(before, after, 2.0, ("schemaname",))}
    assert by_schema["dw"]["time_s"] == pytest.approx(0.5)  # 1,000 µs in 2 s
    single = digest_rows(before, after, 2.0)
    assert len(single) == 1 and single[0]["user"] == "app,report"


def test_a_row_that_goes_down_or_moves_first_seen_has_no_rate_never_a_negative_one():
    after = reading([
        row(20, "app", "0xA", "SELECT c FROM t WHERE id=?", 10, 5_000, first=1103, last=1105),  # truncated
        row(-1, "app", "0xA", "SELECT c FROM t WHERE id=?", 6000, 60_000, last=1105),
        row(10, "app", "0xB", "UPDATE t SET k=k+? WHERE id=?", 50, 9_000_000, first=1102),  # first_seen moved
    ], wall=1105.0)
    rows = by_digest(digest_rows(BEFORE, after, 5.0))
    assert rows["0xA"]["count_s"] == pytest.approx(400.0)  # only the cache row's 2,000: the reset row gives none
    assert rows["0xB"]["count_s"] is None and rows["0xB"]["time_s"] is None
    assert all(r["count_s"] is None or r["count_s"] >= 0 for r in rows.values())


def test_most_rows_reset_at_once_is_a_reset_of_the_statistics():
    emptied = reading([row(10, "app", "0xB", "UPDATE t SET k=k+? WHERE id=?", 3, 3000, first=1104, last=1105)], 1105.0)
    assert mass_reset(BEFORE, emptied)
    assert not mass_reset(BEFORE, AFTER)
    rows = digest_rows(BEFORE, emptied, 5.0)
    assert [r["count_s"] for r in rows] == [None]  # first_seen moved: no rate, not 3/5


def test_a_new_row_counts_from_zero_when_it_appeared_in_the_interval():
    after = reading([
        row(20, "app", "0xA", "SELECT c FROM t WHERE id=?", 1500, 750_000, sent=1500),
        row(-1, "app", "0xA", "SELECT c FROM t WHERE id=?", 6000, 60_000, sent=6000),
        row(10, "app", "0xB", "UPDATE t SET k=k+? WHERE id=?", 300, 2_000_000, affected=300),
        row(20, "app", "0xC", "SELECT 1", 7, 700, first=1103, last=1104),
    ], 1105.0)
    rows = by_digest(digest_rows(BEFORE, after, 5.0))
    assert rows["0xC"]["count_s"] == pytest.approx(1.4)
    old = reading([row(20, "app", "0xD", "SELECT 2", 7, 700, first=500, last=1104)], 1105.0)
    assert digest_rows(BEFORE, old, 5.0)[0]["count_s"] is None  # older than the previous reading: unseen, not new


def test_bad_values_null_text_null_counters_and_a_huge_text():
    huge = "SELECT " + "x," * 500_000 + "?"
    parsed = reading([
        row(10, "app", "0x1", None, 5, 50),
        row(10, "app", "0x2", "", 5, 50),
        row(10, "app", "0x3", "SELECT\n  a\tFROM b", None, None),
        row(10, "app", "0x4", huge, 5, 50),
    ], 1105.0)
    assert parsed.null_counters == 1
    rows = by_digest(digest_rows(None, parsed, None))
    assert rows["0x1"]["text"] is None and rows["0x2"]["text"] is None and rows["0x1"]["_style"] == "dim"
    assert rows["0x3"]["text"] == "SELECT a FROM b" and rows["0x3"]["count"] == 0
    assert len(rows["0x4"]["text"]) == digests.TEXT_IN_TABLE and parsed.texts["0x4"] == huge


def test_split_of_the_last_interval():
    parts = split(BEFORE, AFTER, "0xA", 5.0)
    assert parts["hostgroup"][0][0] == "20" and parts["hostgroup"][0][2] == pytest.approx(50.0)
    assert parts["hostgroup"][1][0] == "cache"
    assert parts["client_address"] == [("(not tracked)", pytest.approx(500.0), pytest.approx(54.0))]


def test_time_series_from_kept_totals():
    before = totals(reading([row(10, "app", "0xB", "UPDATE t", 200, 1_000_000)], 1100.0))
    after = totals(reading([row(10, "app", "0xB", "UPDATE t", 300, 2_000_000)], 1105.0))
    assert time_series([(0.0, before), (5.0, after)], "0xB") == [pytest.approx(200.0)]


def test_detail_wraps_the_text_caps_a_huge_one_and_needs_an_admin_for_routes():
    huge = "SELECT " + "x," * 500_000 + "?"
    now = reading([row(10, "app", "0x4", huge, 5, 50)], 1105.0)
    shown = digest_rows(None, now, None)[0]
    detail = queries.digest_detail(shown, None, now, None, (), None,
                                   "Routes need an admin user: the stats user can't read runtime_mysql_query_rules.",
                                   None, 0, ())
    text = "\n".join("".join(t for t, _ in line) for line in detail.lines)
    assert "(1.0M characters; the first 16.4k are shown)" in text
    assert max(len("".join(t for t, _ in line)) for line in detail.lines[:50]) <= queries.WRAP + 2
    assert "Routes need an admin user" in text


def test_the_collector_floor_and_read_cost():
    from proxytop.collectors.digest import QueryDigest
    collector = QueryDigest(5.0)
    assert collector.min_interval == 5.0
    collector.last_duration = 0.4  # a 20,000-digest map that took 0.4 s to read
    assert collector.min_interval == 8.0
    collector.last_duration = 0.41
    assert collector.min_interval == 9.0  # in whole seconds, rounded up


def test_doctests():
    for module in (digests, queries):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0


def test_twenty_thousand_generated_digests_have_rates_and_group_as_recorded():
    from tests.proxysql_double import Recording
    from tests.scale_digests import ScaleDigests

    scale = ScaleDigests(Recording.load("cluster", node="127.0.0.1:6042"), digests=20_000)
    first = parse(*scale(COLUMNS, []), 1_795_385_005.0)
    second = parse(*scale(COLUMNS, []), 1_795_385_010.0)
    assert len(first.entries) == len(second.entries) == 20_000 and len(second.texts) == 20_000
    rows = digest_rows(first, second, 5.0)
    assert len(rows) == 20_000
    rated = [r for r in rows if r["count_s"]]
    assert rated and all(r["time_s"] > 0 for r in rated)
    assert sum(1 for r in rows if r["count_s"] == 0) > 1000  # idle digests: a rate of 0, not None
    assert {r["hg"] for r in rows} == {"10", "20", "cache"}
    assert not mass_reset(first, second)


def test_sorted_and_filtered_rows_of_many_digests():
    from proxytop.screens import filters
    from proxytop.screens.table import TableState
    from tests.proxysql_double import Recording
    from tests.scale_digests import ScaleDigests

    scale = ScaleDigests(Recording.load("cluster", node="127.0.0.1:6042"), digests=2_000)
    first = parse(*scale(COLUMNS, []), 1_795_385_005.0)
    second = parse(*scale(COLUMNS, []), 1_795_385_010.0)
    full = digest_rows(first, second, 5.0)
    screen = queries.QueriesScreen()
    times = [r["time_s"] for r in screen.arrange(full, TableState("time_s", True))]
    present = [t for t in times if t is not None]
    assert present == sorted(present, reverse=True) and times[len(present):] == [None] * (len(times) - len(present))
    wanted = TableState("time_s", True, filters.parse("sbtest1", queries.COLUMNS))
    filtered = screen.arrange(full, wanted)
    assert 0 < len(filtered) < len(full) and all("sbtest1" in r["text"] for r in filtered)


def test_a_reading_records_and_replays_as_the_rows_read():
    from proxytop.collectors.digest import QueryDigest
    from proxytop.recordings import recording

    rows = (row(20, "app", "0xA", "SELECT c FROM t WHERE id=?", 1000, 500_000, sent=1000),
            row(-1, "app", "0xA", "SELECT c FROM t WHERE id=?", 4000, 40_000, sent=4000),
            row(10, "app", "0xB", "UPDATE t SET k=k+? WHERE id=?", 200, 1_000_000, affected=200))
    parsed = reading(rows, 1100.0)
    assert recording.loads(recording.dumps(parsed)) == parsed
    kept = QueryDigest(5.0).shrink(parsed)
    assert isinstance(kept, digests.DigestTotals) and kept.get("0xA") == (540_000, 1000)


def test_first_seen_moving_by_proxysqls_jitter_is_not_a_reset():
    # ProxySQL converts first_seen from its monotonic clock at each read, truncating: in the
    # recorded 2.7.2 the same rows' first_seen moved by a second between two digest readings.
    from tests.proxysql_double import Recording

    frames = Recording.load("2.7").series["stats_mysql_query_digest"]
    pairs = [(a, b) for a, b in zip(frames, frames[1:]) if a[1] and b[1]]
    moved = None
    for (cols_a, rows_a), (cols_b, rows_b) in pairs:
        first = cols_a.index("first_seen")
        key = [cols_a.index(c) for c in ("hostgroup", "schemaname", "username", "client_address", "digest")]
        seen_a = {tuple(r[k] for k in key): int(r[first]) for r in rows_a}
        if any(abs(int(r[first]) - seen_a.get(tuple(r[k] for k in key), int(r[first]))) == 1 for r in rows_b):
            moved = (cols_a, rows_a), (cols_b, rows_b)
            break
    assert moved is not None, "the recording has two readings where first_seen moved by a second"
    (cols_a, rows_a), (cols_b, rows_b) = moved
    before, after = parse(cols_a, rows_a, 1000.0), parse(cols_b, rows_b, 1010.0)
    assert digests.resets(before, after) == 0
    assert not mass_reset(before, after)
    assert len(digests.deltas(before, after)) == len(after.entries)
    # the same row with its first_seen a minute later is a reset
    shifted = [list(r) for r in rows_b]
    first = cols_b.index("first_seen")
    shifted[0][first] = str(int(shifted[0][first]) + 60)
    assert digests.resets(before, parse(cols_b, shifted, 1010.0)) == 1
