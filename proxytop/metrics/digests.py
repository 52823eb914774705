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

import json
import weakref
from array import array
from collections.abc import Mapping, Sequence as SequenceABC
from dataclasses import dataclass
from itertools import compress, repeat
from operator import and_, eq, gt, is_, itemgetter, le, ne, not_, or_, sub, truediv
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from proxytop.metrics.rates import to_number
from proxytop.polling.columns import decimals_to_lists, decode_column, rows_digest

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


def _firsts_kept(before: Sequence[int], now: Sequence[int]) -> Iterable[bool]:
    """:func:`first_seen_kept` of two columns, element-wise (in C: no Python call per row)."""
    return map(le, map(abs, map(sub, now, before)), repeat(FIRST_SEEN_JITTER))

# Positions in an Entry.
COUNT, SUM_TIME, FIRST, LAST, MIN, MAX, AFFECTED, SENT = range(8)
COUNTERS = ("count_star", "sum_time", "first_seen", "last_seen", "min_time", "max_time",
            "sum_rows_affected", "sum_rows_sent")

RowKey = Tuple[str, str, str, str, str]  # hostgroup, schema, user, client address, digest
Entry = Tuple[Optional[int], ...]  # the COUNTERS, as numbers (None for NULL or not a number)


MISSING = -(2 ** 63)  # a NULL or non-numeric counter in a Parsed column
_LARGEST = 2 ** 63 - 1


class Texts(dict):
    """{digest: full digest text} of a reading. ``grown_from``: (the texts of the reading
    before, weakly, and the digests added to them) when made by adding a few digests to
    those, so that what is derived from them can be made the same way (see _lines_of)."""

    grown_from: Optional[Tuple[Any, Tuple[str, ...]]] = None


@dataclass(frozen=True, eq=False)
class Parsed:
    """One reading of the digest table as columns: row ``n`` has the key ``keys[n]`` and the
    counters ``columns[COUNT][n]``, ``columns[SUM_TIME][n]``... (arrays of 64-bit integers,
    MISSING for NULL). ``keys``, ``index`` and ``texts`` are the previous reading's own objects
    when its rows and texts are the same (the usual case), so that readings share them: 20,000
    digests take about 1.3 MB of counters per reading instead of tens of MB of tuples."""

    keys: Tuple[RowKey, ...]
    index: Mapping[RowKey, int]  # key -> row
    columns: Tuple[array, ...]  # in COUNTERS order
    texts: Mapping[str, Optional[str]]  # digest -> full digest text (None: NULL or empty)
    wall_time: float
    null_counters: int = 0  # rows whose count_star or sum_time are NULL or not numbers
    # Read by parse_columns: a fingerprint of every row's values before the counters (key
    # and text: the next reading compares it, and converts only the counters that changed);
    # and whether the columns give back exactly the rows that were read (see compact_rows).
    heads: Optional[bytes] = None
    exact: bool = False
    plain: bool = False  # every counter was a plain decimal (str() of each gives its text back): no MISSING
    layout: Optional[tuple] = None  # the columns read (the next reading compares its rows only if the same)
    # (the reading before, weakly, and :func:`deltas` from it), worked out where this reading
    # was parsed from the rows that changed: the screen's deltas() then has nothing to do
    change: Optional[Tuple[Any, "Deltas"]] = None
    heaviest: Optional[array] = None  # heaviest_first(self), worked out where the reading was parsed
    # (the reading before, weakly, and the positions of the rows inserted among its rows):
    # this reading is that one's rows in their order with those rows inserted (see aligned)
    inserted: Optional[Tuple[Any, Tuple[int, ...]]] = None

    @property
    def entries(self) -> "Entries":
        """The rows as a read-only mapping {row key: Entry}."""
        return Entries(self)

    def entry(self, n: int) -> Entry:
        """Row ``n``'s counters, None for NULL."""
        return tuple(None if v == MISSING else v for v in (column[n] for column in self.columns))


class Entries(Mapping):
    """{row key: Entry} over a Parsed reading, each Entry built when asked for."""

    def __init__(self, parsed: Parsed):
        self._parsed = parsed

    def __getitem__(self, key: RowKey) -> Entry:
        return self._parsed.entry(self._parsed.index[key])

    def __iter__(self):
        return iter(self._parsed.keys)

    def __len__(self) -> int:
        return len(self._parsed.keys)

    def __contains__(self, key: object) -> bool:
        return key in self._parsed.index


def _int(value: Any) -> Optional[int]:
    if value.__class__ is str:
        try:
            return int(value)
        except ValueError:
            pass
    number = to_number(value)
    return int(number) if number is not None else None


def _counter(value: Any) -> int:
    number = _int(value)
    if number is None:
        return MISSING
    return max(min(number, _LARGEST), MISSING + 1)


def _counters(values: List[Any]) -> array:
    """A column of counters as int64 (MISSING for NULL or not a number).

    The usual column, decimal text, is read as one JSON array: json's C parser turns
    20,000 numbers into ints in about half the time int() takes one by one.

    >>> list(_counters(["12", "0", "9223372036854775807"])), list(_counters(["7", None, "x", "1.5", "true"]))
    ([12, 0, 9223372036854775807], [7, -9223372036854775808, -9223372036854775808, 1, -9223372036854775808])
    """
    try:
        numbers = json.loads("[" + ",".join(values) + "]")
        if len(numbers) == len(values) and (not numbers or set(map(type, numbers)) == {int}):
            return array("q", numbers)
    except (TypeError, ValueError, OverflowError, RecursionError):  # NULLs, text where numbers belong, huge
        pass
    return array("q", [_counter(v) for v in values])


