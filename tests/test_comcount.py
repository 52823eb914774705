"""ComCount: rates, shares, averages and percentiles over the interval; the latency drill-down."""
from __future__ import annotations

import doctest
import re

import pytest

from proxytop.core import Snapshot, Table
from proxytop.metrics.histogram import BUCKET_COLUMNS
from proxytop.screens import comcount
from proxytop.screens.comcount import ComCountScreen, command_detail, command_rows
from tests.proxysql_double import ProxySQLDouble
from tests.terminal import ESC, HOME

COLUMNS = ("Command", "Total_Time_us", "Total_cnt") + BUCKET_COLUMNS


def counters(taken_at, rows):
    """A commands-counters snapshot from (command, total_time_us, bucket counts) tuples."""
    table_rows = []
    for command, total_time, buckets in rows:
        buckets = tuple(buckets) + (0,) * (12 - len(buckets))
        table_rows.append((command, str(total_time), str(sum(buckets))) + tuple(str(b) for b in buckets))
    return Snapshot("proxysql.commands_counters", Table(COLUMNS, tuple(table_rows)), taken_at, 0.01)


BEFORE = counters(100.0, [
    ("SELECT", 200_000, (600, 300, 100)),
    ("INSERT", 90_000, (0, 100, 50)),
    ("SHOW", 0, ()),
])
# Two seconds later: SELECT ran 400 more (200 ≤100µs, 120 ≤500µs, 60 ≤1ms, 20 ≤5ms) for
# 120,000 µs; INSERT ran 100 more (50 ≤500µs, 50 ≤1ms) for 60,000 µs; SHOW never ran.
AFTER = counters(102.0, [
    ("SELECT", 320_000, (800, 420, 160, 20)),
    ("INSERT", 150_000, (0, 150, 100)),
    ("SHOW", 0, ()),
])


def by_command(rows):
    return {r["command"]: r for r in rows}


def test_docstring_examples():
    result = doctest.testmod(comcount)
    assert result.attempted > 0 and result.failed == 0


def test_rates_shares_and_averages_over_the_interval():
    rows = by_command(command_rows(BEFORE, AFTER))
    select, insert = rows["SELECT"], rows["INSERT"]
    assert select["total"] == 1400 and select["rate"] == 200.0  # 400 in 2 s
    assert insert["rate"] == 50.0
    assert select["share"] == pytest.approx(80.0) and insert["share"] == pytest.approx(20.0)
    assert select["avg_us"] == 300.0  # 120,000 µs / 400
    assert insert["avg_us"] == 600.0  # 60,000 µs / 100
    assert select["avg_all_us"] == pytest.approx(320_000 / 1400)


def test_percentiles_come_from_the_interval_buckets_only():
    select = by_command(command_rows(BEFORE, AFTER))["SELECT"]
    # interval: 200 ≤100µs, 120 ≤500µs, 60 ≤1ms, 20 ≤5ms (400 in all)
    assert select["_delta"][:4] == (200, 120, 60, 20)
    assert select["p50"] == 100  # rank 200: the last of the first bucket
    assert select["p95"] == 1_000  # rank 380: cumulative 380 after the third bucket
    assert select["p99"] == 5_000  # rank 396
    insert = by_command(command_rows(BEFORE, AFTER))["INSERT"]
    assert (insert["p50"], insert["p95"], insert["p99"]) == (500, 1_000, 1_000)


def test_commands_never_executed_are_hidden_until_asked():
    assert "SHOW" not in by_command(command_rows(BEFORE, AFTER))
    shown = by_command(command_rows(BEFORE, AFTER, show_unused=True))
    assert shown["SHOW"]["rate"] == 0.0 and shown["SHOW"]["p50"] is None and shown["SHOW"]["avg_us"] is None


def test_first_reading_has_totals_but_no_interval_values():
    select = by_command(command_rows(None, AFTER))["SELECT"]
    assert select["total"] == 1400
    assert select["rate"] is None and select["avg_us"] is None and select["p99"] is None
    assert select["avg_all_us"] is not None


