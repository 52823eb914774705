"""Query digest metrics: from two readings of the digest table to rows per digest. Pure.

The digest table has one row per (hostgroup, schema, user, client address, digest) with
lifetime counters: count_star, sum_time (µs), sum_rows_affected, sum_rows_sent, min/max_time
(µs), first_seen / last_seen (epoch seconds). Rates come from the difference between two
readings, row by row. A row whose counters went down, whose first_seen changed, or that
disappeared was reset (TRUNCATE, SAVE MYSQL DIGEST TO DISK, a read of the ``_reset`` table,
admin-stats_mysql_query_digest_to_disk): it has no rate for that interval, never a negative or
huge one. A row that appears is new since the previous reading: all its counts are from the
interval.
"""
from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Container, Dict, Iterable, List, Optional, Sequence, Tuple

from proxytop.metrics.rates import to_number

# Groupings the ``b`` key cycles through: (name, the row-key fields that make a group).
GROUPINGS = (
    ("digest", ()),
    ("digest + hostgroup", ("hostgroup",)),
    ("digest + user", ("username",)),
    ("digest + schema", ("schemaname",)),
)
TEXT_IN_TABLE = 2048  # characters of a digest text kept for the one-line table cell
RESET_SHARE = 0.5  # more than this share of the rows reset together: "statistics were reset"
NEW_ROW_SLACK = 1.0  # seconds: a new row's first_seen may precede the previous reading by this
# ProxySQL keeps first_seen on its monotonic clock and converts it to epoch seconds at each read
# (QP_query_digest_stats.cpp: now - monotonic/1e6 + first_seen/1e6, each truncated), so an
# untouched row's first_seen moves by a second now and then; a reset row's moves to its next query.
FIRST_SEEN_JITTER = 1


def first_seen_kept(before: Optional[int], now: Optional[int]) -> bool:
    """The same row, not a reset one: first_seen within ProxySQL's conversion jitter.

    >>> first_seen_kept(1795211586, 1795211587), first_seen_kept(1795211586, 1795211590)
    (True, False)
    """
    if before is None or now is None:  # NULL: the same only when both are
        return before is now
    return -FIRST_SEEN_JITTER <= now - before <= FIRST_SEEN_JITTER


KEY_COLUMNS = ("hostgroup", "schemaname", "username", "client_address", "digest")
COUNTERS = ("count_star", "sum_time", "first_seen", "last_seen", "min_time", "max_time",
            "sum_rows_affected", "sum_rows_sent")
# The fields of the one text column the collector reads from 2.0.6 on, comma-separated; "" for NULL.
PACKED = ("hostgroup", "client_address", "digest") + COUNTERS
PACKED_COLUMN = "key_and_counters"
# Positions in a row's counters.
COUNT, SUM_TIME, FIRST, LAST, MIN, MAX, AFFECTED, SENT = range(8)

RowKey = Tuple[str, str, str, str, str]  # hostgroup, schema, user, client address, digest
Counters = Tuple[Optional[int], ...]  # one row's COUNTERS as numbers; None for NULL or not a number
Delta = Tuple[int, int, Optional[int], Optional[int]]  # count, sum_time, rows affected, rows sent in an interval


@dataclass(frozen=True)
class Reading:
    """One reading of the digest table, parsed as it is read: each row's counters by row key,
    each digest's text. Plain dicts and tuples: a recording holds it as it is."""

    entries: Dict[RowKey, Counters]
    texts: Dict[str, Optional[str]]  # digest -> full digest text (None: NULL or empty)
    wall_time: float
    null_counters: int = 0  # rows whose count_star or sum_time are NULL or not numbers


def _int(value: Any) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        number = to_number(value)
        return int(number) if number is not None else None


def _numbers(values: Sequence[Any]) -> List[Optional[int]]:
    """A column of counters as ints (None for NULL or not a number).

    >>> _numbers(["12", "0"]), _numbers(["7", None, "x", "1.5", "true"])
    ([12, 0], [7, None, None, 1, None])
    """
    try:
        return list(map(int, values))  # the usual column: decimals only
    except (TypeError, ValueError):
        return [_int(v) for v in values]