def parse(columns: Sequence[str], rows: Iterable[Sequence[Any]], wall_time: float,
          schema_column: str = "schemaname", previous: Optional[Parsed] = None) -> Parsed:
    """A digest table (values as text) as columns by row key; ``previous`` (the reading
    before) lends its keys and texts when they are the same.

    >>> p = parse(("hostgroup", "schemaname", "username", "client_address", "digest", "digest_text",
    ...            "count_star", "first_seen", "last_seen", "sum_time", "min_time", "max_time",
    ...            "sum_rows_affected", "sum_rows_sent"),
    ...           [("10", "sbtest", "sbtest", "", "0x1", "SELECT ?", "4", "100", "160", "2000", "300", "900", "0", "4")],
    ...           wall_time=170.0)
    >>> p.entries[("10", "sbtest", "sbtest", "", "0x1")], p.texts["0x1"]
    ((4, 2000, 100, 160, 300, 900, 0, 4), 'SELECT ?')
    """
    rows = rows if isinstance(rows, (list, tuple)) else list(rows)
    at = {name: i for i, name in enumerate(columns)}
    count = len(rows)

    def column(name: Optional[str]) -> List[Any]:
        i = at.get(name) if name is not None else None
        return [None] * count if i is None else list(map(itemgetter(i), rows))

    parts = []
    for name in ("hostgroup", schema_column, "username", "client_address", "digest"):
        values = column(name)
        if None in values:
            values = ["" if v is None else v for v in values]
        parts.append(values)
    index: Mapping[RowKey, int]
    if previous is not None and len(previous.keys) == count and all(
            list(map(itemgetter(i), previous.keys)) == values for i, values in enumerate(parts)):
        keys, index = previous.keys, previous.index  # the same rows in the same order: shared
    else:
        keys = tuple(zip(*parts)) if count else ()
        index = dict(zip(keys, range(count)))
        if len(index) != count:  # a key twice: the last row of each key counts, as in a dict
            kept = sorted(index.values())
            return parse(columns, [rows[i] for i in kept], wall_time, schema_column, previous)
    counters = tuple(_counters(column(name)) for name in COUNTERS)
    nulls = 0
    if MISSING in counters[COUNT] or MISSING in counters[SUM_TIME]:
        nulls = sum(1 for c, t in zip(counters[COUNT], counters[SUM_TIME]) if c == MISSING or t == MISSING)
    # the first row of a digest gives its text
    texts: Dict[str, Optional[str]] = Texts(zip(reversed(parts[4]), reversed(column("digest_text"))))
    if "" in texts.values():  # an empty text is no text
        for digest in [d for d, text in texts.items() if text == ""]:
            texts[digest] = None
    if previous is not None and previous.texts == texts:
        texts = previous.texts
    return Parsed(keys, index, counters, texts, wall_time, nulls)


KEY_COLUMNS = ("hostgroup", "schemaname", "username", "client_address", "digest")


def parse_columns(result, wall_time: float, schema_column: str = "schemaname",
                  previous: Optional[Parsed] = None, sent_before: Optional[Sequence[bytes]] = None,
                  row_hashes: Optional[Tuple[Sequence[int], Sequence[int]]] = None) -> Parsed:
    """:func:`parse` of a digest read as :class:`proxytop.polling.columns.Columns`, converting only
    what changed since ``previous``: when the rows' values before the counters (key and
    text) are the previous reading's, in the same order, its keys, index and texts are
    shared; given ``sent_before`` (the previous reading's ``result.tails``: each row's
    counters as sent), rows whose counters are the same bytes keep its numbers, the others
    are parsed in one pass (columns.decimals_to_columns), and the interval's deltas are
    worked out on those rows alone (``change``). Given ``row_hashes`` (hash() of each row's
    values before the counters, in the previous reading and in this one), a reading that is
    the previous one's rows in their order with rows inserted (new digests: ProxySQL's map
    keeps its order until it grows its table) decodes only the inserted rows and works its
    deltas out the same way. Anything unusual is read column by column, with the same result
    as :func:`parse` of the rows."""
    names = [schema_column if name == "schemaname" else name for name in KEY_COLUMNS]
    tails = result.tails
    if tails is None or not set(COUNTERS) <= set(result.names[result.head_width:]) or \
            not all(result.has(name) for name in names + ["digest_text"]):
        table = result.table()  # not the usual layout: the rows, as a row-by-row read gives them
        return parse(table.columns, table.rows, wall_time, schema_column, previous)
    layout = (result.names, schema_column)
    heads = getattr(result, "heads_digest", None) or fingerprint(result.heads)
    same_rows = previous is not None and previous.heads == heads and previous.layout == layout
    inserted = None
    if not same_rows and previous is not None and previous.plain and previous.exact and sent_before is not None \
            and row_hashes is not None and previous.layout == layout:
        inserted = _inserted_rows(result, names, previous, *row_hashes)
    if same_rows:
        keys, index, texts, exact = previous.keys, previous.index, previous.texts, previous.exact  # type: ignore[union-attr]
    elif inserted is not None:
        keys, index, texts, exact = inserted[:4]
    else:
        found = _keys_and_texts(result, names, previous)
        if found is None:  # a key twice: parse keeps the last row of each
            table = result.table()
            return parse(table.columns, table.rows, wall_time, schema_column, previous)
        keys, index, texts, exact = found
        exact = exact and len(result.names) == len(TABLE_COLUMNS) and set(result.names) == set(
            names + list(TABLE_COLUMNS[len(KEY_COLUMNS):]))
    counters, plain, change = None, False, None
    if same_rows and previous.plain and sent_before is not None:  # type: ignore[union-attr]
        changed = _changed_counters(tails, sent_before, previous.columns, result.tail_width,  # type: ignore[union-attr]
                                    result.names[result.head_width:])
        if changed is not None:
            counters, plain, change = changed[0], True, (weakref.ref(previous), changed[1])  # type: ignore[arg-type]
    elif inserted is not None:
        changed = _counters_with_inserted(tails, sent_before, previous, inserted[4], result.tail_width,  # type: ignore[arg-type]
                                          result.names[result.head_width:])
        if changed is not None:
            counters, plain, change = changed[0], True, (weakref.ref(previous), changed[1])  # type: ignore[arg-type]
    if counters is None:
        numbers = [result.numbers(name) for name in COUNTERS]
        if all(column is not None for column in numbers):
            counters, plain = tuple(numbers), True
        else:  # NULLs or text where numbers belong: as parse reads them
            counters = tuple(_counters(result.texts(name)) for name in COUNTERS)
    nulls = 0
    if not plain and (MISSING in counters[COUNT] or MISSING in counters[SUM_TIME]):
        nulls = sum(1 for c, t in zip(counters[COUNT], counters[SUM_TIME]) if c == MISSING or t == MISSING)
    heaviest = array("i", _heaviest(counters[SUM_TIME])) if plain else None
    hint = (weakref.ref(previous), tuple(inserted[4])) if inserted is not None else None
    return Parsed(keys, index, counters, texts, wall_time, nulls, heads, exact and plain, plain, layout, change, heaviest,
                  hint)


def heaviest_first(parsed: Parsed) -> List[int]:
    """The rows, heaviest (lifetime sum_time, NULL as 0) first; equal weights keep their order.

    >>> heaviest_first(parse(("digest", "sum_time"), [("0x1", "5"), ("0x2", "9"), ("0x3", None), ("0x4", "5")], 1.0))
    [1, 0, 3, 2]
    """
    if parsed.heaviest is not None:
        return list(parsed.heaviest)
    return _heaviest(parsed.columns[SUM_TIME] if parsed.plain else _or(parsed.columns[SUM_TIME], 0))


def _heaviest(sum_time: Sequence[int]) -> List[int]:
    return sorted(range(len(sum_time)), key=list(sum_time).__getitem__, reverse=True)


