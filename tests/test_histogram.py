"""Latency percentiles from ProxySQL's exclusive buckets, and sparklines: worked numbers."""
from __future__ import annotations

import doctest
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxytop.metrics import histogram, units
from proxytop.metrics.histogram import INF, bucket_counts, bucket_delta, percentile, percentile_bucket
from proxytop.screens import sparkline

# 1,000 executions: 600 ≤100µs, 300 in (100µs, 500µs], 60 in (500µs, 1ms], 30 in (1ms, 5ms],
# 9 in (5ms, 10ms], 1 over 10 s.
THOUSAND = (600, 300, 60, 30, 9, 0, 0, 0, 0, 0, 0, 1)


@pytest.mark.parametrize("module", [histogram, sparkline])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("fraction, expected_us", [
    (0.50, 100),        # rank 500: inside the first 600
    (0.60, 100),        # rank 600: exactly the last execution of the first bucket
    (0.601, 500),       # rank 601: the first of the second bucket
    (0.90, 500),        # rank 900: the last of the second bucket (600 + 300)
    (0.95, 1_000),      # rank 950: cumulative 960 after the third bucket
    (0.99, 5_000),      # rank 990: cumulative 990 after the fourth bucket
    (0.999, 10_000),    # rank 999: cumulative 999 after the fifth bucket
    (1.0, INF),         # the slowest execution took more than 10 s
])
def test_percentile_is_the_upper_bound_of_the_bucket_holding_the_rank(fraction, expected_us):
    assert percentile(THOUSAND, fraction) == expected_us


def test_percentile_of_100_executions_does_not_suffer_from_binary_fractions():
    # 0.95 * 100 is 95.00000000000001 in floating point: the rank must still be 95, not 96.
    counts = (95, 5) + (0,) * 10
    assert percentile_bucket(counts, 0.95) == 0
    assert percentile(counts, 0.95) == 100
    assert percentile(counts, 0.96) == 500


def test_percentile_without_executions_is_unknown():
    assert percentile((0,) * 12, 0.5) is None
    assert percentile(None, 0.5) is None
    assert histogram.percentiles(None) == (None, None, None)


def test_single_execution_sets_every_percentile():
    counts = [0] * 12
    counts[7] = 1  # one execution between 100 ms and 500 ms
    assert histogram.percentiles(tuple(counts)) == (500_000, 500_000, 500_000)


def test_bucket_counts_read_by_column_name_in_any_order():
    row = {name: str(i) for i, name in enumerate(reversed(histogram.BUCKET_COLUMNS))}
    counts = bucket_counts(row)
    assert counts == tuple(range(11, -1, -1))
    assert bucket_counts({**row, "cnt_5ms": None}) is None
    assert bucket_counts({**row, "cnt_5ms": "x"}) is None


def test_interval_histogram_is_the_difference_and_a_reset_gives_none():
    before = (10, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    after = (25, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    assert bucket_delta(before, after) == (15, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    # ProxySQL restarted: counters back near zero -> no interval histogram, never negatives
    assert bucket_delta(after, (1,) + (0,) * 11) is None
    assert bucket_delta(None, after) is None
    assert bucket_delta(before[:3], after) is None


def test_average_over_the_interval():
    # 300 executions took 90,000 µs in total during the interval: 300 µs each on average
    assert histogram.average_us(1_000_000, 1_090_000, 4_000, 4_300) == 300.0
    assert histogram.average_us(1_000_000, 1_000_000, 4_000, 4_000) is None  # nothing ran
    assert histogram.average_us(1_000_000, 500, 4_000, 3) is None  # reset
    assert histogram.average_us(None, 5, 1, 2) is None


def test_cumulative_percent():
    shares = histogram.cumulative_percent(THOUSAND)
    assert shares[0] == 60.0 and shares[1] == 90.0 and shares[3] == 99.0
    assert math.isclose(shares[10], 99.9) and shares[11] == 100.0
    assert histogram.cumulative_percent((0, 0)) == [None, None]


def test_labels_and_formats():
    assert [histogram.bucket_label(i) for i in range(12)] == [
        "\u2264100\u00b5s", "\u2264500\u00b5s", "\u22641ms", "\u22645ms", "\u226410ms", "\u226450ms",
        "\u2264100ms", "\u2264500ms", "\u22641s", "\u22645s", "\u226410s", ">10s"]
    assert histogram.format_bound(1_000_000) == "\u22641s"
    assert histogram.format_bound(INF) == ">10s"
    assert units.microseconds(999) == "999\u00b5s"
    assert units.microseconds(150_000) == "150ms"
    # a measured latency and a bucket bound read alike
    assert units.microseconds(1_000) == histogram.bucket_label(2)[1:] == "1ms"
    assert histogram.bucket_range(3) == "1ms\u20135ms"


def test_sparkline_scales_to_the_largest_value_and_keeps_gaps():
    assert sparkline.sparkline([0, 7, 14, 28, 56]) == "\u2581\u2582\u2583\u2585\u2588"
    assert sparkline.sparkline([5, None, 5]) == "\u2588 \u2588"  # a reset leaves a gap
    assert sparkline.sparkline([1] * 100, width=10) == "\u2588" * 10
    assert sparkline.sparkline([3, 2, 1], width=0) == ""


# The fast paths ComCount takes every second give what the plain functions give.
_bucket_value = st.one_of(
    st.integers(min_value=0, max_value=10**15).map(str),
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from([None, "", "x", "1.5", " 7 ", "1e3", "-0", b"12", 2.0]),
)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_bucket_value, min_size=12, max_size=12), order=st.permutations(range(13)))
def test_counts_read_from_tuples_are_bucket_counts(values, order):
    names = ("Command",) + histogram.BUCKET_COLUMNS
    columns = tuple(names[i] for i in order)  # any column order, as versions differ
    by_name = dict(zip(histogram.BUCKET_COLUMNS, values), Command="SELECT")
    row = tuple(by_name[name] for name in columns)
    assert histogram.counts_reader(columns)(row) == bucket_counts(by_name)


@settings(max_examples=300, deadline=None)
@given(counts=st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=12),
       fractions=st.lists(st.floats(min_value=0.001, max_value=1.0), min_size=1, max_size=4))
def test_percentiles_are_each_fractions_percentile(counts, fractions):
    assert histogram.percentiles(tuple(counts), fractions) == tuple(percentile(tuple(counts), f) for f in fractions)
