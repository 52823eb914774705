"""Latency percentiles from ProxySQL's command-counter buckets. Pure functions.

stats_mysql_commands_counters counts each command in twelve *exclusive* latency buckets:
``cnt_100us`` holds the executions that took at most 100 µs, ``cnt_500us`` those that took
more than 100 µs and at most 500 µs, and so on up to ``cnt_10s``; ``cnt_INFs`` holds those
slower than 10 s. The buckets add up to ``Total_cnt``.

A percentile estimated from such buckets is only known to lie inside one bucket. proxytop
reports the bucket's *upper bound* ("p95 ≤ 5ms": at least 95 % of the executions took 5 ms or
less); nothing is interpolated. For the open last bucket the estimate is ``inf`` (shown ">10s").
"""
from __future__ import annotations

import math
import operator
from bisect import bisect_left
from itertools import accumulate
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

from proxytop.metrics import units
from proxytop.metrics.rates import to_number

INF = float("inf")

# (column name, upper bound in microseconds), fastest first.
BUCKETS: Tuple[Tuple[str, float], ...] = (
    ("cnt_100us", 100),
    ("cnt_500us", 500),
    ("cnt_1ms", 1_000),
    ("cnt_5ms", 5_000),
    ("cnt_10ms", 10_000),
    ("cnt_50ms", 50_000),
    ("cnt_100ms", 100_000),
    ("cnt_500ms", 500_000),
    ("cnt_1s", 1_000_000),
    ("cnt_5s", 5_000_000),
    ("cnt_10s", 10_000_000),
    ("cnt_INFs", INF),
)
BUCKET_COLUMNS: Tuple[str, ...] = tuple(name for name, _ in BUCKETS)
UPPER_US: Tuple[float, ...] = tuple(bound for _, bound in BUCKETS)

Counts = Tuple[int, ...]


def bucket_counts(row: Mapping[str, Any]) -> Optional[Counts]:
    """The twelve bucket counts of one commands-counters row, or None if any is missing.

    >>> row = {name: "0" for name in BUCKET_COLUMNS}
    >>> row["cnt_1ms"] = "7"
    >>> bucket_counts(row)
    (0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    >>> bucket_counts({"cnt_100us": "1"}) is None
    True
    """
    counts = []
    for name in BUCKET_COLUMNS:
        value = to_number(row.get(name))
        if value is None:
            return None
        counts.append(int(value))
    return tuple(counts)


def counts_reader(columns: Sequence[str]) -> Callable[[Sequence[Any]], Optional[Counts]]:
    """:func:`bucket_counts` for rows given as tuples in the order of ``columns`` (a
    commands-counters result as read): ComCount reads some fifty commands every second, and
    the buckets' texts turned into numbers one by one were most of what it cost. The same
    numbers as bucket_counts, or None, in every case.

    >>> columns = ("Command",) + BUCKET_COLUMNS
    >>> read = counts_reader(columns)
    >>> read(("SELECT",) + ("0",) * 11 + ("3",)), read(("SELECT",) + ("0",) * 11 + (None,))
    ((0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3), None)
    >>> counts_reader(("Command", "cnt_100us"))(("SELECT", "1")) is None  # a table without the buckets
    True
    """
    if any(name not in columns for name in BUCKET_COLUMNS):
        return lambda row: None
    take = operator.itemgetter(*(columns.index(name) for name in BUCKET_COLUMNS))

    def counts(row: Sequence[Any]) -> Optional[Counts]:
        values = take(row)
        try:
            # bucket_counts takes int() of each number too: a text int() reads gives the same
            return tuple(map(int, values))
        except (TypeError, ValueError):  # NULL, "x", "1e3": as bucket_counts reads them
            return bucket_counts(dict(zip(BUCKET_COLUMNS, values)))
    return counts


def bucket_delta(before: Optional[Counts], after: Optional[Counts]) -> Optional[Counts]:
    """Executions per bucket between two readings; None when a bucket went down (a reset:
    ProxySQL restarted or the counters were reset), so the interval has no histogram.

    >>> bucket_delta((1, 2, 3), (4, 2, 5))
    (3, 0, 2)
    >>> bucket_delta((5, 2, 3), (1, 2, 3)) is None
    True
    """
    if before is None or after is None or len(before) != len(after):
        return None
    delta = tuple(map(operator.sub, after, before))
    if delta and min(delta) < 0:
        return None
    return delta


def percentile_bucket(counts: Optional[Sequence[int]], fraction: float) -> Optional[int]:
    """Index of the bucket holding the ``fraction`` quantile (0 < fraction <= 1): the first
    bucket whose cumulative count reaches ``ceil(fraction * total)``. None without executions.

    >>> percentile_bucket((5, 3, 2), 0.5), percentile_bucket((5, 3, 2), 0.51), percentile_bucket((5, 3, 2), 1.0)
    (0, 1, 2)
    >>> percentile_bucket((0, 0, 0), 0.5) is None
    True
    """
    if not counts:
        return None
    total = sum(counts)
    if total <= 0:
        return None
    rank = _rank(fraction, total)
    running = 0
    for index, count in enumerate(counts):
        running += count
        if running >= rank:
            return index
    return len(counts) - 1