def _keys_and_texts(result, names: Sequence[str], previous: Optional[Parsed]):
    """(keys, index, texts, exact) of a reading read as columns; None when a key is there twice.
    ``exact``: no NULL in the key, one text per digest, none empty (see compact_rows)."""
    parts = [decode_column(result.raw(name)) for name in names]
    exact = True
    for n, values in enumerate(parts):
        if None in values:
            parts[n] = ["" if v is None else v for v in values]
            exact = False
    keys: Tuple[RowKey, ...] = tuple(zip(*parts)) if result.count else ()
    if previous is not None and previous.keys == keys:
        keys, index = previous.keys, previous.index
    else:
        index = dict(zip(keys, range(len(keys))))
        if len(index) != len(keys):
            return None
    row_texts = decode_column(result.raw("digest_text"))
    texts: Dict[str, Optional[str]] = Texts(zip(reversed(parts[4]), reversed(row_texts)))
    if "" in texts.values():  # an empty text is no text
        for digest in [d for d, text in texts.items() if text == ""]:
            texts[digest] = None
    exact = exact and list(map(texts.get, parts[4])) == row_texts
    if previous is not None and previous.texts == texts:
        texts = previous.texts
    return keys, index, texts, exact


fingerprint = rows_digest  # of the rows' values before the counters: the same rows, in the same order


def _picker(positions: Sequence[int]):
    """itemgetter(*positions) that gives a tuple however many positions there are."""
    if len(positions) == 1:
        only = positions[0]
        return lambda values: (values[only],)
    return itemgetter(*positions)


def _changed_counters(tails: Sequence[bytes], before: Sequence[Optional[bytes]], before_columns: Tuple[array, ...],
                      width: int, tail_names: Sequence[str]) -> Optional[Tuple[Tuple[array, ...], "Deltas"]]:
    """(counters, deltas) of a reading whose rows are the previous reading's, ``before`` being
    its rows' counters as sent and ``before_columns`` their numbers: rows sent as the same
    bytes keep the previous numbers (and did nothing in the interval), the others are parsed,
    and their deltas worked out alone. None when a counter that changed is not a plain decimal."""
    count = len(tails)
    if len(before) != count:
        return None
    changed = list(compress(range(count), map(ne, tails, before)))
    if not changed:
        return before_columns, _unchanged(count)
    picked = _picker(changed)
    parsed = decimals_to_lists(b"".join(picked(tails)), width, len(changed))
    if parsed is None:
        return None
    at = {name: i for i, name in enumerate(tail_names)}
    counters: List[array] = []
    olds: List[Optional[tuple]] = []  # each column's values before, at the rows that changed (None: none moved)
    news: List[List[int]] = []
    for c, name in enumerate(COUNTERS):
        before_column, values = before_columns[c], parsed[at[name]]
        old = picked(before_column)
        news.append(values)
        if old == tuple(values):
            counters.append(before_column)  # none of its values moved (first_seen, min, max): shared
            olds.append(None)
        else:
            counters.append(_scatter(before_column, changed, values))
            olds.append(old)
    return tuple(counters), _changed_deltas(count, changed, olds, news)


def _inserted_rows(result, names: Sequence[str], previous: Parsed, hashes_before: Sequence[int],
                   hashes: Sequence[int]):
    """(keys, index, texts, exact, positions) of a reading that is ``previous``'s rows, in
    their order, with rows inserted at ``positions`` (ascending), each row known by the
    hash() of its values before the counters (64 bits: two different rows of one table share
    one with a chance of about 1 in 10^10); only the inserted rows are decoded. None when
    the reading is anything else (a row gone, the order changed, a key twice, an inserted
    row with a NULL or empty value, or with another text for a digest already there)."""
    known = set(hashes_before)
    if len(known) != len(hashes_before) or len(hashes) <= len(hashes_before):
        return None
    kept = list(map(known.__contains__, hashes))
    if list(compress(hashes, kept)) != list(hashes_before):
        return None
    positions = list(compress(range(len(hashes)), map(not_, kept)))
    at = [result.names.index(name) for name in names] + [result.names.index("digest_text")]
    keys = list(previous.keys)
    texts = previous.texts
    added: List[str] = []
    for n in positions:
        values = result.row_raw(n)
        decoded = decode_column([values[i] for i in at])
        if None in decoded or not decoded[5]:  # a NULL, or no text: parse tells those apart
            return None
        key, text = tuple(decoded[:5]), decoded[5]
        known_text = texts.get(key[4], text)
        if known_text != text:
            return None
        if key[4] not in texts:
            texts = Texts(texts) if texts is previous.texts else texts
            texts[key[4]] = text
            added.append(key[4])
        keys.insert(n, key)
    index = dict(zip(keys, range(len(keys))))
    if len(index) != len(keys):
        return None
    if added and isinstance(previous.texts, Texts):
        texts.grown_from = (weakref.ref(previous.texts), tuple(added))  # type: ignore[attr-defined]
    return tuple(keys), index, texts, True, positions


def _counters_with_inserted(tails: Sequence[bytes], sent_before: Sequence[bytes], previous: Parsed,
                            positions: Sequence[int], width: int, tail_names: Sequence[str]):
    """:func:`_changed_counters` of a reading with rows inserted at ``positions``: the previous
    rows compared as sent, the inserted ones parsed, and their deltas :func:`deltas`' for a
    new row (all its counts are the interval's when it was first seen after the previous
    reading, give or take NEW_ROW_SLACK; else no figure)."""
    before: List[Optional[bytes]] = list(sent_before)
    columns = [array("q", column) for column in previous.columns]
    for n in positions:
        before.insert(n, None)  # never equal: parsed
        for column in columns:
            column.insert(n, 0)
    changed = _changed_counters(tails, before, tuple(columns), width, tail_names)
    if changed is None:
        return None
    counters, change = changed
    edge = previous.wall_time - NEW_ROW_SLACK
    rated = list(change.rated)
    moved = [array("q", values) for values in (change.count, change.sum_time, change.affected, change.sent)]
    for n in positions:
        rated[n] = counters[FIRST][n] >= edge
        for values, c in zip(moved, (COUNT, SUM_TIME, AFFECTED, SENT)):
            values[n] = counters[c][n] if rated[n] else 0
    inserted = set(positions)
    return counters, Deltas(rated, *moved, reset_rows=tuple(n for n in change.reset_rows or () if n not in inserted))


def _scatter(column: array, at: Sequence[int], values: Sequence[int]) -> array:
    """A copy of ``column`` with ``values`` at the positions ``at``."""
    copy = array("q", column)
    for n, value in zip(at, values):
        copy[n] = value
    return copy