def parse(columns: Sequence[str], rows: Iterable[Sequence[Any]], wall_time: float,
          schema_column: str = "schemaname") -> Reading:
    """A digest table (its columns and rows of text) as a Reading; a key read twice keeps its
    last row, as a dict does.

    >>> p = parse(("hostgroup", "schemaname", "username", "client_address", "digest", "digest_text",
    ...            "count_star", "first_seen", "last_seen", "sum_time", "min_time", "max_time",
    ...            "sum_rows_affected", "sum_rows_sent"),
    ...           [("10", "sbtest", "sbtest", "", "0x1", "SELECT ?", "4", "100", "160", "2000", "300", "900", "0", "4")],
    ...           wall_time=170.0)
    >>> p.entries[("10", "sbtest", "sbtest", "", "0x1")], p.texts["0x1"]
    ((4, 2000, 100, 160, 300, 900, 0, 4), 'SELECT ?')
    """
    rows = rows if isinstance(rows, (list, tuple)) else list(rows)
    by_name = dict(zip(columns, zip(*rows)))  # each column's values, taken in one pass
    packed = by_name.pop(PACKED_COLUMN, None)
    if packed:  # PACKED's fields, comma-separated (collectors.digest.statement): split in one go
        fields = ",".join(packed).split(",")
        if len(fields) == len(PACKED) * len(packed):
            by_name.update((name, fields[at::len(PACKED)]) for at, name in enumerate(PACKED))
        else:  # not the fields asked for: each row's first ones
            by_name.update(zip(PACKED, zip(*(text.split(",") for text in packed))))
    missing = (None,) * len(rows)

    def column(name: str) -> Sequence[Any]:
        return by_name.get(schema_column if name == "schemaname" else name, missing)

    parts = [column(name) for name in KEY_COLUMNS[:4]]
    # one str per distinct hostgroup, schema, user or address (a few), not one a row; "" for NULL
    parts = [[same.setdefault(v, v) for v in values] for values, same in ((values, {None: ""}) for values in parts)]
    parts.append(["" if v is None else v for v in column("digest")])
    counters = [_numbers(column(name)) for name in COUNTERS]
    entries = dict(zip(zip(*parts), zip(*counters)))
    texts: Dict[str, Optional[str]] = {}
    for digest, text in zip(parts[4], column("digest_text")):
        if digest not in texts:  # the first row of a digest gives its text
            texts[digest] = text or None  # an empty text is no text
    nulls = sum(1 for entry in entries.values() if entry[COUNT] is None or entry[SUM_TIME] is None)
    return Reading(entries, texts, wall_time, nulls)


def row_delta(before: Optional[Counters], now: Counters, previous_wall: Optional[float]) -> Optional[Delta]:
    """The increase of one row's counters; None when the row was reset (or can't be rated).

    >>> row_delta((4, 2000, 100, 160, 300, 900, 0, 4), (6, 2600, 100, 170, 300, 900, 0, 6), 165.0)
    (2, 600, 0, 2)
    >>> row_delta((4, 2000, 100, 160, 300, 900, 0, 4), (1, 50, 168, 168, 50, 50, 0, 1), 165.0) is None  # counters down
    True
    >>> row_delta((4, 2000, 100, 160, 300, 900, 0, 4), (9, 9000, 150, 170, 50, 900, 0, 9), 165.0) is None  # first_seen moved
    True
    >>> row_delta((4, 2000, 100, 160, 300, 900, 0, 4), (6, 2600, 101, 170, 300, 900, 0, 6), 165.0)  # ProxySQL's jitter
    (2, 600, 0, 2)
    >>> row_delta(None, (3, 300, 166, 168, 90, 110, 0, 3), 165.0)  # new since the previous reading
    (3, 300, 0, 3)
    """
    if now[COUNT] is None or now[SUM_TIME] is None:
        return None
    if before is None:
        first = now[FIRST]
        if previous_wall is None or first is None or first < previous_wall - NEW_ROW_SLACK:
            return None  # it existed before without being seen: its counts aren't this interval's
        return now[COUNT], now[SUM_TIME], now[AFFECTED], now[SENT]
    if before[COUNT] is None or before[SUM_TIME] is None:
        return None
    if not first_seen_kept(before[FIRST], now[FIRST]) or now[COUNT] < before[COUNT] or now[SUM_TIME] < before[SUM_TIME]:
        return None
    return (now[COUNT] - before[COUNT], now[SUM_TIME] - before[SUM_TIME],
            _difference(before[AFFECTED], now[AFFECTED]), _difference(before[SENT], now[SENT]))


def _difference(before: Optional[int], now: Optional[int]) -> Optional[int]:
    if before is None or now is None or now < before:
        return None
    return now - before


