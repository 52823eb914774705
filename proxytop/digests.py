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
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from proxytop.rates import to_number

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

# Positions in an Entry.
COUNT, SUM_TIME, FIRST, LAST, MIN, MAX, AFFECTED, SENT = range(8)
COUNTERS = ("count_star", "sum_time", "first_seen", "last_seen", "min_time", "max_time",
            "sum_rows_affected", "sum_rows_sent")

RowKey = Tuple[str, str, str, str, str]  # hostgroup, schema, user, client address, digest
Entry = Tuple[Optional[int], ...]  # the COUNTERS, as numbers (None for NULL or not a number)


@dataclass(frozen=True)
class Parsed:
    """One reading of the digest table, by row key."""

    entries: Dict[RowKey, Entry]
    texts: Dict[str, Optional[str]]  # digest -> full digest text (None: NULL or empty)
    wall_time: float
    null_counters: int = 0  # rows whose counters are NULL or not numbers


def _int(value: Any) -> Optional[int]:
    if value.__class__ is str:
        try:
            return int(value)
        except ValueError:
            pass
    number = to_number(value)
    return int(number) if number is not None else None


def parse(columns: Sequence[str], rows: Iterable[Sequence[Any]], wall_time: float,
          schema_column: str = "schemaname") -> Parsed:
    """A digest table (values as text) by row key.

    >>> p = parse(("hostgroup", "schemaname", "username", "client_address", "digest", "digest_text",
    ...            "count_star", "first_seen", "last_seen", "sum_time", "min_time", "max_time",
    ...            "sum_rows_affected", "sum_rows_sent"),
    ...           [("10", "sbtest", "sbtest", "", "0x1", "SELECT ?", "4", "100", "160", "2000", "300", "900", "0", "4")],
    ...           wall_time=170.0)
    >>> p.entries[("10", "sbtest", "sbtest", "", "0x1")], p.texts["0x1"]
    ((4, 2000, 100, 160, 300, 900, 0, 4), 'SELECT ?')
    """
    at = {name: i for i, name in enumerate(columns)}
    keys = [at.get(name) for name in ("hostgroup", schema_column, "username", "client_address", "digest")]
    text_at = at.get("digest_text")
    counter_at = [at.get(name) for name in COUNTERS]
    entries: Dict[RowKey, Entry] = {}
    texts: Dict[str, Optional[str]] = {}
    nulls = 0
    complete = None not in keys and None not in counter_at and text_at is not None
    hg, schema, user, client, digest_at = keys
    c0, c1, c2, c3, c4, c5, c6, c7 = counter_at
    for row in rows:
        try:
            # the usual row, at full speed: 20,000 of them every interval
            if not complete:
                raise TypeError
            key = (row[hg], row[schema], row[user], row[client], row[digest_at])
            entry = (int(row[c0]), int(row[c1]), int(row[c2]), int(row[c3]), int(row[c4]), int(row[c5]),
                     int(row[c6]), int(row[c7]))
            if None in key:
                raise TypeError
        except (TypeError, ValueError):  # NULLs, text where numbers belong, missing columns
            key = tuple("" if i is None or row[i] is None else row[i] for i in keys)
            entry = tuple(None if i is None else _int(row[i]) for i in counter_at)
            if entry[COUNT] is None or entry[SUM_TIME] is None:
                nulls += 1
        entries[key] = entry  # type: ignore[index]
        digest = key[4]
        if digest not in texts:
            text = row[text_at] if text_at is not None else None
            texts[digest] = text if text else None
    return Parsed(entries, texts, wall_time, nulls)


@dataclass(frozen=True)
class Delta:
    """What one row did during the interval (None: no honest figure: reset or NULL)."""

    count: Optional[int]
    sum_time: Optional[int]
    affected: Optional[int]
    sent: Optional[int]


def row_delta(before: Optional[Entry], now: Entry, previous_wall: Optional[float]) -> Optional[Delta]:
    """The increase of one row's counters; None when the row was reset (or can't be rated).

    >>> row_delta((4, 2000, 100, 160, 300, 900, 0, 4), (6, 2600, 100, 170, 300, 900, 0, 6), 165.0)
    Delta(count=2, sum_time=600, affected=0, sent=2)
    >>> row_delta((4, 2000, 100, 160, 300, 900, 0, 4), (1, 50, 168, 168, 50, 50, 0, 1), 165.0) is None  # counters down
    True
    >>> row_delta((4, 2000, 100, 160, 300, 900, 0, 4), (9, 9000, 150, 170, 50, 900, 0, 9), 165.0) is None  # first_seen moved
    True
    >>> row_delta(None, (3, 300, 166, 168, 90, 110, 0, 3), 165.0)  # new since the previous reading
    Delta(count=3, sum_time=300, affected=0, sent=3)
    """
    if now[COUNT] is None or now[SUM_TIME] is None:
        return None
    if before is None:
        first = now[FIRST]
        if previous_wall is None or first is None or first < previous_wall - NEW_ROW_SLACK:
            return None  # it existed before without being seen: its counts aren't this interval's
        return Delta(now[COUNT], now[SUM_TIME], now[AFFECTED], now[SENT])
    if before[COUNT] is None or before[SUM_TIME] is None:
        return None
    if before[FIRST] != now[FIRST] or now[COUNT] < before[COUNT] or now[SUM_TIME] < before[SUM_TIME]:
        return None
    return Delta(now[COUNT] - before[COUNT], now[SUM_TIME] - before[SUM_TIME],
                 _difference(before[AFFECTED], now[AFFECTED]), _difference(before[SENT], now[SENT]))


