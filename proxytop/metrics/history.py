"""Figures over time, kept in memory for the graphs: the last hour as it was read, then
minute averages for a day, then ten-minute averages for a week. Pure data structures.

Times are wall-clock seconds (a figure's graph may be seamed to ProxySQL's own history,
which is stamped in unix seconds). A value of None (no rate for that interval: a first
reading, a counter reset) is kept as a gap and left out of averages.

Averaging is exact: a minute's average is the mean of the values read in that wall-clock
minute (``[12:03:00, 12:04:00)``), and its point is drawn at the minute's middle. Points move
to a coarser tier only once their whole bucket is past the finer tier's span, so a bucket is
never averaged twice.
"""
from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from typing import Hashable, Iterable, List, Optional, Tuple

Point = Tuple[float, float]

RAW_SECONDS = 3600  # the last hour at the reading's own pace
MINUTE_SECONDS = 24 * 3600  # then a day of minute averages
KEPT_SECONDS = 7 * 24 * 3600  # then ten-minute averages, up to a week in all
TIERS = ((60, MINUTE_SECONDS), (600, KEPT_SECONDS))  # (bucket seconds, span kept) after the raw hour


class Tier:
    """Averages of fixed buckets: each bucket's start, sum and count (of values that were not gaps)."""

    __slots__ = ("width", "starts", "sums", "counts")

    def __init__(self, width: int):
        self.width = width
        self.starts, self.sums, self.counts = array("d"), array("d"), array("d")

    def add(self, t: float, value: float) -> None:
        start = math.floor(t / self.width) * self.width
        if not self.starts or self.starts[-1] != start:
            self.starts.append(start)
            self.sums.append(0.0)
            self.counts.append(0.0)
        if not math.isnan(value):
            self.sums[-1] += value
            self.counts[-1] += 1

    def add_bucket(self, start: float, total: float, count: float) -> None:
        """A finer tier's bucket, added to this one's (its sum and count, so the mean stays exact)."""
        bucket = math.floor(start / self.width) * self.width
        if not self.starts or self.starts[-1] != bucket:
            self.starts.append(bucket)
            self.sums.append(0.0)
            self.counts.append(0.0)
        self.sums[-1] += total
        self.counts[-1] += count

    def take_before(self, cutoff: float) -> List[Tuple[float, float, float]]:
        """Remove and return the buckets that start before ``cutoff``."""
        n = 0
        while n < len(self.starts) and self.starts[n] < cutoff:
            n += 1
        taken = list(zip(self.starts[:n], self.sums[:n], self.counts[:n]))
        del self.starts[:n], self.sums[:n], self.counts[:n]
        return taken

    def points(self, start: float = -math.inf, end: float = math.inf) -> Iterable[Point]:
        """Each bucket's mean at its middle, for the buckets whose middle is in [start, end]."""
        half = self.width / 2
        first, last = bisect_left(self.starts, start - half), bisect_right(self.starts, end - half)
        for begin, total, count in zip(self.starts[first:last], self.sums[first:last], self.counts[first:last]):
            yield begin + half, (total / count if count else math.nan)

    def __len__(self) -> int:
        return len(self.starts)


class Series:
    """One figure over time."""

    __slots__ = ("times", "values", "tiers", "updated")

    def __init__(self):
        self.times, self.values = array("d"), array("d")
        self.tiers = [Tier(width) for width, _span in TIERS]
        self.updated = 0.0

    def add(self, t: float, value: Optional[float]) -> None:
        """A reading at wall time ``t``. A second value for the same time replaces the first
        (the rows were made again for a new sort, not a new reading); an older time is ignored.
        An infinite value (a latency past ComCount's last bucket) is kept as a gap: it has no
        place on a value axis."""
        number = math.nan if value is None else float(value)
        if math.isinf(number):
            number = math.nan
        if self.times and t <= self.times[-1]:
            if t == self.times[-1]:
                self.values[-1] = number
            return
        self.times.append(t)
        self.values.append(number)
        self.updated = t
        if t - self.times[0] > RAW_SECONDS + 60:  # at most once a minute: move the oldest down a tier
            self._age(t)

    def _age(self, now: float) -> None:
        minute, ten = self.tiers
        cutoff = math.floor((now - RAW_SECONDS) / minute.width) * minute.width
        n = 0
        while n < len(self.times) and self.times[n] < cutoff:
            minute.add(self.times[n], self.values[n])
            n += 1
        del self.times[:n], self.values[:n]
        cutoff = math.floor((now - RAW_SECONDS - MINUTE_SECONDS) / ten.width) * ten.width
        for start, total, count in minute.take_before(cutoff):
            ten.add_bucket(start, total, count)
        ten.take_before(now - RAW_SECONDS - KEPT_SECONDS)

    def points(self, start: float = -math.inf, end: float = math.inf) -> List[Point]:
        """The points between two wall times, oldest first: averages, then the raw hour."""
        out: List[Point] = []
        for tier in reversed(self.tiers):
            out += tier.points(start, end)
        first, last = bisect_left(self.times, start), bisect_right(self.times, end)
        out += zip(self.times[first:last], self.values[first:last])
        return out

    def first_time(self) -> Optional[float]:
        for tier in reversed(self.tiers):
            if len(tier):
                return tier.starts[0]
        return self.times[0] if self.times else None

    def size(self) -> int:
        return len(self.times) + sum(len(tier) for tier in self.tiers)


class FigureHistory:
    """Every figure a graph can show, by key (e.g. ``("connpool", row id, "queries_rate")``).

    Bounded: at most ``max_series`` figures; the one updated longest ago goes first (a digest
    that left the screen's top rows, a session that ended).
    """

    def __init__(self, max_series: int = 20000):
        self.max_series = max_series
        # least recently added to first: a full history drops its first figure in one step
        # (searching 20,000 figures for the stalest took 1.5 ms for each new one)
        self.series: "OrderedDict[Hashable, Series]" = OrderedDict()

    def add(self, key: Hashable, t: float, value: Optional[float]) -> None:
        series = self.series.get(key)
        if series is None:
            if len(self.series) >= self.max_series:
                self.series.popitem(last=False)
            series = self.series[key] = Series()
        else:
            self.series.move_to_end(key)
        series.add(t, value)

    def points(self, key: Hashable, start: float = -math.inf, end: float = math.inf) -> List[Point]:
        series = self.series.get(key)
        return series.points(start, end) if series is not None else []

    def take_from(self, other: "FigureHistory") -> None:
        """Every figure of ``other`` in place of this one's (a replay's scan of its whole
        recording replaces what its playing had kept)."""
        self.series.update(other.series)
        while len(self.series) > self.max_series:
            self.series.popitem(last=False)

    def first_time(self) -> Optional[float]:
        times = [t for t in (s.first_time() for s in self.series.values()) if t is not None]
        return min(times, default=None)

    def __contains__(self, key: Hashable) -> bool:
        return key in self.series

    def size(self) -> int:
        """Points kept in all."""
        return sum(series.size() for series in self.series.values())