def deltas(previous: Reading, current: Reading, keys: Optional[Iterable[RowKey]] = None) -> Dict[RowKey, Delta]:
    """Every row's (or the ``keys``' rows') :func:`row_delta`: the rows of ``current`` that have
    a figure for the interval.

    >>> cols = ("digest", "count_star", "sum_time", "first_seen", "sum_rows_sent")
    >>> a = parse(cols, [("0x1", "4", "2000", "100", "4"), ("0x2", "5", "500", "100", "5")], 165.0)
    >>> b = parse(cols, [("0x1", "6", "2600", "100", "6"), ("0x2", "1", "50", "168", "1"), ("0x3", "3", "300", "166", "3")], 170.0)
    >>> {key[4]: (d[0], d[1], d[3]) for key, d in deltas(a, b).items()}
    {'0x1': (2, 600, 2), '0x3': (3, 300, 3)}
    """
    before, now, wall = previous.entries, current.entries, previous.wall_time
    moved = {}
    for key in now if keys is None else keys:
        delta = row_delta(before.get(key), now[key], wall)
        if delta is not None:
            moved[key] = delta
    return moved


def resets(previous: Optional[Reading], current: Reading) -> int:
    """How many of the previous reading's rows were reset: gone, counters down, first_seen moved.

    >>> a = parse(("digest", "count_star", "sum_time", "first_seen"), [("0x1", "4", "2000", "100"),
    ...                                                                 ("0x2", "5", "500", "100")], 170.0)
    >>> b = parse(("digest", "count_star", "sum_time", "first_seen"), [("0x1", "1", "20", "171")], 175.0)
    >>> resets(a, b)
    2
    """
    if previous is None:
        return 0
    count = 0
    for key, before in previous.entries.items():
        now = current.entries.get(key)
        if now is None or not first_seen_kept(before[FIRST], now[FIRST]) or (
                before[COUNT] is not None and now[COUNT] is not None and now[COUNT] < before[COUNT]):
            count += 1
    return count


def mass_reset(previous: Optional[Reading], current: Reading) -> bool:
    """Most rows reset at once: someone reset the digest statistics (not a few rows ageing)."""
    if previous is None or not previous.entries:
        return False
    return resets(previous, current) > RESET_SHARE * len(previous.entries)


_FIELD_AT = {"hostgroup": 0, "schemaname": 1, "username": 2, "client_address": 3, "digest": 4}


def group_of(key: RowKey, fields: Sequence[str]) -> tuple:
    """The group a row belongs to under a grouping: the digest, plus the grouping's fields.

    >>> group_of(("10", "sbtest", "app", "", "0xA"), ("username",))
    ('0xA', 'app')
    """
    return (key[4],) + tuple(key[_FIELD_AT[name]] for name in fields)


def hostgroup_label(value: Any) -> str:
    """Hostgroup -1 is the query cache.

    >>> hostgroup_label("-1"), hostgroup_label("20")
    ('cache', '20')
    """
    return "cache" if str(value) == "-1" else str(value)


def hostgroups_text(hostgroups: Iterable[str]) -> str:
    """Hostgroups in numeric order, the cache last.

    >>> hostgroups_text({"20", "-1", "10"})
    '10,20,cache'
    """
    def order(hg):
        number = to_number(hg)
        return (1, 0) if str(hg) == "-1" else (0, number if number is not None else 0)
    return ",".join(hostgroup_label(h) for h in sorted(set(hostgroups), key=order))


def one_line(text: Optional[str]) -> Optional[str]:
    """A digest text for a table cell: one line, at most TEXT_IN_TABLE characters.

    >>> one_line("SELECT a\\n  FROM t\\tWHERE x=?")
    'SELECT a FROM t WHERE x=?'
    """
    if text is None:
        return None
    return " ".join(text[:TEXT_IN_TABLE].split())


def _max(values: Iterable[Optional[int]]) -> Optional[int]:
    return max((v for v in values if v is not None), default=None)


def _min(values: Iterable[Optional[int]]) -> Optional[int]:
    return min((v for v in values if v is not None), default=None)


# A group's figures (:func:`group_figures`), in this order; ``text`` is the digest's whole text.
FIGURES = ("_id", "digest", "text", "hg", "user", "schema", "count_s", "time_s", "share", "avg_ms", "avg_life_ms",
           "min_ms", "max_ms", "sent_s", "affected_s", "last_seen", "first_seen", "count", "seen_ago", "_weight")


