"""Per-second rates from cumulative counters.

Every rate in proxytop comes from :func:`rate` so that counter resets (a ProxySQL restart,
somebody reading a ``*_reset`` table, a query-rule reload, a 32-bit wrap) are handled in one
place: a negative delta means the counter started again, and that interval has no rate.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any, Callable, Iterable, List, Mapping, Optional, Sequence, Tuple


def to_number(value: Any) -> Optional[float]:
    """ProxySQL sends every value as text; turn it into a number, or None when it isn't one.

    >>> to_number("42"), to_number("1.5"), to_number(None), to_number("true")
    (42, 1.5, None, None)
    """
    kind = value.__class__
    if kind is str:  # the usual case first (called for every cell that is sorted or rated)
        if value[:1] in _NOT_A_NUMBER_START:  # "ONLINE", a user name: no exceptions raised to learn it
            return None
        try:
            return int(value)  # int() and float() skip surrounding whitespace themselves
        except ValueError:
            return _float(value)
    if kind is int or kind is float:
        return value
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        return _float(text)


# A text starting with one of these is no number to_number gives: int() and float() refuse it,
# but for inf, infinity and nan, which to_number refuses too ("" is in it: empty is no number).
_NOT_A_NUMBER_START = frozenset(
    [""] + [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ:/@#(),;'\"[]{}<>|*"])


def whole_numbers(values: Sequence[Any]) -> Optional[List[int]]:
    """The int of each value when every one is a text of a whole number (what ProxySQL sends
    for an id or a count), made in one pass in C; None otherwise (to_number each). The same
    numbers as to_number, which reads with int() every text int() reads: thousands of query
    rules are read every second.

    >>> whole_numbers(["12", "0", "007"]), whole_numbers(["12", None]), whole_numbers(["1.5"])
    ([12, 0, 7], None, None)
    """
    if not set(map(type, values)) <= _TEXT:
        return None
    try:
        return list(map(int, values))
    except ValueError:  # "1.5", "x", "": to_number each
        return None


_TEXT = frozenset((str,))


def to_numbers(values: Sequence[Any]) -> List[Any]:
    """to_number of each value: in one pass in C when all are texts of whole numbers.

    >>> to_numbers(["12", "7"]), to_numbers(["12", None, "1.5", "x"])
    ([12, 7], [12, None, 1.5, None])
    """
    numbers = whole_numbers(values)
    return numbers if numbers is not None else list(map(to_number, values))


def counter_total(values: Sequence[Any]) -> Any:
    """The sum of the counters ``values`` (one that is not a number counts 0): what tells two
    readings of a table of counters apart (SteadyPair's key).

    >>> counter_total(["10", "2"]), counter_total(["10", None, "2.5"])
    (12, 12.5)
    """
    return sum(filter(None, to_numbers(values)))


def _float(text: str) -> Optional[float]:
    try:
        number = float(text)
    except ValueError:
        return None
    if number != number or number in (float("inf"), float("-inf")):
        return None
    return number


def rate(previous: Any, current: Any, seconds: Optional[float]) -> Optional[float]:
    """Δvalue / Δt, or None when there is no honest rate for the interval.

    None when either sample is missing or not a number, when no time passed, and when the
    counter went down (restart, stats reset, 32-bit wrap): never a negative or huge rate.

    >>> rate(100, 250, 1.5)
    100.0
    >>> rate(None, 5, 1.0) is None, rate(10, 3, 1.0) is None, rate(1, 2, 0) is None
    (True, True, True)
    """
    before = to_number(previous)
    after = to_number(current)
    if before is None or after is None or not seconds or seconds <= 0:
        return None
    delta = after - before
    if delta < 0:
        return None
    return delta / seconds


def delta(previous: Any, current: Any) -> Optional[float]:
    """Counter increase between two samples; None for a reset or a missing sample."""
    before = to_number(previous)
    after = to_number(current)
    if before is None or after is None:
        return None
    difference = after - before
    return None if difference < 0 else difference


def row_rates(
    previous: Optional[Mapping[str, Any]],
    current: Mapping[str, Any],
    fields: Iterable[str],
    seconds: Optional[float],
) -> dict:
    """Rates for several counters of one row: {field: rate or None}."""
    if previous is None:
        return {name: None for name in fields}
    return {name: rate(previous.get(name), current.get(name), seconds) for name in fields}


# ----- rates over whole counter updates -----------------------------------------------------
# ProxySQL's worker threads add their share of stats_mysql_commands_counters and of the query
# rules' hits to the global figures in their maintenance loop, about once a second
# (Query_Processor::update_query_processor_stats). A reading therefore shows the counters as of
# the last such update, not as of the query: two readings one second apart cover zero, one or
# two updates, and a plain Δvalue/Δt swung between 0 and 2x the real rate. The rates below
# start and end at readings that first showed new values, and span whole updates over at
# least RATE_WINDOW seconds: an update comes at most about a second late into a reading, so
# one update more or less moves a rate by at most 1/20 of it. proxytop's first reading (and the
# first after a gap) is no such start: its values may have stood for a second already, and a
# span from it counted the updates before it in too short a time (up to 2x in the first 20 s).

RATE_WINDOW = 20.0  # seconds a steady rate spans at the least: an update (<= ~1 s) more or less is <= 5%
COUNTER_REFRESH = 2.0  # values unchanged for longer than this mean no traffic (not a late update)
GAP_STEPS = 3  # a step between readings longer than this many usual ones is a gap (a hidden screen)
GAP_BASIS = 20  # the usual step: the median of the (at most) this many steps before


def is_gap(step: float, before: Sequence[float], refresh: float = COUNTER_REFRESH) -> bool:
    """Whether ``step`` seconds between two readings is a gap in them (the screen was hidden, its
    collectors did not poll), given the steps ``before`` it, latest last: a span of counter
    updates does not cross one, the rates start again after it.

    >>> is_gap(9.0, [1.0, 1.1, 0.9]), is_gap(2.5, [1.0, 1.0]), is_gap(9.0, [5.0, 5.0]), is_gap(9.0, [])
    (True, False, False, False)
    """
    return bool(before) and step > max(refresh, GAP_STEPS * median(before[-(GAP_BASIS - 1):]))


def after_gap(stamps: Sequence[float], refresh: float = COUNTER_REFRESH) -> int:
    """The index of the first reading after the last gap in ``stamps`` (0 when there is none).

    >>> after_gap([0.0, 1.0, 2.0, 30.0, 31.0]), after_gap([0.0, 1.0, 2.0])
    (3, 0)
    """
    steps = [later - earlier for earlier, later in zip(stamps, stamps[1:])]
    start = 0
    for at, step in enumerate(steps):
        if is_gap(step, steps[max(0, at - GAP_BASIS + 1):at], refresh):
            start = at + 1
    return start


@dataclass(frozen=True)
class Span:
    """Which readings a rate is taken between: ``base`` and ``end`` index the readings (the
    end shows the latest values), ``seconds`` is the time the counters' difference covers."""

    base: int
    end: int
    seconds: float


def update_span(stamps: Sequence[float], keys: Sequence[Any], window: float = RATE_WINDOW,
                refresh: float = COUNTER_REFRESH) -> Optional[Span]:
    """The readings a rate over whole counter updates spans, or None when there is none yet.

    ``stamps`` are the readings' times (oldest first, when each query started: that is when
    ProxySQL takes its snapshot), ``keys`` anything equal between two readings exactly when no
    counter moved between them. The rate runs from a reading that first showed its values (one
    that differs from the reading before it: never the first reading, nor the first after a gap
    in the readings, whose values may have stood for a while already) to the one that first
    showed the latest values, over at least ``window`` seconds when the readings reach that far
    back; until two such readings exist there is no rate. A reading identical to the one before
    is not an interval without traffic: only once the values have stood still for longer than
    ``refresh`` does the span stretch towards the latest reading (the traffic has stopped), and
    values that never moved in the readings are a rate of 0 once they have stood that long.
    A standstill before the window's start is left out when the window is full without it and
    the values moved at every update since: the rate is the traffic's since it began, not
    diluted by the idle seconds before. A counter that moves only now and then (standstills
    within the window too) keeps its spans from one change to another: a span starting just
    before a rare update would count it more than its share.

    Readings at 0, 1, 2, 3, 4 s, of which the one at 3 s repeats the one at 2 s (the update fell
    just after it): the rate spans 2 s -> 4 s, not 3 s -> 4 s.

    >>> update_span([0.0, 1.0, 2.0, 3.0, 4.0], [5, 10, 20, 20, 40], window=1.5)
    Span(base=2, end=4, seconds=2.0)
    >>> update_span([0.0, 1.0, 2.0, 3.0, 4.0], [5, 10, 20, 20, 40], window=10.0)  # from the first change
    Span(base=1, end=4, seconds=3.0)
    >>> update_span([0.0, 1.0, 2.0, 3.0], [5, 10, 20, 20], window=0.5)  # the latest reading adds nothing
    Span(base=1, end=3, seconds=1.0)
    >>> update_span([0.0, 1.0, 2.0, 4.5], [5, 10, 20, 20], window=0.5)  # no update for 2.5 s: traffic stopped
    Span(base=1, end=3, seconds=1.5)
    >>> update_span([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [0, 0, 0, 0, 10, 20], window=1.5)  # traffic from 3 s
    Span(base=3, end=5, seconds=2.0)
    >>> update_span([0.0, 1.0, 2.0, 3.0], [0, 0, 0, 0])  # no traffic for 3 s
    Span(base=0, end=3, seconds=1.0)
    >>> update_span([0.0, 1.0], [10, 20]) is None, update_span([0.0, 1.0, 2.0], [10, 20, 20]) is None
    (True, True)
    >>> update_span([0.0, 1.0, 2.0, 5.0], [10, 20, 20, 20])  # one change, then still for 4 s: 0/s
    Span(base=1, end=3, seconds=2.0)
    """
    latest = len(stamps) - 1
    start = after_gap(stamps, refresh)  # no span reaches back across a gap
    if latest - start < 1:
        return None
    first = latest  # the reading that first showed the latest values
    while first > start and keys[first - 1] == keys[first]:
        first -= 1
    end_time = max(stamps[first], stamps[latest] - refresh)
    if first == start:  # no update in the readings kept: no traffic, once that has lasted long enough
        seconds = end_time - stamps[start]
        return Span(start, latest, seconds) if seconds > 0 else None
    base = first - 1
    steady_since = True  # no standstill between ``base`` and the latest reading
    while True:  # back to the reading that first showed the values of ``base``
        run_end = base
        while base > start and keys[base - 1] == keys[base]:
            base -= 1
        standstill = stamps[run_end] - stamps[base] > refresh
        if standstill and steady_since and end_time - stamps[run_end] >= window:
            base = run_end  # the window is full without the standstill: the traffic began after it
            break
        if base == start:  # values that may have stood before the first reading: start after them
            base = run_end + 1
            break
        if end_time - stamps[base] >= window:
            break
        steady_since = steady_since and not standstill
        base -= 1
    if base >= first:  # one change seen: a rate of 0 once the values have stood still long enough
        base = first
    seconds = end_time - stamps[base]
    return Span(base, latest, seconds) if seconds > 0 else None


class SteadyPair:
    """(base, latest, seconds) of a collector's readings for rates over whole updates.

    ``key(data)`` tells readings apart (e.g. the sum of a table's counters); it is computed
    once per reading, not on every redraw.
    """

    def __init__(self, key: Callable[[Any], Any], window: float = RATE_WINDOW):
        self._key = key
        self.window = window
        # The last answer and the readings it was for (their number, when the first and the
        # last were taken): a screen asks for its rows and its notes line, for each frame, of
        # the same readings.
        self._answered: Optional[Tuple[Tuple, Any]] = None

    def __call__(self, history: Sequence) -> Tuple[Optional[Any], Optional[Any], Optional[float]]:
        if not history:
            return None, None, None
        readings = (len(history), history[0].taken_at, history[-1].taken_at)
        if self._answered is None or self._answered[0] != readings:
            self._answered = (readings, self._span_of(history))
        return self._answered[1]

    def _span_of(self, history: Sequence) -> Tuple[Optional[Any], Optional[Any], Optional[float]]:
        keys = [self._key(snapshot.data) if snapshot.data is not None else None for snapshot in history]
        span = update_span([s.taken_at for s in history], keys, self.window)
        if span is None:
            return None, history[-1], None
        return history[span.base], history[span.end], span.seconds


NO_RATE_YET = "no rates yet: they start at the second counter update proxytop sees"
RATES_PENDING = "have no rate yet"  # some counters moved once, and start at their second update


class UpdateTracker:
    """:func:`update_span` for many counters of one reading at a time (GloStat's hundred
    variables), kept up to date one reading at a time instead of walking every counter back
    through the readings on each one: per counter, the times its value changed.

    >>> tracker = UpdateTracker(window=1.5)
    >>> for stamp, values in enumerate(({"a": 1, "b": 5}, {"a": 2, "b": 5}, {"a": 3, "b": 7}, {"a": 4, "b": 7})):
    ...     tracker.add(float(stamp), values)
    >>> tracker.span("a"), tracker.span("b")  # (value at the start, seconds); b has one change only
    ((2, 2.0), None)
    >>> idle = UpdateTracker(window=1.5)  # no traffic until after 3 s: the rate is the traffic's since
    >>> for stamp, value in enumerate((0, 0, 0, 0, 10, 20)):
    ...     idle.add(float(stamp), {"a": value})
    >>> idle.span("a")
    (0, 2.0)
    """

    def __init__(self, window: float = RATE_WINDOW, refresh: float = COUNTER_REFRESH):
        self.window, self.refresh = window, refresh
        self.first_stamp: Optional[float] = None  # of the first reading (after the last gap)
        self.last_stamp: Optional[float] = None
        self._steps: List[float] = []  # the last steps between readings: what a gap is longer than
        self._latest: dict = {}  # name -> latest value
        # name -> [(stamp first showing a value, that value, stamp of the reading before)], oldest
        # first; the first entry is the first reading's (after a gap), which is no start of a span
        self._changes: dict = {}

    def add(self, stamp: float, values: Mapping[str, Any]) -> None:
        """The next reading (``stamp`` after the previous one's)."""
        previous, self.last_stamp = self.last_stamp, stamp
        if previous is not None:
            step = stamp - previous
            if is_gap(step, self._steps, self.refresh):  # the screen was hidden: start again
                self.first_stamp, self._latest, self._changes = None, {}, {}
            self._steps = self._steps[-(GAP_BASIS - 2):] + [step]
        if self.first_stamp is None:
            self.first_stamp = stamp
        keep_after = stamp - self.window - 2 * self.refresh - 60.0  # older change points can't be a base
        for name, value in values.items():
            changes = self._changes.get(name)
            if changes is None:
                self._changes[name] = [(stamp, value, stamp)]
            elif self._latest[name] != value:
                changes.append((stamp, value, previous))
                if len(changes) > 2 and changes[1][0] < keep_after:
                    del changes[0]
            self._latest[name] = value

    def moved(self, name: str) -> bool:
        """Whether the counter changed since the first reading (after the last gap): a rate of
        its updates, not a 0 over the time proxytop has watched it.

        >>> tracker = UpdateTracker()
        >>> for stamp, value in enumerate((1, 2)):
        ...     tracker.add(float(stamp), {"a": value, "b": 5})
        >>> tracker.moved("a"), tracker.moved("b")
        (True, False)
        """
        return len(self._changes.get(name, ())) > 1

    def pending(self) -> int:
        """How many counters moved since the first reading but have no span yet.

        >>> tracker = UpdateTracker()
        >>> for stamp, value in enumerate((1, 2)):
        ...     tracker.add(float(stamp), {"a": value, "b": 5})
        >>> tracker.pending()
        1
        """
        return sum(1 for name, changes in self._changes.items() if len(changes) > 1 and self.span(name) is None)

    def span(self, name: str) -> Optional[Tuple[Any, float]]:
        """(the counter's value where its rate starts, seconds), as update_span finds them."""
        changes = self._changes.get(name)
        if not changes or self.last_stamp is None:
            return None
        first_seen = changes[-1][0]
        end_time = max(first_seen, self.last_stamp - self.refresh)
        if len(changes) == 1:  # no update seen: no traffic, once that has lasted long enough
            seconds = end_time - changes[0][0]
            return (changes[0][1], seconds) if seconds > 0 else None
        steady_since = True  # no standstill between the change point and the latest reading
        for at in range(len(changes) - 2, -1, -1):  # the newest change point far enough back
            stamp, value, _ = changes[at]
            run_end = changes[at + 1][2]  # the last reading that showed this value
            standstill = run_end - stamp > self.refresh
            if standstill and steady_since and end_time - run_end >= self.window:
                base_value, base_stamp = value, run_end  # the traffic began after the standstill
                break
            if at == 0:  # the first reading's values may have stood before it: start after them
                base_value, base_stamp = changes[1][1], changes[1][0]  # (one change seen: 0 once still)
                break
            if end_time - stamp >= self.window:
                base_value, base_stamp = value, stamp
                break
            steady_since = steady_since and not standstill
        seconds = end_time - base_stamp
        return (base_value, seconds) if seconds > 0 else None