def _unchanged(count: int) -> "Deltas":
    """The deltas of rows that all did nothing in the interval."""
    zeros = array("q", bytes(8 * count))
    return Deltas([True] * count, zeros, zeros, zeros, zeros, reset_rows=())


def _changed_deltas(count: int, changed: List[int], before: List[Optional[tuple]], now: List[List[int]]) -> "Deltas":
    """:func:`deltas` of a reading whose rows are the previous reading's, from the counters of
    the rows that changed (before and now, in COUNTERS order; before None: that counter
    moved in none of them): the other rows did nothing."""
    def moved(c: int) -> Optional[List[int]]:
        return None if before[c] is None else list(map(sub, now[c], before[c]))  # type: ignore[arg-type]

    d_count, d_time, d_affected, d_sent = moved(COUNT), moved(SUM_TIME), moved(AFFECTED), moved(SENT)
    # rated: first_seen kept (within ProxySQL's jitter), count_star and sum_time not down
    flags = [] if before[FIRST] is None else [list(_firsts_kept(before[FIRST], now[FIRST]))]  # type: ignore[arg-type]
    flags += [list(map(le, repeat(0), d)) for d in (d_count, d_time) if d is not None and min(d) < 0]
    unrated = sorted(set().union(*(compress(range(len(changed)), map(not_, flag)) for flag in flags)))
    # reset (as resets() counts them): first_seen moved or count_star down
    reset = set() if before[FIRST] is None else set(compress(range(len(changed)), map(not_, flags[0])))
    if d_count is not None and min(d_count) < 0:
        reset.update(compress(range(len(changed)), map(gt, repeat(0), d_count)))
    for d in (d_affected, d_sent):  # rows affected or sent that went down count as none
        if d is not None and min(d) < 0:
            d[:] = map(max, d, repeat(0))
    for d in (d_count, d_time, d_affected, d_sent):
        if d is not None:
            for k in unrated:
                d[k] = 0
    zeros = array("q", bytes(8 * count))
    rated = [True] * count
    for k in unrated:
        rated[changed[k]] = False
    return Deltas(rated, *(zeros if d is None or not any(d) else _scatter(zeros, changed, d)
                           for d in (d_count, d_time, d_affected, d_sent)),
                  reset_rows=tuple(changed[k] for k in sorted(reset)))


TABLE_COLUMNS = ("hostgroup", "schemaname", "username", "client_address", "digest", "digest_text") + COUNTERS


class ParsedRows(SequenceABC):
    """The rows of a digest table regenerated from its Parsed reading, as text in the
    table's column order: a Table can hold its rows this way (see :func:`compact_rows`)."""

    def __init__(self, parsed: Parsed, columns: Sequence[str], schema_column: str = "schemaname"):
        self.parsed = parsed
        names = [schema_column if name == "schemaname" else name for name in TABLE_COLUMNS]
        self._from = [names.index(name) for name in columns]

    def __len__(self) -> int:
        return len(self.parsed.keys)

    def __eq__(self, other: object) -> bool:  # equal to the same rows as a tuple or list (a replayed Table)
        if isinstance(other, (tuple, list, ParsedRows)):
            return len(self) == len(other) and all(map(eq, self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[n] for n in range(*i.indices(len(self)))]
        parsed = self.parsed
        key = parsed.keys[i]
        values = key + (parsed.texts.get(key[4]),) + tuple(str(column[i]) for column in parsed.columns)
        return tuple(values[at] for at in self._from)


def compact_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], parsed: Parsed,
                 schema_column: str = "schemaname") -> Optional[ParsedRows]:
    """``parsed`` as the table's rows when they give back exactly ``rows`` (decimal counters,
    no NULL, one text per digest, no column parse doesn't know); else None (keep the rows).

    >>> cols = ("hostgroup", "schemaname", "username", "client_address", "digest", "digest_text",
    ...         "count_star", "first_seen", "last_seen", "sum_time", "min_time", "max_time",
    ...         "sum_rows_affected", "sum_rows_sent")
    >>> rows = [("10", "s", "u", "", "0x1", "SELECT ?", "4", "100", "160", "2000", "300", "900", "0", "4")]
    >>> list(compact_rows(cols, rows, parse(cols, rows, 1.0))) == rows
    True
    >>> compact_rows(cols, [rows[0][:6] + (None,) + rows[0][7:]], parse(cols, [rows[0][:6] + (None,) + rows[0][7:]], 1.0))
    """
    names = [schema_column if name == "schemaname" else name for name in TABLE_COLUMNS]
    if not rows or sorted(columns) != sorted(names) or len(parsed.keys) != len(rows) or parsed.null_counters:
        return None
    if any(MISSING in column for column in parsed.columns):
        return None
    at = {name: i for i, name in enumerate(columns)}
    for name in names[:5]:
        if None in map(itemgetter(at[name]), rows):
            return None
    texts = list(map(itemgetter(at["digest_text"]), rows))
    if list(map(parsed.texts.get, map(itemgetter(at["digest"]), rows))) != texts:
        return None  # an empty text, or two texts for one digest
    return ParsedRows(parsed, columns, schema_column)


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
    >>> row_delta((4, 2000, 100, 160, 300, 900, 0, 4), (6, 2600, 101, 170, 300, 900, 0, 6), 165.0)  # ProxySQL's jitter
    Delta(count=2, sum_time=600, affected=0, sent=2)
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
    if not first_seen_kept(before[FIRST], now[FIRST]) or now[COUNT] < before[COUNT] or now[SUM_TIME] < before[SUM_TIME]:
        return None
    return Delta(now[COUNT] - before[COUNT], now[SUM_TIME] - before[SUM_TIME],
                 _difference(before[AFFECTED], now[AFFECTED]), _difference(before[SENT], now[SENT]))


def _difference(before: Optional[int], now: Optional[int]) -> Optional[int]:
    if before is None or now is None or now < before:
        return None
    return now - before


def aligned(previous: Parsed, current: Parsed) -> Tuple[List[int], List[int]]:
    """For each row of ``current`` the row of ``previous`` with its key (``len(previous.keys)``,
    one past the end, when it is new), and the positions of the new rows."""
    if previous.index is current.index:
        return list(range(len(current.keys))), []
    past = len(previous.keys)
    hint = current.inserted
    if hint is not None and hint[0]() is previous:  # previous's rows, with rows inserted
        order = list(range(past))
        for n in hint[1]:
            order.insert(n, past)
        return order, list(hint[1])
    hint = previous.inserted
    if hint is not None and hint[0]() is current:  # asked the other way round (see resets)
        kept = [True] * past
        for n in hint[1]:
            kept[n] = False
        return list(compress(range(past), kept)), []
    order = list(map(previous.index.get, current.keys, repeat(past)))
    new = [n for n, m in enumerate(order) if m == past] if past in order else []
    return order, new