def _difference(before: Optional[int], now: Optional[int]) -> Optional[int]:
    if before is None or now is None or now < before:
        return None
    return now - before


def resets(previous: Optional[Parsed], current: Parsed) -> int:
    """How many of the previous reading's rows were reset: gone, counters down, first_seen moved.

    >>> a = Parsed({("10", "s", "u", "", "0x1"): (4, 2000, 100, 160, 1, 9, 0, 4),
    ...             ("10", "s", "u", "", "0x2"): (5, 500, 100, 160, 1, 9, 0, 5)}, {}, 170.0)
    >>> b = Parsed({("10", "s", "u", "", "0x1"): (1, 20, 171, 171, 20, 20, 0, 1)}, {}, 175.0)
    >>> resets(a, b)
    2
    """
    if previous is None:
        return 0
    count = 0
    entries = current.entries
    for key, before in previous.entries.items():
        now = entries.get(key)
        if now is None:
            count += 1
        elif before[FIRST] != now[FIRST] or (now[COUNT] is not None and before[COUNT] is not None
                                             and now[COUNT] < before[COUNT]):
            count += 1
    return count


def mass_reset(previous: Optional[Parsed], current: Parsed) -> bool:
    """Most rows reset at once: someone reset the digest statistics (not a few rows ageing)."""
    if previous is None or not previous.entries:
        return False
    return resets(previous, current) > RESET_SHARE * len(previous.entries)


def group_of(key: RowKey, fields: Sequence[str]) -> tuple:
    """The group a row belongs to under a grouping: the digest, plus the grouping's fields.

    >>> group_of(("10", "sbtest", "app", "", "0xA"), ("username",))
    ('0xA', 'app')
    """
    parts = [key[4]]
    for name in fields:
        parts.append(key[_FIELD_AT[name]])
    return tuple(parts)


_FIELD_AT = {"hostgroup": 0, "schemaname": 1, "username": 2, "client_address": 3, "digest": 4}


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
    hostgroups = set(hostgroups)
    if len(hostgroups) == 1:  # the usual case
        return hostgroup_label(next(iter(hostgroups)))

    def order(hg):
        number = to_number(hg)
        return (1, 0) if str(hg) == "-1" else (0, number if number is not None else 0)
    return ",".join(hostgroup_label(h) for h in sorted(hostgroups, key=order))


def one_line(text: Optional[str]) -> Optional[str]:
    """A digest text for a table cell: one line, at most TEXT_IN_TABLE characters.

    >>> one_line("SELECT a\\n  FROM t\\tWHERE x=?")
    'SELECT a FROM t WHERE x=?'
    """
    if text is None:
        return None
    text = text[:TEXT_IN_TABLE]
    return " ".join(text.split())


