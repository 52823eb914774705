"""Rates against counters that move in steps, as ProxySQL's do.

ProxySQL's worker threads add their counts to stats_mysql_commands_counters and to the query
rules' hits about once a second (Query_Processor::update_query_processor_stats), so readings
one second apart see zero, one or two updates. The double here serves counters that advance
only on such an update clock; under that steady load every rate proxytop shows must stay
within 5% of the true mean, while the plain difference of the last two readings does not.
"""
from __future__ import annotations

import math
import threading
import time

from proxytop.core import Snapshot
from proxytop.collectors.proxysql import GlobalStatus
from proxytop.collectors.proxysql_stats import CommandCounters, QueryRuleHits
from proxytop.polling.connection import Endpoint, ProxySQLSource
from proxytop.polling.engine import Engine
from hypothesis import given, settings
from hypothesis import strategies as st

from proxytop.metrics.rates import RATE_WINDOW, SteadyPair, UpdateTracker, rate, update_span
from proxytop.screens.base import DataView, seconds_between
from proxytop.screens.comcount import ComCountScreen, total_executions
from proxytop.screens.glostat import GloStatScreen, steady_bases
from proxytop.screens.queryrules import QueryRulesScreen

SELECTS_PER_UPDATE = 2_000  # SELECTs one update adds
HITS_PER_UPDATE = 700  # hits of rule 4 one update adds
QUESTIONS_PER_UPDATE = 3_000


class UpdateClock:
    """Counter values as of ProxySQL's last update: ``per_update`` more every ``period`` s."""

    def __init__(self, period: float, start: float):
        self.period = period
        self.start = start

    def updates(self) -> int:
        return int(math.floor((time.monotonic() - self.start) / self.period))

    def per_second(self, per_update: float) -> float:
        return per_update / self.period


def stepped_double(double, commands: UpdateClock, rules: UpdateClock, questions: UpdateClock) -> None:
    def counters(columns, rows):
        n = commands.updates()
        at = {name: i for i, name in enumerate(columns)}
        for row in rows:
            count = 10_000 + n * SELECTS_PER_UPDATE if row[at["Command"]] == "SELECT" else 0
            for name in columns[1:]:
                row[at[name]] = "0"
            row[at["Total_cnt"]] = str(count)
            row[at["cnt_1ms"]] = str(count)
            row[at["Total_Time_us"]] = str(count * 700)
        return columns, rows

    def rule_hits(columns, rows):
        n = rules.updates()
        at = {name: i for i, name in enumerate(columns)}
        for row in rows:
            row[at["hits"]] = str(500 + n * HITS_PER_UPDATE) if row[at["rule_id"]] == "4" else "0"
        return columns, rows

    def global_status(columns, rows):
        n = questions.updates()
        name_at, value_at = columns.index("Variable_Name"), columns.index("Variable_Value")
        for row in rows:
            if row[name_at] == "Questions":
                row[value_at] = str(90_000 + n * QUESTIONS_PER_UPDATE)
        return columns, rows

    double.transforms["stats_mysql_commands_counters"] = counters
    double.transforms["stats_mysql_query_rules"] = rule_hits
    double.transforms["stats_mysql_global"] = global_status