def _gather(column: array, order: List[int]) -> List[int]:
    """``column`` in another reading's row order; MISSING where ``order`` points past its end."""
    padded = column + array("q", (MISSING,))
    return list(map(padded.__getitem__, order))


def resets(previous: Optional[Parsed], current: Parsed) -> int:
    """How many of the previous reading's rows were reset: gone, counters down, first_seen moved.

    >>> a = parse(("digest", "count_star", "sum_time", "first_seen"), [("0x1", "4", "2000", "100"),
    ...                                                                 ("0x2", "5", "500", "100")], 170.0)
    >>> b = parse(("digest", "count_star", "sum_time", "first_seen"), [("0x1", "1", "20", "171")], 175.0)
    >>> resets(a, b)
    2
    """
    if previous is None:
        return 0
    change = current.change
    if change is not None and change[1].reset_rows is not None and change[0]() is previous:
        return len(change[1].reset_rows)  # worked out where the reading was parsed
    before_count, before_first = previous.columns[COUNT], previous.columns[FIRST]
    complete = previous.plain and current.plain  # no NULL anywhere: nothing to look for
    hint = current.inserted
    gone: List[int] = []
    if hint is not None and hint[0]() is previous:  # previous's rows with rows inserted: those left out
        kept = [True] * len(current.keys)
        for n in hint[1]:
            kept[n] = False
        now_count = array("q", compress(current.columns[COUNT], kept))
        now_first = array("q", compress(current.columns[FIRST], kept))
    elif previous.index is current.index:  # the same rows in the same order: no gathering
        now_count, now_first = current.columns[COUNT], current.columns[FIRST]
        if now_first is before_first and (complete or MISSING not in before_count and MISSING not in now_count):
            return sum(map(gt, before_count, now_count))  # first_seen unmoved (one array shared)
    else:
        order, gone = aligned(current, previous)  # the current rows in the previous reading's order
        now_count, now_first = _gather(current.columns[COUNT], order), _gather(current.columns[FIRST], order)
    if not complete and (MISSING in before_count or MISSING in current.columns[COUNT]):  # NULL counts: not "down"
        down = [b != MISSING and n != MISSING and n < b for b, n in zip(before_count, now_count)]
    else:
        down = list(map(gt, before_count, now_count))
    flags = list(map(or_, map(not_, _firsts_kept(before_first, now_first)), down))
    for n in gone:
        flags[n] = True
    return sum(flags)


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


class Deltas:
    """What each row of the current reading did during the interval, as columns: ``rated[n]``
    is False when row n has no honest figure (reset, NULL, unseen before); the differences
    of count_star, sum_time, sum_rows_affected and sum_rows_sent (affected and sent at least 0)."""

    def __init__(self, rated: List[bool], count: List[int], sum_time: List[int], affected: List[int], sent: List[int],
                 reset_rows: Optional[Tuple[int, ...]] = None):
        self.rated, self.count, self.sum_time, self.affected, self.sent = rated, count, sum_time, affected, sent
        # the rows of the previous reading that were reset, at their rows in this one, when
        # worked out where the reading was parsed (no row gone): resets() has nothing to do
        self.reset_rows = reset_rows


_RATED = (COUNT, SUM_TIME, FIRST, AFFECTED, SENT)


def deltas(previous: Parsed, current: Parsed) -> Deltas:
    """Every row's :func:`row_delta` at once: column by column in C when no counter is NULL.

    >>> cols = ("digest", "count_star", "sum_time", "first_seen", "sum_rows_sent")
    >>> a = parse(cols, [("0x1", "4", "2000", "100", "4"), ("0x2", "5", "500", "100", "5")], 165.0)
    >>> b = parse(cols, [("0x1", "6", "2600", "100", "6"), ("0x2", "1", "50", "168", "1"), ("0x3", "3", "300", "166", "3")], 170.0)
    >>> d = deltas(a, b)
    >>> d.rated, d.count, d.sum_time, d.sent
    ([True, False, True], [2, 0, 3], [600, 0, 300], [2, 0, 3])
    """
    change = current.change
    if change is not None and change[0]() is previous:  # worked out when the reading was parsed
        return change[1]
    now = current.columns
    before = previous.columns
    if not (current.plain and previous.plain) and any(MISSING in now[c] or MISSING in before[c] for c in _RATED):
        return _deltas_one_by_one(previous, current)
    order, new = aligned(previous, current)
    same = order if not new and previous.index is current.index else None
    b_count, b_time, b_first, b_affected, b_sent = (
        before[c] if same is not None else _gather(before[c], order) for c in _RATED)
    count, sum_time, first, affected, sent = (now[c] for c in _RATED)
    size = len(count)
    # a column shared with the previous reading (none of its values moved) has no differences
    rated = list(map(and_, map(and_, repeat(True, size) if first is b_first else _firsts_kept(b_first, first),
                               map(le, b_count, count)), map(le, b_time, sum_time)))
    d_count = [0] * size if count is b_count else list(map(sub, count, b_count))
    d_time = [0] * size if sum_time is b_time else list(map(sub, sum_time, b_time))
    d_affected = [0] * size if affected is b_affected else list(map(max, map(sub, affected, b_affected), repeat(0)))
    d_sent = [0] * size if sent is b_sent else list(map(max, map(sub, sent, b_sent), repeat(0)))
    if not all(rated):
        for n in (n for n, ok in enumerate(rated) if not ok):
            d_count[n] = d_time[n] = d_affected[n] = d_sent[n] = 0
    edge = previous.wall_time - NEW_ROW_SLACK
    for n in new:  # new since the previous reading: all its counts are from the interval
        rated[n] = first[n] >= edge
        d_count[n], d_time[n] = (count[n], sum_time[n]) if rated[n] else (0, 0)
        d_affected[n], d_sent[n] = (affected[n], sent[n]) if rated[n] else (0, 0)
    return Deltas(rated, d_count, d_time, d_affected, d_sent)


def _deltas_one_by_one(previous: Parsed, current: Parsed) -> Deltas:
    rated: List[bool] = []
    columns: List[List[int]] = [[], [], [], []]
    index, wall = previous.index, previous.wall_time
    for n, key in enumerate(current.keys):
        m = index.get(key)
        delta = _delta(previous.entry(m) if m is not None else None, current.entry(n), wall)
        rated.append(delta is not None)
        for values, value in zip(columns, delta or (0, 0, 0, 0)):
            values.append(value)
    return Deltas(rated, *columns)