def _group_figures(group: Any, keys: Sequence[RowKey], current: Reading, moved: Dict[RowKey, Delta],
                   seconds: Optional[float], total_time: float) -> tuple:
    """A group's counters added up (min of mins, max of maxes...), its rates from the rows'
    ``moved`` deltas, its share of ``total_time`` (µs): a tuple of FIGURES."""
    entries = current.entries
    if len(keys) == 1:  # the usual case: a group of one row
        key = keys[0]
        entry = entries[key]
        count, sum_time, first, last, low, high, _affected, _sent = entry
        count, sum_time = count or 0, sum_time or 0
        low = low if count else None
        hostgroup, user, schema = hostgroup_label(key[0]), key[2], key[1]
        change = moved.get(key)
    else:
        rows = [entries[key] for key in keys]
        count = sum(e[COUNT] or 0 for e in rows)
        sum_time = sum(e[SUM_TIME] or 0 for e in rows)
        low = _min(e[MIN] for e in rows if e[COUNT])
        high, last, first = _max(e[MAX] for e in rows), _max(e[LAST] for e in rows), _min(e[FIRST] for e in rows)
        hostgroup = hostgroups_text(k[0] for k in keys)
        user, schema = ",".join(sorted({k[2] for k in keys})), ",".join(sorted({k[1] for k in keys}))
        changes = [moved[key] for key in keys if key in moved]
        change = tuple(sum(d[n] or 0 for d in changes) for n in range(4)) if changes else None
    count_s = time_s = share = avg_ms = sent_s = affected_s = None
    if change is not None:
        d_count, d_time, d_affected, d_sent = change
        count_s, time_s = d_count / seconds, d_time / 1000.0 / seconds
        share = 100.0 * d_time / total_time if total_time > 0 else None
        avg_ms = d_time / d_count / 1000.0 if d_count else None
        affected_s, sent_s = (d_affected or 0) / seconds, (d_sent or 0) / seconds
    digest = keys[0][4]
    return (group, digest, current.texts.get(digest), hostgroup, user, schema, count_s, time_s, share, avg_ms,
            sum_time / count / 1000.0 if count else None, low / 1000.0 if low is not None else None,
            high / 1000.0 if high is not None else None, sent_s, affected_s, last, first, count,
            max(0.0, current.wall_time - last) if last is not None else None, sum_time)


def row(figures: tuple) -> Dict[str, Any]:
    """A group's figures as a table row: its digest text on one line, dim when it has none."""
    made = dict(zip(FIGURES, figures))
    if made["text"] is None:
        made["_style"] = "dim"
    made["text"] = one_line(made["text"])
    return made


def group_figures(previous: Optional[Reading], current: Optional[Reading], seconds: Optional[float],
                  fields: Sequence[str] = (), digests: Optional[Container[str]] = None) -> List[tuple]:
    """The FIGURES of each group (see GROUPINGS; of the ``digests`` given, or all), heaviest
    (lifetime sum_time, ``_weight``) first: see :func:`digest_rows`."""
    if current is None:
        return []
    keys = list(current.entries) if digests is None else [k for k in current.entries if k[4] in digests]
    moved = deltas(previous, current, keys) if previous is not None and seconds else {}
    total_time = sum(delta[1] for delta in moved.values())
    groups = [group_of(key, fields) for key in keys] if fields else [key[4] for key in keys]
    sizes = Counter(groups)
    several: Dict[Any, List[RowKey]] = {}  # the groups of more than one row (others need no list)
    for group, key in zip(groups, keys):
        if sizes[group] > 1:
            several.setdefault(group, []).append(key)
    figures = []
    for group, key in zip(groups, keys):
        if sizes[group] == 1:
            figures.append(_group_figures(group, (key,), current, moved, seconds, total_time))
        elif several[group][0] == key:  # a group of several rows, at its first
            figures.append(_group_figures(group, several[group], current, moved, seconds, total_time))
    figures.sort(key=itemgetter(-1), reverse=True)  # heaviest first; equal weights keep their order
    return figures


def digest_rows(previous: Optional[Reading], current: Optional[Reading], seconds: Optional[float],
                fields: Sequence[str] = (), digests: Optional[Container[str]] = None) -> List[Dict[str, Any]]:
    """One row per group (see GROUPINGS; of the ``digests`` given, or all) with rates per second
    and times in milliseconds.

    count_s, time_s (ms of query time per second), share (% of the rows' time_s), avg_ms (over
    the interval), avg_life_ms (since first seen), min_ms / max_ms (lifetime), sent_s,
    affected_s, last_seen / first_seen (epoch s), seen_ago (s from last_seen to the reading),
    count (lifetime). A group whose rows were all reset has no rates. Rows come heaviest
    (lifetime sum_time, ``_weight``) first, so that a sort on a column without values yet (the
    first reading) still shows the heavy digests on top. ``_id`` is the digest, or the group
    (digest, then the grouping's fields).
    """
    return [row(figures) for figures in group_figures(previous, current, seconds, fields, digests)]