def test_every_rate_stays_within_5_percent_of_the_mean_while_plain_differences_swing(proxysql_double):
    now = time.monotonic()
    # Updates a little faster than the 1 s readings (some readings see two), a little slower
    # (some see none), and exactly as often (which of the two happens is up to the jitter).
    commands, rules, questions = UpdateClock(0.95, now), UpdateClock(1.04, now), UpdateClock(1.0, now)
    stepped_double(proxysql_double, commands, rules, questions)
    engine = Engine()
    engine.add_source(ProxySQLSource(Endpoint(port=proxysql_double.port, timeout=2)))
    names = (CommandCounters.name, QueryRuleHits.name, GlobalStatus.name)
    for collector in (CommandCounters(), QueryRuleHits(), GlobalStatus()):
        engine.add_collector(collector)
    engine.set_active(names)
    view = DataView(engine)
    comcount, queryrules, glostat = ComCountScreen(), QueryRulesScreen(), GloStatScreen()
    truth = {"SELECT/s": commands.per_second(SELECTS_PER_UPDATE), "rule 4 hits/s": rules.per_second(HITS_PER_UPDATE),
             "Questions/s": questions.per_second(QUESTIONS_PER_UPDATE)}
    shown, plain = {key: [] for key in truth}, {key: [] for key in truth}
    engine.start()
    try:
        seen = {name: None for name in names}
        deadline = time.monotonic() + RATE_WINDOW + 14
        while time.monotonic() < deadline:
            time.sleep(0.05)
            fresh = [name for name in names if engine.latest(name) is not seen[name]]
            for name in fresh:
                seen[name] = engine.latest(name)
                history = engine.history(name)
                if history[-1].taken_at - history[0].taken_at < RATE_WINDOW:
                    continue  # the window is not full yet: the first rates span what there is
                previous, current = engine.last_two(name)
                if name == CommandCounters.name:
                    row = next(r for r in comcount.rows(view) if r["command"] == "SELECT")
                    key, old, new = "SELECT/s", _select_total(previous), _select_total(current)
                elif name == QueryRuleHits.name:
                    row = next(r for r in queryrules.rows(view) if str(r["rule_id"]) == "4")
                    key, old, new = "rule 4 hits/s", _rule_hits(previous), _rule_hits(current)
                else:
                    row = next(r for r in glostat.rows(view) if r["name"] == "Questions")
                    key, old, new = "Questions/s", previous.data["Questions"], current.data["Questions"]
                shown[key].append(row["rate"] if "rate" in row else row["hits_s"])
                plain[key].append(rate(old, new, seconds_between(previous, current)))
    finally:
        engine.stop()
    for key, expected in truth.items():
        assert len(shown[key]) >= 8, (key, shown[key])
        worst = max(abs(value / expected - 1) for value in shown[key])
        assert worst <= 0.05, (key, expected, shown[key])
    # The double's counters really are stepped: the last interval alone was off by far.
    swings = [abs(value / truth[key] - 1) for key in ("SELECT/s", "rule 4 hits/s") for value in plain[key]]
    assert max(swings) >= 0.3, plain


def _select_total(snapshot):
    at = {name: i for i, name in enumerate(snapshot.data.columns)}
    return next(row[at["Total_cnt"]] for row in snapshot.data.rows if row[at["Command"]] == "SELECT")


def _rule_hits(snapshot):
    data = snapshot.data
    if hasattr(data, "get"):
        return data.get("4")
    return next(row[1] for row in data.rows if row[0] == "4")


# ----- the span itself, with worked numbers -------------------------------------------------
def readings(values, start=0.0, step=1.0):
    return [start + step * i for i in range(len(values))], list(values)


def test_a_repeated_reading_is_not_an_interval_without_traffic():
    # Updates of 100 every 1.25 s (80/s), read every second: the reading at 6 s repeats 5 s.
    stamps = [float(i) for i in range(8)]
    keys = [100 * math.floor(t / 1.25) for t in stamps]
    assert keys == [0, 0, 100, 200, 300, 400, 400, 500]
    assert (keys[6] - keys[5], keys[7] - keys[6]) == (0, 100)  # plain intervals: 0/s, then 100/s
    span = update_span(stamps, keys, window=5.0)
    assert (span.base, span.end, span.seconds) == (2, 7, 5.0)  # from the reading that first showed 100
    assert (keys[span.end] - keys[span.base]) / span.seconds == 80.0


def test_two_updates_in_one_interval_count_once_over_the_window():
    # An update of 100 every 0.95 s, read every second: the reading at 19 s sees two.
    stamps = [float(i) for i in range(20)]
    keys = [100 * math.floor(t / 0.95) for t in stamps]
    assert keys[19] - keys[18] == 200  # the plain last interval says 200/s
    span = update_span(stamps, keys, window=8.0)
    steady = (keys[span.end] - keys[span.base]) / span.seconds
    assert abs(steady / (100 / 0.95) - 1) <= 1 / 8  # at most one update's lag in 8 s


def test_traffic_that_stopped_brings_the_rate_down():
    stamps, keys = readings([0, 100, 200, 300, 300, 300, 300, 300])
    span = update_span(stamps, keys, window=1.0, refresh=2.0)
    # Unchanged since 3 s, the reading at 7 s: no traffic from 5 s (7 - refresh) on.
    assert (span.base, span.seconds) == (2, 3.0)
    assert (keys[-1] - keys[span.base]) / span.seconds == 100 / 3