def test_a_counter_reset_gives_no_rate_and_no_histogram():
    restarted = counters(103.0, [("SELECT", 3_000, (10, 2)), ("INSERT", 150_000, (0, 150, 100))])
    rows = by_command(command_rows(AFTER, restarted))
    select = rows["SELECT"]
    assert select["rate"] is None and select["avg_us"] is None
    assert select["_delta"] is None and select["p50"] is None and select["share"] is None
    assert rows["INSERT"]["rate"] == 0.0  # unchanged commands still have their (zero) rate


def test_drill_down_shows_both_histograms_with_bars_and_cumulative_percent():
    select = by_command(command_rows(BEFORE, AFTER))["SELECT"]
    detail = command_detail(select, 2.0)
    text = "\n".join("".join(t for t, _ in line) for line in detail.lines)
    assert "Since start" in text and "Last 2s" in text
    # since start: 800 ≤100µs of 1,400 -> 57.14%; the last interval: 200 of 400 -> 50%
    assert re.search(r"\u2264100\u00b5s\s+\u2588+\s+800\s+57\.14%", text), text
    assert re.search(r"\u2264100\u00b5s\s+\u2588+\s+200\s+50\.00%", text), text
    assert re.search(r"\u22645ms\s+\u2588+\s+20\s+100%", text), text
    assert "p50 \u2264100\u00b5s  p95 \u22641ms  p99 \u22645ms" in text
    assert "not interpolated" in text


def test_screen_help_says_percentiles_are_bucket_upper_bounds():
    helps = {c.key: c.help for c in ComCountScreen.columns}
    assert "upper bound" in helps["p95"] and "not interpolated" in helps["p95"]


# ----- end to end -----------------------------------------------------------------------
def start(proxytop_term, double, *args):
    term = proxytop_term("-P", str(double.port), "--screen", "comcount", *args, cols=120, rows=40)
    term.wait_until(lambda s: re.search(r"SELECT\s+[\d.]+k\s+[\d.]+k", s) is not None, what="SELECT with a rate")
    return term


def test_e2e_commands_sorted_by_rate_with_percentiles(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    screen = term.text()
    lines = [l for l in screen.splitlines() if re.match(r"^(SELECT|UPDATE|BEGIN|COMMIT|DELETE|INSERT)\s", l)]
    assert lines[0].startswith("SELECT"), screen  # the busiest command first
    assert re.search(r"SELECT\s.*\u2264\d+\S*s", screen)  # percentiles as bucket bounds
    assert "sort Count/s \u2193" in screen
    assert "commands never executed are hidden" in screen
    assert not re.search(r"^ALTER_TABLE\s", screen, re.M) and "6 rows" in screen
    print("\n" + screen)
    term.send("i")
    screen = term.wait_for("54 rows")  # ProxySQL lists all 54 commands, executed or not
    assert re.search(r"^ALTER_TABLE\s+0\s+0\s", screen, re.M), screen


def test_e2e_drill_down_shows_the_bucket_bars(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.send(HOME)  # the first row: SELECT, the busiest
    term.send("\r")
    screen = term.wait_until(lambda s: "SELECT: latency" in s and "Since start" in s and "Last " in s,
                             what="the SELECT latency histograms")
    bars = [l for l in screen.splitlines() if re.match(r"^\s+(\u2264|>)\S+\s+\u2588+\s+[\d.]+k?\s+[\d.]+%", l)]
    assert len(bars) >= 4, screen
    assert re.search(r"percentiles\s+since start p50 \u2264", screen)
    print("\n" + screen)
    term.send(ESC, pause=0.4)
    term.wait_for("sort Count/s")


def test_e2e_with_the_stats_user_and_the_1_4_column_set(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording, version="1.4").start()
    try:
        term = start(proxytop_term, double, "-u", "stats", "-p", "stats")
        screen = term.text()
        assert "(stats user)" in screen and "ProxySQL 1.4" in screen
        assert "Traceback" not in screen
    finally:
        double.stop()