def split(previous: Optional[Reading], current: Reading, digest: str, seconds: Optional[float]) \
        -> Dict[str, List[Tuple[str, float, float]]]:
    """The last interval of one digest, split by hostgroup, user, schema and client address:
    {field: [(value, count/s, time ms/s)]}, largest time first."""
    result: Dict[str, Dict[str, List[float]]] = {name: {} for name in ("hostgroup", "username", "schemaname",
                                                                         "client_address")}
    if previous is None or not seconds:
        return {name: [] for name in result}
    for key, now in current.entries.items():
        if key[4] != digest:
            continue
        delta = row_delta(previous.entries.get(key), now, previous.wall_time)
        if delta is None:
            continue
        for name, at in (("hostgroup", 0), ("username", 2), ("schemaname", 1), ("client_address", 3)):
            value = hostgroup_label(key[0]) if name == "hostgroup" else (key[at] or "(not tracked)")
            acc = result[name].setdefault(value, [0.0, 0.0])
            acc[0] += delta[0] / seconds
            acc[1] += delta[1] / 1000.0 / seconds
    return {name: sorted(((v, a[0], a[1]) for v, a in values.items() if a[0] or a[1]), key=lambda t: -t[2])
            for name, values in result.items()}


@dataclass(frozen=True)
class DigestTotals:
    """An older reading kept for the Time/s sparkline only: per digest (``digests[n]``), sum_time
    of all its rows added up, and the latest first_seen of its rows (a signature: it moves past
    ProxySQL's jitter when a row resets, to that row's next query, or when a row is added)."""

    digests: Tuple[str, ...]
    # 64-bit arrays: 320 KB a reading at 20,000 digests, where tuples of ints took 1.6 MB (x 60 readings)
    sum_time: array
    first_seen: array

    def get(self, digest: str) -> Tuple[Optional[int], Optional[int]]:
        try:
            at = self.digests.index(digest)
        except ValueError:
            return None, None
        return self.sum_time[at], self.first_seen[at]


def totals(reading: Reading) -> DigestTotals:
    """The per-digest totals of a reading.

    >>> kept = totals(parse(("digest", "hostgroup", "sum_time", "first_seen"), [("0x1", "10", "10", "5"),
    ...                                                                          ("0x1", "20", "4", "6")], 0.0))
    >>> kept.get("0x1"), kept.get("0x2")
    ((14, 6), (None, None))
    """
    sums: Dict[str, int] = {}
    firsts: Dict[str, int] = {}
    for key, entry in reading.entries.items():
        digest = key[4]
        sums[digest] = sums.get(digest, 0) + (entry[SUM_TIME] or 0)
        firsts[digest] = max(firsts.get(digest, 0), entry[FIRST] or 0)
    largest = 2 ** 63 - 1
    return DigestTotals(tuple(sums), array("q", (min(v, largest) for v in sums.values())),
                        array("q", (min(v, largest) for v in firsts.values())))


def time_series(readings: Sequence[Tuple[float, Optional[DigestTotals]]], digest: str) -> List[Optional[float]]:
    """Time/s (ms per second) of one digest between consecutive readings ((monotonic time,
    totals) pairs); None across a reset (sum down, or its rows' first_seen changed) or a gap.

    >>> a = DigestTotals(("0x1",), array("q", [1000]), array("q", [100]))
    >>> b = DigestTotals(("0x1",), array("q", [6000]), array("q", [100]))
    >>> c = DigestTotals(("0x1",), array("q", [200]), array("q", [104]))
    >>> time_series([(0.0, a), (5.0, b), (10.0, c)], "0x1")
    [1.0, None]
    """
    series: List[Optional[float]] = []
    for (t0, before), (t1, now) in zip(readings, readings[1:]):
        if before is None or now is None or t1 <= t0:
            series.append(None)
            continue
        (s0, f0), (s1, f1) = before.get(digest), now.get(digest)
        if s1 is None:
            series.append(None)
        elif s0 is None:
            series.append(0.0 if s1 == 0 else None)
        elif s1 < s0 or not first_seen_kept(f0, f1):
            series.append(None)
        else:
            series.append((s1 - s0) / 1000.0 / (t1 - t0))
    return series