def _rank(fraction: float, total: int) -> int:
    """The rank (1-based) of the ``fraction`` quantile among ``total`` executions."""
    # round() first: 0.95 * 100 is 95.00000000000001 in binary floating point.
    return max(1, math.ceil(round(fraction * total, 9)))


def percentile(counts: Optional[Sequence[int]], fraction: float) -> Optional[float]:
    """Upper bound in µs of the bucket holding the quantile (``inf`` for the >10 s bucket).

    100 executions: 50 ≤100µs, 40 in (100µs, 500µs], 9 in (500µs, 1ms], 1 in (1ms, 5ms]:
    >>> counts = (50, 40, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0)
    >>> percentile(counts, 0.50), percentile(counts, 0.95), percentile(counts, 0.99), percentile(counts, 1.0)
    (100, 1000, 1000, 5000)
    """
    index = percentile_bucket(counts, fraction)
    return None if index is None else UPPER_US[index]


def percentiles(counts: Optional[Sequence[int]], fractions: Sequence[float] = (0.5, 0.95, 0.99)) -> Tuple[Optional[float], ...]:
    """:func:`percentile` of each fraction, the counts added up once for all of them.

    >>> percentiles((50, 40, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0), (0.5, 0.95, 0.99, 1.0))
    (100, 1000, 1000, 5000)
    """
    if not counts:
        return (None,) * len(fractions)
    running = list(accumulate(counts))
    total = running[-1]
    if total <= 0:
        return (None,) * len(fractions)
    last = len(running) - 1
    # The first bucket whose running count reaches the rank (as percentile_bucket walks to it).
    return tuple(UPPER_US[min(last, bisect_left(running, _rank(f, total)))] for f in fractions)


def cumulative_percent(counts: Sequence[int]) -> List[Optional[float]]:
    """Share of all executions at or below each bucket, in percent (None without executions).

    >>> cumulative_percent((1, 2, 1))
    [25.0, 75.0, 100.0]
    """
    total = sum(counts)
    if total <= 0:
        return [None for _ in counts]
    shares, running = [], 0
    for count in counts:
        running += count
        shares.append(100.0 * running / total)
    return shares


def average_us(time_before: Any, time_after: Any, count_before: Any, count_after: Any) -> Optional[float]:
    """Average latency over an interval: ΔTotal_Time_us / ΔTotal_cnt (None: no executions or a reset).

    >>> average_us(1_000, 31_000, 10, 40)
    1000.0
    >>> average_us(1_000, 1_000, 10, 10) is None, average_us(9_000, 100, 10, 12) is None
    (True, True)
    """
    t0, t1, c0, c1 = to_number(time_before), to_number(time_after), to_number(count_before), to_number(count_after)
    if None in (t0, t1, c0, c1):
        return None
    executions, spent = c1 - c0, t1 - t0
    if executions <= 0 or spent < 0:
        return None
    return spent / executions


def bucket_label(index: int) -> str:
    """'≤100µs' … '≤10s', and '>10s' for the last bucket.

    >>> bucket_label(0), bucket_label(2), bucket_label(8), bucket_label(11)
    ('≤100µs', '≤1ms', '≤1s', '>10s')
    """
    bound = UPPER_US[index]
    if bound == INF:
        return ">" + short_us(UPPER_US[index - 1])
    return "\u2264" + short_us(bound)


def bucket_range(index: int) -> str:
    """The latency range a bucket covers, for people.

    >>> bucket_range(0), bucket_range(1), bucket_range(11)
    ('0–100µs', '100µs–500µs', 'over 10s')
    """
    if UPPER_US[index] == INF:
        return "over " + short_us(UPPER_US[index - 1])
    low = "0" if index == 0 else short_us(UPPER_US[index - 1])
    return f"{low}\u2013{short_us(UPPER_US[index])}"


def short_us(us: float) -> str:
    """A bucket bound: 100µs, 5ms, 10s (a duration like any other: units.microseconds)."""
    return units.microseconds(us)


def format_bound(value: Any) -> str:
    """A percentile estimate (a bucket's upper bound in µs) as shown in a cell.

    >>> format_bound(500), format_bound(5000), format_bound(float("inf")), format_bound(None)
    ('≤500µs', '≤5ms', '>10s', '—')
    """
    number = to_number(value)
    if number is None:
        return "\u2014"
    if number == INF:
        return ">" + short_us(UPPER_US[-2])
    return "\u2264" + short_us(number)