class DigestIds(SequenceABC):
    """Each row's group under the digest grouping, ``(digest,)``, made when asked for: a list
    of them held for 20,000 digests was a megabyte."""

    __slots__ = ("keys",)

    def __init__(self, keys: Sequence[RowKey]):
        self.keys = keys

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, n):
        if isinstance(n, slice):
            return [(key[4],) for key in self.keys[n]]
        return (self.keys[n][4],)

    def __iter__(self) -> Iterator[tuple]:
        return zip(map(itemgetter(4), self.keys))

    def in_order(self, rows: Iterable[int]) -> Iterator[tuple]:
        """The ids of ``rows``, in C."""
        return zip(map(itemgetter(4), map(self.keys.__getitem__, rows)))

    def index(self, group: Any, start: int = 0, stop: int = 2 ** 63) -> int:  # type: ignore[override]
        """Where ``group`` is (ValueError when it is not one of them), the digests searched in C."""
        if not isinstance(group, tuple) or len(group) != 1:
            raise ValueError(f"{group!r} is not a digest group")
        return list(map(itemgetter(4), self.keys)).index(group[0], start, stop)


# [keys, grouping, groups, whether every row is a group of its own (None: not known yet)]
_groups_memo: List[list] = []


def _grouping(current: Parsed, fields: Sequence[str]) -> list:
    keys, fields = current.keys, tuple(fields)
    for entry in _groups_memo:
        if entry[0] is keys and entry[1] == fields:
            return entry
    groups: Sequence[tuple] = DigestIds(keys) if not fields else \
        list(zip(map(itemgetter(4), keys), *(map(itemgetter(_FIELD_AT[name]), keys) for name in fields)))
    entry = [keys, fields, groups, None]
    _groups_memo[:] = _groups_memo[-1:] + [entry]
    return entry


def _groups(current: Parsed, fields: Sequence[str]) -> Sequence[tuple]:
    """Each row's group under a grouping: (digest,) plus the grouping's fields; made once
    for the keys that readings of the same rows share."""
    return _grouping(current, fields)[2]


def _members(current: Parsed, fields: Sequence[str], groups: Optional[Sequence[tuple]] = None) \
        -> Optional[Dict[tuple, List[int]]]:
    """{group: its rows} under a grouping; None when every row is a group of its own (found
    once for the keys that readings of the same rows share)."""
    entry = _grouping(current, fields)
    groups = entry[2] if groups is None else groups
    if groups is entry[2] and entry[3] is not None:
        unique = entry[3]
    else:
        values = list(map(itemgetter(4), current.keys)) if isinstance(groups, DigestIds) else groups
        unique = len(set(values)) == len(values)
        if groups is entry[2]:
            entry[3] = unique
    if unique:
        return None
    members: Dict[tuple, List[int]] = {}
    for n, group in enumerate(groups):
        rows = members.get(group)
        if rows is None:
            members[group] = [n]
        else:
            rows.append(n)
    return members