def test_the_idle_seconds_before_the_traffic_began_are_not_in_its_rate():
    # The start of the 2.7.2 recording: stats_mysql_commands_counters read about every second,
    # unchanged from 0.09 s to 4.11 s (no traffic yet), then ~20,000 commands a second.
    stamps = [0.091, 1.092, 2.094, 3.098, 4.114, 5.112, 6.129, 7.112, 8.101, 9.116, 10.106, 11.114, 12.105,
              13.108, 14.115, 15.106, 16.115, 17.116, 18.12, 19.112, 20.116, 21.114, 22.121, 23.121, 24.12]
    totals = [0, 0, 0, 0, 0, 18705, 38872, 58666, 79760, 99275, 120258, 140312, 160570, 181482, 200155,
              219691, 239232, 260271, 282806, 303893, 325664, 348422, 370187, 391814, 413221]
    mean_10s = (totals[-1] - totals[14]) / (stamps[-1] - stamps[14])
    assert round(mean_10s) == 21296
    span = update_span(stamps, totals, window=20.0)
    # From the last idle reading (4.114 s): 20.006 s, not back to the first one (0.091 s, 24.03 s).
    assert (span.base, span.end, round(span.seconds, 3)) == (4, 24, 20.006)
    steady = (totals[span.end] - totals[span.base]) / span.seconds
    assert round(steady) == 20655 and abs(steady / mean_10s - 1) < 0.05  # 3.0%; over 24.03 s: 17,197 (19%)
    tracker = UpdateTracker(window=20.0)
    for stamp, total in zip(stamps, totals):
        tracker.add(stamp, {"Total_cnt": total})
    assert tracker.span("Total_cnt") == (0, span.seconds)


def test_a_counter_that_moves_now_and_then_keeps_its_mean():
    # 100 more every 4 s (25/s), read every second: standstills within the window too, so the
    # span runs from one change to another (5 updates in 20 s). Starting after the standstill
    # of 4-7 s instead (17 s, just before the update at 8 s) would say 29.4/s.
    stamps = [float(i) for i in range(25)]
    keys = [100 * (i // 4) for i in range(25)]
    span = update_span(stamps, keys, window=17.0)
    assert (span.base, span.seconds) == (4, 20.0)
    assert (keys[span.end] - keys[span.base]) / span.seconds == 25.0
    tracker = UpdateTracker(window=17.0)
    for stamp, key in zip(stamps, keys):
        tracker.add(stamp, {"c": key})
    assert tracker.span("c") == (100, 20.0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0.2, 3.0), st.integers(0, 2)), min_size=2, max_size=40),
       st.sampled_from([1.5, 5.0, 20.0]))
def test_glostat_tracker_spans_as_update_span_does(steps, window):
    """UpdateTracker (one counter of many, kept reading by reading) finds the span update_span finds."""
    stamps, keys, stamp, key = [], [], 0.0, 0
    for gap, increase in steps:
        stamp, key = stamp + gap, key + increase
        stamps.append(round(stamp, 3))
        keys.append(key)
    tracker = UpdateTracker(window=window)
    for at in range(len(stamps)):
        tracker.add(stamps[at], {"c": keys[at]})
        span = update_span(stamps[:at + 1], keys[:at + 1], window=window)
        found = tracker.span("c")
        if span is None:
            assert found is None or at == 0
        else:
            assert found is not None
            assert found[0] == keys[span.base] and math.isclose(found[1], span.seconds), (stamps, keys, at)


def test_a_counter_reset_gives_no_rate_over_the_span():
    stamps, keys = readings([500, 600, 10, 110])
    span = update_span(stamps, keys, window=5.0)
    assert span.base == 1 and rate(keys[span.base], keys[span.end], span.seconds) is None  # 600 -> 110


def test_steady_pair_computes_each_key_once_and_follows_the_history():
    calls = []

    def key(data):
        calls.append(data)
        return data

    pair = SteadyPair(key, window=1.5)
    history = [Snapshot("c", value, float(i), 0.01) for i, value in enumerate((1, 2, 2, 4))]
    base, latest, seconds = pair(history)
    assert (base.data, latest.data, seconds) == (2, 4, 2.0)
    pair(history)
    assert len(calls) == 4  # not again on the next redraw
    assert pair([])[1] is None and pair(history[:1]) == (None, history[0], None)


def test_glostat_spans_each_variable_by_its_own_updates():
    # Questions moves every reading; Com_commit only every other one.
    values = [("100", "10"), ("200", "10"), ("300", "30"), ("400", "30"), ("500", "50")]
    history = [Snapshot("proxysql.global", {"Questions": q, "Com_commit": c}, float(i), 0.01)
               for i, (q, c) in enumerate(values)]
    bases = steady_bases(history, window=1.5)
    assert bases["Questions"] == ("300", 2.0)
    assert bases["Com_commit"] == ("30", 2.0)  # from the reading that first showed 30, not the repeat


def test_comcount_key_is_the_total_of_executions():
    from proxytop.core import Table

    table = Table(("Command", "Total_cnt"), (("SELECT", "7"), ("INSERT", "3")))
    assert total_executions(table) == 10