def digest_rows(previous: Optional[Parsed], current: Optional[Parsed], seconds: Optional[float],
                fields: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """One row per group (see GROUPINGS) with rates per second and times in milliseconds.

    count_s, time_s (ms of query time per second), share (% of all time_s), avg_ms (over the
    interval), avg_life_ms (since first seen), min_ms / max_ms (lifetime), sent_s, affected_s,
    last_seen / first_seen (epoch s), count (lifetime). A group whose rows were all reset has
    no rates. Rows come heaviest (lifetime sum_time) first, so that a sort on a column
    without values yet (the first reading) still shows the heavy digests on top.
    """
    if current is None:
        return []
    before = previous.entries if previous is not None else {}
    previous_wall = previous.wall_time if previous is not None else None
    rated = seconds is not None and seconds > 0 and previous is not None
    at = [_FIELD_AT[name] for name in fields]
    members: Dict[Any, list] = {}
    for key in current.entries:
        group = (key[4],) + tuple(key[i] for i in at) if at else (key[4],)
        keys = members.get(group)
        if keys is None:
            members[group] = [key]
        else:
            keys.append(key)
    entries = current.entries
    texts = current.texts
    rows: List[Dict[str, Any]] = []
    weights: List[int] = []
    total_time = 0.0
    for group, keys in members.items():
        if len(keys) == 1:  # the usual case at scale: one row per digest, no accumulating
            key = keys[0]
            entry = entries[key]
            count, sum_time = entry[COUNT] or 0, entry[SUM_TIME] or 0
            low = entry[MIN] if count else None
            high, last, first = entry[MAX], entry[LAST], entry[FIRST]
            hostgroup, user, schema = hostgroup_label(key[0]), key[2], key[1]
            d_count = d_time = d_affected = d_sent = rated_rows = 0
            if rated:
                delta = _delta(before.get(key), entry, previous_wall)
                if delta is not None:
                    d_count, d_time, d_affected, d_sent = delta
                    rated_rows = 1
        else:
            count = sum_time = d_count = d_time = d_affected = d_sent = rated_rows = 0
            low = high = last = first = None
            for key in keys:
                entry = entries[key]
                count += entry[COUNT] or 0
                sum_time += entry[SUM_TIME] or 0
                if entry[MIN] is not None and entry[COUNT] and (low is None or entry[MIN] < low):
                    low = entry[MIN]
                if entry[MAX] is not None and (high is None or entry[MAX] > high):
                    high = entry[MAX]
                if entry[LAST] is not None and (last is None or entry[LAST] > last):
                    last = entry[LAST]
                if entry[FIRST] is not None and (first is None or entry[FIRST] < first):
                    first = entry[FIRST]
                if rated:
                    delta = _delta(before.get(key), entry, previous_wall)
                    if delta is not None:
                        d_count += delta[0]
                        d_time += delta[1]
                        d_affected += delta[2]
                        d_sent += delta[3]
                        rated_rows += 1
            hostgroup = hostgroups_text({k[0] for k in keys})
            user = ",".join(sorted({k[2] for k in keys}))
            schema = ",".join(sorted({k[1] for k in keys}))
        digest = group[0]
        text = texts.get(digest)
        has_rate = rated and rated_rows > 0
        time_s = d_time / 1000.0 / seconds if has_rate else None
        row: Dict[str, Any] = {
            "_id": group,
            "digest": digest,
            "text": _line(text),
            "hg": hostgroup,
            "user": user,
            "schema": schema,
            "count_s": d_count / seconds if has_rate else None,
            "time_s": time_s,
            "share": None,
            "avg_ms": (d_time / d_count / 1000.0 if d_count else None) if has_rate else None,
            "avg_life_ms": sum_time / count / 1000.0 if count else None,
            "min_ms": low / 1000.0 if low is not None else None,
            "max_ms": high / 1000.0 if high is not None else None,
            "sent_s": d_sent / seconds if has_rate else None,
            "affected_s": d_affected / seconds if has_rate else None,
            "last_seen": last,
            "first_seen": first,
            "count": count,
        }
        if text is None:
            row["_style"] = "dim"
        if time_s is not None:
            total_time += time_s
        rows.append(row)
        weights.append(sum_time)
    # heaviest (lifetime sum_time) first; equal weights keep their order
    rows = [rows[i] for i in sorted(range(len(rows)), key=weights.__getitem__, reverse=True)]
    if total_time > 0:
        for row in rows:
            if row["time_s"] is not None:
                row["share"] = 100.0 * row["time_s"] / total_time
    return rows


def _delta(before: Optional[Entry], now: Entry, previous_wall: Optional[float]) -> Optional[Tuple[int, int, int, int]]:
    """(Δcount, Δsum_time, Δaffected, Δsent) of one row, or None: row_delta, the usual case inline."""
    if before is not None:
        count, sum_time, old_count, old_time = now[COUNT], now[SUM_TIME], before[COUNT], before[SUM_TIME]
        if before[FIRST] != now[FIRST] or count is None or sum_time is None or old_count is None \
                or old_time is None or count < old_count or sum_time < old_time:
            return None
        return (count - old_count, sum_time - old_time, _difference(before[AFFECTED], now[AFFECTED]) or 0,
                _difference(before[SENT], now[SENT]) or 0)
    delta = row_delta(None, now, previous_wall)
    if delta is None:
        return None
    return delta.count, delta.sum_time, delta.affected or 0, delta.sent or 0


_lines: Dict[str, str] = {}  # digest text -> its one-line form (texts repeat every reading)
_LINES_KEPT = 50_000


def _line(text: Optional[str]) -> Optional[str]:
    if text is None:
        return None
    line = _lines.get(text)
    if line is None:
        if len(_lines) >= _LINES_KEPT:
            _lines.clear()
        line = _lines[text] = one_line(text)
    return line


def split(previous: Optional[Parsed], current: Parsed, digest: str, seconds: Optional[float]) \
        -> Dict[str, List[Tuple[str, float, float]]]:
    """The last interval of one digest, split by hostgroup, user, schema and client address:
    {field: [(value, count/s, time ms/s)]}, largest time first."""
    result: Dict[str, Dict[str, List[float]]] = {name: {} for name in ("hostgroup", "username", "schemaname",
                                                                         "client_address")}
    if previous is None or not seconds:
        return {name: [] for name in result}
    for key, entry in current.entries.items():
        if key[4] != digest:
            continue
        delta = row_delta(previous.entries.get(key), entry, previous.wall_time)
        if delta is None:
            continue
        for name, at in (("hostgroup", 0), ("username", 2), ("schemaname", 1), ("client_address", 3)):
            value = hostgroup_label(key[0]) if name == "hostgroup" else (key[at] or "(not tracked)")
            acc = result[name].setdefault(value, [0.0, 0.0])
            acc[0] += delta.count / seconds
            acc[1] += delta.sum_time / 1000.0 / seconds
    return {name: sorted(((v, a[0], a[1]) for v, a in values.items() if a[0] or a[1]), key=lambda t: -t[2])
            for name, values in result.items()}


@dataclass(frozen=True, eq=False)
class DigestTotals:
    """An older reading kept for the Time/s sparkline only: per digest, sum_time of all its
    rows added up, and their first_seen added up (a signature: it changes when a row resets).
    ``position`` (digest -> index) is shared by the readings of an unchanged digest set, the
    figures are arrays: 20,000 digests take about 320 KB per reading instead of megabytes."""

    position: Mapping[str, int]
    sum_time: array
    first_seen: array
    wall_time: float

    def get(self, digest: str) -> Tuple[Optional[int], Optional[int]]:
        at = self.position.get(digest)
        if at is None:
            return None, None
        return self.sum_time[at], self.first_seen[at]


def totals(parsed: Parsed, position: Optional[Mapping[str, int]] = None) -> DigestTotals:
    """Per-digest totals of a reading; ``position`` is reused when the digests are the same."""
    sums: Dict[str, int] = {}
    firsts: Dict[str, int] = {}
    for key, entry in parsed.entries.items():
        digest = key[4]
        sums[digest] = sums.get(digest, 0) + (entry[SUM_TIME] or 0)
        firsts[digest] = firsts.get(digest, 0) + (entry[FIRST] or 0)
    return _totals(sums, firsts, position, parsed.wall_time)


def table_totals(columns: Sequence[str], rows: Iterable[Sequence[Any]],
                 position: Optional[Mapping[str, int]] = None) -> DigestTotals:
    """``totals`` straight from a digest table's rows, without parsing every counter: what
    the collector keeps of a reading once it is older than the last two.

    >>> kept = table_totals(("digest", "sum_time", "first_seen"), [("0x1", "10", "5"), ("0x1", "4", "6")])
    >>> kept.get("0x1"), kept.get("0x2")
    ((14, 11), (None, None))
    """
    at = {name: i for i, name in enumerate(columns)}
    digest_at, time_at, first_at = at.get("digest"), at.get("sum_time"), at.get("first_seen")
    sums: Dict[str, int] = {}
    firsts: Dict[str, int] = {}
    if digest_at is not None:
        for row in rows:
            digest = row[digest_at]
            sums[digest] = sums.get(digest, 0) + ((_int(row[time_at]) or 0) if time_at is not None else 0)
            firsts[digest] = firsts.get(digest, 0) + ((_int(row[first_at]) or 0) if first_at is not None else 0)
    return _totals(sums, firsts, position, 0.0)


def _totals(sums: Dict[str, int], firsts: Dict[str, int], position: Optional[Mapping[str, int]],
            wall_time: float) -> DigestTotals:
    if position is None or len(position) != len(sums) or any(d not in position for d in sums):
        position = {digest: n for n, digest in enumerate(sums)}
    sum_time = array("q", bytes(8 * len(position)))
    first_seen = array("q", bytes(8 * len(position)))
    for digest, at in position.items():
        sum_time[at] = min(sums[digest], 2 ** 63 - 1)
        first_seen[at] = min(firsts[digest], 2 ** 63 - 1)
    return DigestTotals(position, sum_time, first_seen, wall_time)


def time_series(readings: Sequence[Tuple[float, Optional[DigestTotals]]], digest: str) -> List[Optional[float]]:
    """Time/s (ms per second) of one digest between consecutive readings ((monotonic time,
    totals) pairs); None across a reset (sum down, or its rows' first_seen changed) or a gap.

    >>> one = {"0x1": 0}
    >>> a = DigestTotals(one, array("q", [1000]), array("q", [100]), 0.0)
    >>> b = DigestTotals(one, array("q", [6000]), array("q", [100]), 5.0)
    >>> c = DigestTotals(one, array("q", [200]), array("q", [104]), 10.0)
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
        elif s1 < s0 or f0 != f1:
            series.append(None)
        else:
            series.append((s1 - s0) / 1000.0 / (t1 - t0))
    return series