def digest_rows(previous: Optional[Parsed], current: Optional[Parsed], seconds: Optional[float],
                fields: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """One row per group (see GROUPINGS) with rates per second and times in milliseconds.

    count_s, time_s (ms of query time per second), share (% of all time_s), avg_ms (over the
    interval), avg_life_ms (since first seen), min_ms / max_ms (lifetime), sent_s, affected_s,
    last_seen / first_seen (epoch s), seen_ago (s from last_seen to the reading), count
    (lifetime). A group whose rows were all reset has no rates. Rows come heaviest (lifetime
    sum_time) first, so that a sort on a column without values yet (the first reading) still
    shows the heavy digests on top.
    """
    if current is None:
        return []
    members = _members(current, fields)
    if members is None:  # every row a group of its own (the usual case at scale)
        return digest_columns(previous, current, seconds, fields).rows()  # type: ignore[union-attr]
    rated = seconds is not None and seconds > 0 and previous is not None
    change = deltas(previous, current) if rated else None  # type: ignore[arg-type]
    groups = [_single(current, rows[0], change, fields) if len(rows) == 1 else
              _group(current, group, rows, change) for group, rows in members.items()]
    texts = current.texts
    rows: List[Dict[str, Any]] = []
    weights: List[int] = []
    total_time = 0.0
    for group, count, sum_time, low, high, last, first, hostgroup, user, schema, delta in groups:
        digest = group[0]
        text = texts.get(digest)
        has_rate = delta is not None
        time_s = delta[1] / 1000.0 / seconds if has_rate else None  # type: ignore[operator]
        d_count = delta[0] if has_rate else 0
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
            "avg_ms": (delta[1] / d_count / 1000.0 if d_count else None) if has_rate else None,
            "avg_life_ms": sum_time / count / 1000.0 if count else None,
            "min_ms": low / 1000.0 if low is not None else None,
            "max_ms": high / 1000.0 if high is not None else None,
            "sent_s": delta[3] / seconds if has_rate else None,
            "affected_s": delta[2] / seconds if has_rate else None,
            "last_seen": last,
            "first_seen": first,
            "count": count,
            "seen_ago": max(0.0, current.wall_time - last) if last is not None else None,
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


ROW_KEYS = ("_id", "digest", "text", "hg", "user", "schema", "count_s", "time_s", "share", "avg_ms", "avg_life_ms",
            "min_ms", "max_ms", "sent_s", "affected_s", "last_seen", "first_seen", "count", "seen_ago")


_RATES = {"count_s": "count", "sent_s": "sent", "affected_s": "affected", "time_s": "sum_time", "share": "sum_time"}


class DigestColumns:
    """digest_rows when each row of the reading is a group of its own (the usual case at
    scale), row n computed when asked for: :meth:`row` builds one row, :meth:`column` one
    figure of every row (to sort on), ``order`` is the rows heaviest first. A screen can sort
    20,000 rows on one column and build the few dozen it shows."""

    def __init__(self, current: Parsed, change: Optional[Deltas], seconds: Optional[float], groups: List[tuple]):
        self.current = current
        self.change = change
        self.seconds = seconds
        self.ids = groups
        columns = current.columns
        self._count = columns[COUNT] if current.plain else _or(columns[COUNT], 0)
        self._sum_time = columns[SUM_TIME] if current.plain else _or(columns[SUM_TIME], 0)
        self._lines = _lines_of(current.texts)
        self._labels: Dict[str, str] = {}
        self.total_time = 0.0
        if change is not None:
            # the integers added up in C, then scaled once
            self.total_time = sum(compress(change.sum_time, change.rated)) / 1000.0 / seconds  # type: ignore[operator]
        self.order = heaviest_first(current)

    def __len__(self) -> int:
        return len(self.order)

    def row(self, n: int) -> Dict[str, Any]:
        """Row n, as digest_rows gives it."""
        key = self.current.keys[n]
        columns = self.current.columns
        count, sum_time = self._count[n], self._sum_time[n]
        low, high, last, first = columns[MIN][n], columns[MAX][n], columns[LAST][n], columns[FIRST][n]
        last = None if last == MISSING else last
        label = self._labels.get(key[0])
        if label is None:
            label = self._labels[key[0]] = hostgroup_label(key[0])
        row = {"_id": self.ids[n], "digest": key[4], "text": self._lines.get(key[4]), "hg": label, "user": key[2],
               "schema": key[1], "count_s": None, "time_s": None, "share": None, "avg_ms": None,
               "avg_life_ms": sum_time / count / 1000.0 if count else None,
               "min_ms": low / 1000.0 if count and low != MISSING else None,
               "max_ms": None if high == MISSING else high / 1000.0,
               "sent_s": None, "affected_s": None, "last_seen": last,
               "first_seen": None if first == MISSING else first, "count": count,
               "seen_ago": (self.current.wall_time - last if last < self.current.wall_time else 0.0)
               if last is not None else None}
        change, seconds = self.change, self.seconds
        if change is not None and change.rated[n]:
            d_count, d_time = change.count[n], change.sum_time[n]
            time_s = d_time / 1000.0 / seconds  # type: ignore[operator]
            row.update(count_s=d_count / seconds, time_s=time_s,  # type: ignore[operator]
                       share=100.0 * time_s / self.total_time if self.total_time > 0 else None,
                       avg_ms=d_time / d_count / 1000.0 if d_count else None,
                       sent_s=change.sent[n] / seconds, affected_s=change.affected[n] / seconds)  # type: ignore[operator]
        if row["text"] is None:
            row["_style"] = "dim"
        return row

    def column(self, key: str) -> List[Any]:
        """One figure of every row (row n's at n), for sorting: the interval's rates straight
        from the deltas, the others row by row."""
        size = len(self.order)
        change, seconds = self.change, self.seconds
        if key in _RATES:
            if change is None:
                return [None] * size
            if key in ("time_s", "share"):
                # d / 1000.0 / seconds, as row() works it out, every row at once in C
                times = _unrated_none(list(map(truediv, map(truediv, change.sum_time, repeat(1000.0)),
                                               repeat(seconds))), change.rated)
                if key == "time_s":
                    return times
                total = self.total_time
                return [100.0 * t / total if t is not None and total > 0 else None for t in times]
            source = getattr(change, _RATES[key])
            return _unrated_none(list(map(truediv, source, repeat(seconds))), change.rated)
        if key == "count":
            return list(self._count)
        return [self.row(n).get(key) for n in range(size)]

    def rows(self) -> List[Dict[str, Any]]:
        """Every row, heaviest first."""
        return [self.row(n) for n in self.order]


def digest_columns(previous: Optional[Parsed], current: Parsed, seconds: Optional[float],
                   fields: Sequence[str] = ()) -> Optional[DigestColumns]:
    """:func:`digest_rows` as a DigestColumns; None when a group has several rows."""
    groups = _groups(current, fields)
    if _members(current, fields, groups) is not None:
        return None
    rated = seconds is not None and seconds > 0 and previous is not None
    change = deltas(previous, current) if rated else None  # type: ignore[arg-type]
    return DigestColumns(current, change, seconds, groups)


def _unrated_none(values: List[Any], rated: Sequence[bool]) -> List[Any]:
    """``values`` with None for the rows that have no rate.

    >>> _unrated_none([1.0, 2.0, 3.0], [True, False, True])
    [1.0, None, 3.0]
    """
    if not all(rated):
        for n in compress(range(len(values)), map(not_, rated)):
            values[n] = None
    return values


def _or(column: array, default: Any) -> Sequence[Any]:
    """A column with MISSING as ``default``."""
    if MISSING not in column:
        return column
    return [default if v == MISSING else v for v in column]


_lines_memo: List[Tuple[Mapping[str, Optional[str]], Dict[str, Optional[str]]]] = []


def _lines_of(texts: Mapping[str, Optional[str]]) -> Dict[str, Optional[str]]:
    """{digest: its one-line text}, once per texts mapping (readings share an unchanged one)."""
    for seen, lines in _lines_memo:
        if seen is texts:
            return lines
    grown = getattr(texts, "grown_from", None)
    base = grown[0]() if grown is not None else None
    for seen, base_lines in _lines_memo:
        if base is not None and seen is base:  # a few digests added to texts already made into lines
            added = {digest: _line(texts[digest]) for digest in grown[1]}  # type: ignore[index]
            if base_lines is base and all(added[digest] is texts[digest] for digest in added):
                lines = texts  # type: ignore[assignment]
            else:
                lines = dict(base_lines)
                lines.update(added)
            _lines_memo[:] = _lines_memo[-1:] + [(texts, lines)]
            return lines
    lines = {digest: _line(text) for digest, text in texts.items()}
    if all(map(is_, lines.values(), texts.values())):  # every text one line already (the usual case)
        lines = texts  # type: ignore[assignment]  # (no second dict of 20,000 digests)
    _lines_memo[:] = _lines_memo[-1:] + [(texts, lines)]
    return lines


def _single(current: Parsed, n: int, change: Optional[Deltas], fields: Sequence[str]) -> tuple:
    """A group of one row: (group, count, sum_time, min, max, last, first, hg, user, schema, delta)."""
    key = current.keys[n]
    count, sum_time, first, last, low, high, _affected, _sent = current.entry(n)
    count, sum_time = count or 0, sum_time or 0
    delta = None
    if change is not None and change.rated[n]:
        delta = (change.count[n], change.sum_time[n], change.affected[n], change.sent[n])
    group = (key[4],) + tuple(key[_FIELD_AT[name]] for name in fields)
    return (group, count, sum_time, low if count else None, high, last, first, hostgroup_label(key[0]), key[2],
            key[1], delta)


def _group(current: Parsed, group: tuple, members: List[int], change: Optional[Deltas]) -> tuple:
    """A group of several rows: their counters added up (min of mins, max of maxes...)."""
    count = sum_time = d_count = d_time = d_affected = d_sent = rated_rows = 0
    low = high = last = first = None
    for n in members:
        entry = current.entry(n)
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
        if change is not None and change.rated[n]:
            d_count += change.count[n]
            d_time += change.sum_time[n]
            d_affected += change.affected[n]
            d_sent += change.sent[n]
            rated_rows += 1
    keys = [current.keys[n] for n in members]
    delta = (d_count, d_time, d_affected, d_sent) if rated_rows else None
    return (group, count, sum_time, low, high, last, first, hostgroups_text({k[0] for k in keys}),
            ",".join(sorted({k[2] for k in keys})), ",".join(sorted({k[1] for k in keys})), delta)


def _delta(before: Optional[Entry], now: Entry, previous_wall: Optional[float]) -> Optional[Tuple[int, int, int, int]]:
    """(Δcount, Δsum_time, Δaffected, Δsent) of one row, or None: row_delta, the usual case inline."""
    if before is not None:
        count, sum_time, old_count, old_time = now[COUNT], now[SUM_TIME], before[COUNT], before[SUM_TIME]
        if not first_seen_kept(before[FIRST], now[FIRST]) or count is None or sum_time is None or old_count is None \
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
        line = one_line(text)
        if line == text:
            line = text  # already one line (most digest texts): one str, not two
        _lines[text] = line
    return line


def split(previous: Optional[Parsed], current: Parsed, digest: str, seconds: Optional[float]) \
        -> Dict[str, List[Tuple[str, float, float]]]:
    """The last interval of one digest, split by hostgroup, user, schema and client address:
    {field: [(value, count/s, time ms/s)]}, largest time first."""
    result: Dict[str, Dict[str, List[float]]] = {name: {} for name in ("hostgroup", "username", "schemaname",
                                                                         "client_address")}
    if previous is None or not seconds:
        return {name: [] for name in result}
    for n, key in enumerate(current.keys):
        if key[4] != digest:
            continue
        m = previous.index.get(key)
        delta = row_delta(previous.entry(m) if m is not None else None, current.entry(n), previous.wall_time)
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
    rows added up, and the latest first_seen of its rows (a signature: it moves past ProxySQL's
    jitter when a row resets, to that row's next query, or when a row is added).
    ``position`` (digest -> index) is shared by the readings of an unchanged digest set, the
    figures are arrays: 20,000 digests take about 320 KB per reading instead of megabytes.

    Most kept readings store sum_time as 32-bit differences from an earlier one with full
    figures (``keyframe``, at most KEYFRAME_EVERY readings back; first_seen is shared while
    unchanged): about 80 KB per reading at 20,000 digests."""

    position: Mapping[str, int]
    sum_time: array  # full figures, or the differences from keyframe's
    first_seen: array
    wall_time: float
    keyframe: Optional["DigestTotals"] = None
    since_keyframe: int = 0

    def get(self, digest: str) -> Tuple[Optional[int], Optional[int]]:
        at = self.position.get(digest)
        if at is None:
            return None, None
        if self.keyframe is not None:
            return self.keyframe.sum_time[at] + self.sum_time[at], self.first_seen[at]
        return self.sum_time[at], self.first_seen[at]


KEYFRAME_EVERY = 12  # kept readings share one with full figures, the others keep differences


def totals(parsed: Parsed, position: Optional[Mapping[str, int]] = None,
           before: Optional[DigestTotals] = None) -> DigestTotals:
    """Per-digest totals of a reading; ``position`` is reused when the digests are the same,
    and the first_seen figures of ``before`` (the totals kept before) when they are the same:
    first_seen moves only when a row resets (beyond ProxySQL's jitter), so most kept readings
    share one array."""
    sum_time, first_seen = parsed.columns[SUM_TIME], parsed.columns[FIRST]
    known = _positions.get(parsed.keys)
    if known is not None and (position is None or known is position):  # the same rows as the last reading shrunk
        # a plain reading's columns are never changed once made: the totals share them
        sum_time = sum_time if parsed.plain else _no_missing(sum_time)
        first_seen = first_seen if parsed.plain else _no_missing(first_seen)
        return shared_with(DigestTotals(known, sum_time, first_seen, parsed.wall_time), before)
    digests = [key[4] for key in parsed.keys]
    if len(set(digests)) == len(digests):  # one row per digest: the columns are the totals
        if position is None or len(position) != len(digests) or any(map(ne, map(position.get, digests),
                                                                         range(len(digests)))):
            position = dict(zip(digests, range(len(digests))))
        _positions.set(parsed.keys, position)
        kept = DigestTotals(position, _no_missing(sum_time), _no_missing(first_seen), parsed.wall_time)
    else:
        sums: Dict[str, int] = {}
        firsts: Dict[str, int] = {}
        for digest, spent, first in zip(digests, sum_time, first_seen):
            sums[digest] = sums.get(digest, 0) + (spent if spent != MISSING else 0)
            firsts[digest] = max(firsts.get(digest, 0), first if first != MISSING else 0)
        kept = _totals(sums, firsts, position, parsed.wall_time)
    return shared_with(kept, before)


class _KeptPosition:
    """The position (digest -> index) made for the row keys of the last reading shrunk, when
    each row was a digest of its own: the next readings share those keys (parse lends them)."""

    def __init__(self):
        self._kept: Tuple[Optional[tuple], Optional[Mapping[str, int]]] = (None, None)  # one object: read whole

    def get(self, keys: tuple) -> Optional[Mapping[str, int]]:
        kept_keys, position = self._kept
        return position if keys is kept_keys else None

    def set(self, keys: tuple, position: Mapping[str, int]) -> None:
        self._kept = (keys, position)


_positions = _KeptPosition()


def shared_with(kept: DigestTotals, before: Optional[DigestTotals]) -> DigestTotals:
    """``kept`` (full figures) with the first_seen array of ``before`` when the two are equal,
    and its sum_time as differences from the keyframe of ``before`` when the digests are the
    same and every difference fits in 32 bits.

    >>> one = {"0x1": 0}
    >>> a = DigestTotals(one, array("q", [1000]), array("q", [100]), 0.0)
    >>> b = shared_with(DigestTotals(one, array("q", [2000]), array("q", [100]), 5.0), a)
    >>> b.first_seen is a.first_seen, b.keyframe is a, b.sum_time, b.get("0x1")
    (True, True, array('i', [1000]), (2000, 100))
    """
    if before is None or before.position is not kept.position:
        return kept
    # within ProxySQL's jitter the older array stands for both (every reading's is within a
    # second of the true figure), so that most kept readings share one
    first_seen = before.first_seen if kept.first_seen is before.first_seen or len(before.first_seen) == len(
        kept.first_seen) and all(_firsts_kept(before.first_seen, kept.first_seen)) else kept.first_seen
    keyframe = before.keyframe or before
    since = before.since_keyframe + 1
    if since < KEYFRAME_EVERY:
        try:
            differences = array("i", map(sub, kept.sum_time, keyframe.sum_time))
        except OverflowError:  # a digest moved by more than 2**31 µs since: full figures again
            pass
        else:
            return DigestTotals(kept.position, differences, first_seen, kept.wall_time, keyframe, since)
    return DigestTotals(kept.position, kept.sum_time, first_seen, kept.wall_time)


def _no_missing(column: array) -> array:
    """A copy of a column with MISSING (NULL) as 0."""
    if MISSING not in column:
        return array("q", column)
    return array("q", (0 if v == MISSING else v for v in column))


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
        elif s1 < s0 or not first_seen_kept(f0, f1):
            series.append(None)
        else:
            series.append((s1 - s0) / 1000.0 / (t1 - t0))
    return series