def test_the_rule_sparkline_spreads_an_update_over_the_readings_that_waited_for_it():
    from proxytop.core import Table
    from proxytop.screens.queryrules import hits_series

    def reading(t, hits_1, hits_2):
        return Snapshot("proxysql.query_rule_hits", Table(("rule_id", "hits"), (("1", str(hits_1)), ("2", str(hits_2)))),
                        t, 0.01)

    # Rule 1 takes 100 hits a second; ProxySQL's update of 2 s came late: 1 s shows nothing new.
    history = [reading(0.0, 0, 5), reading(1.0, 0, 5), reading(2.0, 200, 5), reading(3.0, 300, 9)]
    assert hits_series(history, 1) == [100.0, 100.0, 100.0]  # not 0, then 200
    assert hits_series(history, 2) == [0.0, 0.0, 4.0]  # rule 2 really had no hits until 3 s
    # Nothing moved for 4 s after the last update: that is no traffic, not a late update.
    stopped = history + [reading(5.0, 300, 9), reading(7.0, 300, 9)]
    assert hits_series(stopped, 1)[-2:] == [0.0, 0.0]
    # ... but one unchanged reading right after an update is still waiting for the next one.
    assert hits_series(history + [reading(4.0, 300, 9)], 1)[-1] is None


# ----- the first readings and gaps: no span starts at a reading that showed no change -------
def shown_values(stamps, updates, per_update):
    """Each reading's value: ``per_update`` for every update at or before it."""
    return [per_update * sum(1 for u in updates if u <= t) for t in stamps]


def test_a_counter_updated_every_second_first_read_0_9_s_after_its_update():
    # Updates of 100 at 0, 1, 2, ... s (100/s); read every 0.5 s from 0.9 s on. The first
    # reading's 100 had stood for 0.9 s already: a span from it said 300 in 2.5 s (120/s).
    stamps = [0.9 + 0.5 * i for i in range(6)]  # 0.9 1.4 1.9 2.4 2.9 3.4
    keys = shown_values(stamps, range(10), 100)
    assert keys == [100, 200, 200, 300, 300, 400]
    assert (keys[-1] - keys[0]) / (stamps[-1] - stamps[0]) == 120.0  # what a span from the first said
    assert update_span(stamps[:2], keys[:2]) is None  # one change seen: no rate yet
    assert update_span(stamps[:3], keys[:3]) is None
    span = update_span(stamps, keys)
    assert (span.base, span.end, span.seconds) == (1, 5, 2.0)  # from 1.4 s, which first showed 200
    assert (keys[span.end] - keys[span.base]) / span.seconds == 100.0
    tracker = UpdateTracker()
    for stamp, key in zip(stamps, keys):
        tracker.add(stamp, {"c": key})
    assert tracker.span("c") == (200, 2.0)


def test_a_sporadic_counter_has_no_rate_until_its_second_update_then_its_true_one():
    # MySQL_Monitor_ping_check_OK-like: 3 more every 2 s (1.5/s), read every second from 1.9 s
    # after an update. A span from the first reading said 3.0/s, then 2.0/s.
    stamps = [1.9 + i for i in range(8)]  # 1.9 2.9 ... 8.9
    keys = shown_values(stamps, [0, 2, 4, 6, 8], 3)
    assert keys == [3, 6, 6, 9, 9, 12, 12, 15]
    assert [round((keys[at] - keys[0]) / (stamps[at] - stamps[0]), 6) for at in (1, 3)] == [3.0, 2.0]
    rates = []
    for at in range(1, len(stamps)):
        span = update_span(stamps[:at + 1], keys[:at + 1])
        rates.append(None if span is None else round(rate(keys[span.base], keys[span.end], span.seconds), 6))
    assert rates == [None, None, 1.5, 1.5, 1.5, 1.5, 1.5]


def test_a_span_does_not_cross_a_gap_in_the_readings():
    # 100/s read every second for 10 s, then nothing read for 60 s (the screen was hidden),
    # then read again: 50/s since. The rate is the new traffic's, not averaged over the gap.
    stamps = [float(i) for i in range(11)] + [70.0 + i for i in range(4)]
    keys = [100 * i for i in range(11)] + [5000 + 50 * i for i in range(4)]
    assert update_span(stamps[:12], keys[:12]) is None  # the first reading after the gap starts nothing
    assert update_span(stamps[:13], keys[:13]) is None
    span = update_span(stamps, keys)
    assert (span.base, span.end, span.seconds) == (12, 14, 2.0)
    assert (keys[span.end] - keys[span.base]) / span.seconds == 50.0
    tracker = UpdateTracker()
    for stamp, key in zip(stamps, keys):
        tracker.add(stamp, {"c": key})
    assert tracker.span("c") == (keys[12], 2.0)
    # Values that stood still across the gap and since: no traffic, once that has lasted 2 s.
    idle = stamps[:11] + [70.0, 71.0, 72.5]
    span = update_span(idle, [0] * len(idle))
    assert (span.base, span.seconds) == (11, 0.5)
