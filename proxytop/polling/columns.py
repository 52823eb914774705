"""A text-protocol result read from PyMySQL's row packets straight into columns.

The digest table (20,000 rows of 14 values) and the processlist (10,000 sessions of 16) are
the largest results proxytop reads. Read as rows, every value costs a few Python steps to
slice, decode into str and (for counters) parse into int, and the tuples of str take tens of
megabytes for a moment. Read here:

* the row packets already in the connection's read buffer are taken from it in place (no
  read call per packet), and each row is split once into its head (key and text values) and
  its numeric tail (the counters at the end of a digest row), both kept as sent: a reader
  with a previous reading compares them whole and converts only the rows that changed;
* counters are parsed all at once: the rows' tails are joined, their length bytes turned
  into commas and the block read by one ``json.loads`` into an ``array('q')`` per column,
  after checking that every length byte matches the run of digits after it;
* a text column is split out of the heads when first asked for and decoded value by value,
  except that a column of few distinct values (users, hosts, schemas, commands) decodes each
  distinct value once and shares one str per short value across readings.

Anything unusual in the counters (NULL, a sign, leading zeros, a number beyond 64 bits)
takes the value-by-value path, with the same result as reading rows. All server access is
still PyMySQL's: its connection sends the query and reads the column definitions, and every
packet's sequence number is checked as PyMySQL checks it.
"""
from __future__ import annotations

import gc
import hashlib
import json
import re
import weakref
from array import array
from typing import Dict, List, Optional, Sequence, Tuple

from pymysql.constants import COMMAND

from proxytop.collectors.base import Table
from proxytop.polling.textrows import SHARED_UP_TO, DescribedOnce, row_payloads, text

_NUMBER_DIGITS = 20  # the longest decimal an unsigned 64-bit counter has
_DIGITS = b"0123456789"
# Length bytes of short decimals become commas; anything else that is no digit becomes "!"
# (a NULL, a sign, a longer value): the block is then not plain decimals.
_SEPARATORS = bytes(b",!"[0 if n <= _NUMBER_DIGITS else 1] if n not in _DIGITS else n for n in range(256))
# A block of plain decimals, value by value: the length byte n (0 to 20), then n digits; the
# commonest lengths first (epoch seconds have 10 digits).
_PLAIN_BLOCK = re.compile(b"(?:%s)*" % b"|".join(
    re.escape(bytes((n,))) + b"[0-9]{%d}" % n for n in (10, 1, 2, 3, 4, 5, 6, 7, 8, 9) + tuple(range(11, 21)) + (0,)))
_INT64_MAX = 2 ** 63 - 1
_SHARED_DISTINCT = 64  # a text column with at most this many distinct values shares them
_shared_text: Dict[str, str] = {}
_SHARED_LIMIT = 20_000


class Columns:
    """One result as columns: ``names``, ``count`` rows; :meth:`texts` and :meth:`numbers`
    give one column, :meth:`table` the rows as ``session.query`` gives them.

    Each row is kept as sent, in two parts: ``heads`` (its values before the numeric tail,
    all of them when there is none) and ``tails`` (the numeric tail, or None). A reader that
    keeps a previous reading can compare them whole (in C) and convert only the rows that
    changed; the columns are split out of them when first asked for."""

    def __init__(self, names: Sequence[str], heads: List[bytes], tails: Optional[List[bytes]] = None,
                 tail_width: int = 0, converters: Sequence[tuple] = (), heads_digest: Optional[bytes] = None):
        self.names = tuple(names)
        self.heads_digest = heads_digest  # rows_digest(heads), when the reader worked it out
        self.count = len(heads)
        self.heads = heads
        self.tails = tails if tail_width else None
        self.tail_width = tail_width if tails is not None else 0
        self._converters = converters
        self._at = {name: i for i, name in enumerate(self.names)}
        self._raw: Dict[int, List[Optional[bytes]]] = {}
        self._numbers: Optional[Dict[int, array]] = None

    @property
    def head_width(self) -> int:
        return len(self.names) - self.tail_width

    def has(self, name: str) -> bool:
        return name in self._at

    def numbers(self, name: str) -> Optional[array]:
        """Column ``name`` as int64 when it is in the numeric tail and every value of the tail
        is a plain decimal (no NULL, sign or leading zero: str() of each gives the text back);
        None otherwise (read :meth:`texts`)."""
        i = self._at.get(name, -1)
        if i < self.head_width:
            return None
        if self._numbers is None:
            parsed = decimals_to_columns(b"".join(self.tails), self.tail_width) if self.count else \
                [array("q") for _ in range(self.tail_width)]
            self._numbers = {} if parsed is None else dict(zip(range(self.head_width, len(self.names)), parsed))
        return self._numbers.get(i)

    def raw(self, name: str) -> List[Optional[bytes]]:
        """Column ``name`` as sent (bytes, None for NULL)."""
        i = self._at.get(name)
        if i is None:
            return [None] * self.count
        if i not in self._raw:
            head = i < self.head_width
            first, width = (0, self.head_width) if head else (self.head_width, self.tail_width)
            split = split_values(self.heads if head else self.tails or (), width)
            self._raw.update(zip(range(first, first + width), split))
        return self._raw[i]

    def split(self, names: Sequence[str]) -> None:
        """Split out only the head columns ``names`` (one walk of each row that stops after the
        last of them): a reader of a few columns of a wide result skips the others."""
        wanted = sorted({self._at[name] for name in names if name in self._at} - set(self._raw))
        wanted = [i for i in wanted if i < self.head_width]
        if not wanted:
            return
        picked = split_some(self.heads, wanted)
        self._raw.update(zip(wanted, picked))

    def row_raw(self, n: int) -> List[Optional[bytes]]:
        """Row ``n``'s head values as sent (bytes, None for NULL), from its packet alone."""
        values: List[Optional[bytes]] = []
        _walk(self.heads[n], 0, [values.append] * self.head_width)
        return values

    def texts(self, name: str) -> List[Optional[str]]:
        """Column ``name`` as str (None for NULL); PyMySQL's converter applied to a typed column."""
        i = self._at.get(name)
        if i is None:
            return [None] * self.count
        encoding, converter = self._converters[i] if i < len(self._converters) else (None, None)
        if converter is not None or encoding is not None:
            return [_converted(v, encoding, converter) for v in self.raw(name)]
        numbers = self.numbers(name)
        if numbers is not None:
            return list(map(str, numbers))
        return decode_column(self.raw(name))

    def table(self) -> Table:
        """The rows as tuples, as a row-by-row read gives them."""
        columns = [self.texts(name) for name in self.names]
        # 10,000 new tuples would set off the cyclic garbage collector several times over,
        # each pass walking every object the program holds; tuples of str hold no cycles
        enabled = gc.isenabled()
        gc.disable()
        try:
            rows = tuple(zip(*columns)) if columns else ()
        finally:
            if enabled:
                gc.enable()
        return Table(self.names, rows)


class ColumnsTable(Table):
    """A :class:`Table` over :class:`Columns`: the same ``columns`` and ``rows`` (zipped when
    first read: batch output, recordings), while a screen that reads a few columns of a large
    result asks for them alone (:meth:`texts`, :meth:`ints`) or for one row (:meth:`row`), and
    the columns it never reads are never decoded."""

    def __init__(self, source: Columns):
        object.__setattr__(self, "columns", source.names)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "_texts", {})
        object.__setattr__(self, "_ints", {})
        object.__setattr__(self, "_rows", None)
        object.__setattr__(self, "_row_plan", None)

    @property
    def rows(self) -> Tuple[tuple, ...]:  # type: ignore[override]
        if self._rows is None:
            object.__setattr__(self, "_rows", self.source.table().rows)
        return self._rows

    def __eq__(self, other) -> bool:  # equal to the Table a row-by-row read gives
        if not isinstance(other, Table):
            return NotImplemented
        return self.columns == other.columns and self.rows == other.rows

    __hash__ = Table.__hash__

    def texts(self, name: str) -> List[Optional[str]]:
        """Column ``name`` as str (None for NULL, and for a column the result lacks), decoded once."""
        values = self._texts.get(name)
        if values is None:
            values = self._texts[name] = self.source.texts(name)
        return values

    def ints(self, name: str) -> Optional[List[int]]:
        """Column ``name`` as ints when every value is a decimal int() reads as it reads the
        text (no NULL); None otherwise. Converted once."""
        if name in self._ints:
            return self._ints[name]
        values: Optional[List[int]] = None
        numbers = self.source.numbers(name) if self.source.has(name) else None
        if numbers is not None:
            values = list(numbers)
        elif self.source.has(name):
            try:
                values = list(map(int, self.source.raw(name)))
            except (TypeError, ValueError):  # a NULL, a word, a digit int() reads only as text
                pass
        self._ints[name] = values
        return values

    def read(self, names: Sequence[str]) -> None:
        """Split out the columns ``names`` alone, ahead of :meth:`texts` or :meth:`ints` on them."""
        self.source.split(names)

    def row(self, n: int) -> tuple:
        """Row ``n`` as ``rows[n]`` gives it, from its own packet (a row shown, its query text
        decoded then), without splitting or zipping the others."""
        if self._rows is not None:
            return self._rows[n]
        plan = self._row_plan
        if plan is None:
            plan = self._plan_rows()
        head = self.source.row_raw(n)
        values = []
        kept = self._texts.get
        for i, name, whole in plan:
            known = kept(name)  # a column decoded whole already (the screen counts or sorts on it)
            if known is not None:
                values.append(known[n])
            elif whole:
                values.append(self.texts(name)[n])
            else:
                raw = head[i]
                values.append(None if raw is None else raw.decode("utf-8", "replace"))
        return tuple(values)

    def _plan_rows(self) -> List[Tuple[int, str, bool]]:
        """(index, name, read whole) of each column, for :meth:`row`: a column of the numeric
        tail, or a typed one (PyMySQL's converter), is read as a whole column; the others from
        the row's own packet. Worked out once per reading, not for every row shown."""
        source = self.source
        head_width, converters = source.head_width, source._converters
        plan = []
        for i, name in enumerate(self.columns):
            encoding, converter = converters[i] if i < len(converters) else (None, None)
            plan.append((i, name, i >= head_width or converter is not None or encoding is not None))
        object.__setattr__(self, "_row_plan", plan)
        return plan


def _converted(value: Optional[bytes], encoding, converter):
    if value is None:
        return None
    if encoding is not None:
        value = value.decode(encoding)
    if converter is not None:
        value = converter(value)
    return text(value) if value.__class__ is bytes else value


def decode_column(values: List[Optional[bytes]]) -> List[Optional[str]]:
    """UTF-8 (undecodable bytes replaced) of every value; a column of few distinct values
    decodes each once and shares the short ones across readings (users, hosts, commands).

    >>> decode_column([b"app", None, b"caf\\xc3\\xa9", b"\\xff", b"", b"app"])
    ['app', None, 'café', '\\ufffd', '', 'app']
    """
    # the first values tell a column of many distinct values (ids, queries) without hashing them all
    distinct = dict.fromkeys(values[:_SHARED_DISTINCT * 2])
    if len(distinct) <= _SHARED_DISTINCT:
        distinct = dict.fromkeys(values)
    if len(distinct) > _SHARED_DISTINCT:
        return [None if v is None else v.decode("utf-8", "replace") for v in values]
    if len(_shared_text) >= _SHARED_LIMIT:
        _shared_text.clear()
    for raw in distinct:
        if raw is not None:
            value = raw.decode("utf-8", "replace")
            distinct[raw] = _shared_text.setdefault(value, value) if len(value) <= SHARED_UP_TO else value
    return list(map(distinct.__getitem__, values))


def plain_decimals(block: bytes) -> Optional[Tuple[bytes, int]]:
    """``block`` (length-encoded strings) with every length byte turned into a comma, and the
    number of values, when every value is a plain decimal of 0 to 20 digits; None otherwise.

    >>> plain_decimals(b"\\x0212\\x010\\x03900")
    (b',12,0,900', 3)
    >>> plain_decimals(b"\\x02-1"), plain_decimals(b"\\xfb"), plain_decimals(b"\\x0212\\x01"), plain_decimals(b"")
    (None, None, None, None)
    """
    # each length byte must be the length of the run of digits after it: then reading the
    # block by its length bytes gives exactly these runs (one C pass, no object per value)
    if not block or _PLAIN_BLOCK.fullmatch(block) is None:
        return None
    marked = block.translate(_SEPARATORS)
    return marked, marked.count(b",")


def decimals_to_lists(block: bytes, width: int, rows: Optional[int] = None) -> Optional[List[List[int]]]:
    """``width`` columns of ints from a block of rows of ``width`` plain-decimal values (see
    :func:`plain_decimals`), or None when a value is not one (an empty value, a leading zero,
    a number beyond int64). Given the number of ``rows``, the block is checked by its counts
    (see :func:`counted_decimals`) rather than value by value.

    >>> decimals_to_lists(b"\\x0212\\x010\\x013\\x014", 2)
    [[12, 3], [0, 4]]
    >>> decimals_to_lists(b"\\x0201", 1), decimals_to_lists(b"\\x00", 1), decimals_to_lists(b"\\x011", 2)
    (None, None, None)
    >>> decimals_to_lists(b"\\x139223372036854775807", 1), decimals_to_lists(b"\\x139223372036854775808", 1)
    ([[9223372036854775807]], None)
    >>> decimals_to_lists(b"\\x0212\\x010\\x013\\x014", 2, rows=2), decimals_to_lists(b"\\x0212\\x010\\x013\\x014", 2, rows=1)
    ([[12, 3], [0, 4]], None)
    """
    values = _decimals(block, width, rows)
    return None if values is None else [values[c::width] for c in range(width)]


def counted_decimals(block: bytes, count: int) -> Optional[bytes]:
    """``block`` with every length byte turned into a comma when it holds ``count`` values that
    are plain decimals of at most 20 digits, checked by counts alone (no pass per value):
    every byte is a digit or a length byte (0 to 20), the block starts with one, there are
    ``count`` of them, and they add up to the number of digits. (A value whose length byte is
    a digit, 48 bytes or more, would need 49 or more in bytes below 21 among its own to add up,
    three of them at least, and then there would be more than ``count`` values.)

    >>> counted_decimals(b"\\x0212\\x010\\x03900", 3)
    b',12,0,900'
    >>> counted_decimals(b"\\x0212\\x010", 3), counted_decimals(b"\\x0312\\x010", 2), counted_decimals(b"\\x02-1", 1)
    (None, None, None)
    """
    marked = block.translate(_SEPARATORS)
    if not marked.startswith(b",") or b"!" in marked:
        return None
    lengths = block.translate(None, _DIGITS)
    if len(lengths) != count or sum(lengths) != len(block) - count:
        return None
    return marked


def decimals_to_columns(block: bytes, width: int) -> Optional[List[array]]:
    """:func:`decimals_to_lists` as int64 arrays.

    >>> [list(c) for c in decimals_to_columns(b"\\x0212\\x010\\x013\\x014", 2)]
    [[12, 3], [0, 4]]
    >>> decimals_to_columns(b"\\x0201", 1), decimals_to_columns(b"\\x00", 1), decimals_to_columns(b"\\x011", 2)
    (None, None, None)
    """
    values = _decimals(block, width)
    if values is None:
        return None
    numbers = array("q", values)
    return [numbers[c::width] for c in range(width)]


def _decimals(block: bytes, width: int, rows: Optional[int] = None) -> Optional[List[int]]:
    if rows is not None:
        marked = counted_decimals(block, width * rows) if rows and width else None
        found = None if marked is None else (marked, width * rows)
    else:
        found = plain_decimals(block)
    if found is None or not width or found[1] % width:
        return None
    marked = found[0]
    try:
        # one C parse of every number; JSON has no leading zeros and no empty numbers
        values = json.loads(b"[" + marked[1:] + b"]")
    except ValueError:
        return None
    if len(values) != found[1]:  # a lone empty value reads as no value at all
        return None
    # beyond int64: 19 digits or more (no sign: none is below 0)
    if values and max(block.translate(None, _DIGITS)) >= 19 and max(values) > _INT64_MAX:
        return None
    return values


class ColumnsResult(DescribedOnce):
    """PyMySQL's result, with the row packets kept as :class:`Columns`: each row split once
    into its head and its numeric tail (the last columns, as long as they are ``numeric``
    ones and untyped)."""

    def __init__(self, connection, numeric: Sequence[str] = ()):
        super().__init__(connection)
        self.numeric = numeric
        self.columns: Optional[Columns] = None

    def _read_rowdata_packet(self):
        conn = self.connection
        names = tuple(_name(field.name) for field in self.fields)
        tail = count_columns(names, self.numeric)
        if any(converter is not None or encoding is not None for encoding, converter in self.converters[len(names) - tail:]):
            tail = 0  # typed columns: PyMySQL's converters decide
        heads: List[bytes] = []
        tails: Optional[List[bytes]] = [] if tail else None
        self._names = names
        digest = self._read_rows(conn, len(names) - tail, heads, tails)
        self.connection = None
        self.columns = Columns(names, heads, tails, tail, self.converters, digest)
        self.affected_rows = len(heads)
        self.rows = ()

    def _read_rows(self, conn, width: int, heads: List[bytes], tails: Optional[List[bytes]]) -> Optional[bytes]:
        """Row packets until the EOF packet: the first ``width`` values of each row into
        ``heads``, the rest into ``tails`` (when given, else whole rows into ``heads``).

        With tails, returns :func:`rows_digest` of the heads. Each row is cut where its row
        of the last result of these columns on this connection was cut, when the head that
        gives is that row's (their hash() agree: 64 bits, a wrong match about once in 10^15
        rows); the digest's rows come back in the same order while ProxySQL's digest map is
        unchanged, and a new digest shifts the rows after it, which are followed. Only a
        new or changed row has its values walked."""
        keep_head = heads.append
        if tails is None:
            heads.extend(row_payloads(self, conn))
            return None
        keep_tail = tails.append
        seen = _heads_seen.get(conn)
        lengths, hashes = seen[2:] if seen is not None and seen[:2] == (self._names, width) else ((), ())
        count = len(lengths)
        rows_before: Optional[Dict[int, int]] = None  # hash -> row of the last result, made when needed
        shift = 0  # this row's position minus its row's position in the last result
        head_range = range(width)
        n = -1
        for data in row_payloads(self, conn):
            n += 1
            m = n - shift
            if 0 <= m < count:
                position = lengths[m]
                head = data[:position]
                if hash(head) == hashes[m]:  # its row of the last result: cut there
                    keep_head(head)
                    keep_tail(data[position:])
                    continue
            position = 0
            try:
                for _ in head_range:  # short values, the usual case, stepped over inline
                    size = data[position]
                    if size >= 251:
                        raise IndexError
                    position += size + 1
                if position > len(data):
                    raise IndexError
            except IndexError:  # NULL, a long value or a row that ends early
                position = _skip(data, 0, width)
            head = data[:position]
            keep_head(head)
            keep_tail(data[position:])
            if count:  # a new or changed row: where are the rows after it in the last result?
                if rows_before is None:
                    rows_before = dict(zip(hashes, range(count)))
                found = rows_before.get(hash(head))
                shift = shift + 1 if found is None else n - found
        _heads_seen[conn] = (self._names, width, array("I", map(len, heads)), array("q", map(hash, heads)))
        return rows_digest(heads)


# connection -> (column names, head width, each row's head length, hash() of each head) of the
# last result read with a numeric tail
_heads_seen: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def rows_digest(rows: Sequence[bytes]) -> bytes:
    """A digest of rows as sent (each row's values are length-encoded, so joined rows can't be
    read two ways): two results with the same rows in the same order have the same one.
    (SHA-256 of the joined rows: several times faster than hashing row by row, for a copy
    that lives a moment.)

    >>> rows_digest([b"\\x01a", b"\\x01b"]) == rows_digest([b"\\x01a", b"\\x01b"]) != rows_digest([b"\\x01b", b"\\x01a"])
    True
    """
    return hashlib.sha256(len(rows).to_bytes(8, "little") + b"".join(rows)).digest()


def _name(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else value


def split_values(segments: Sequence[bytes], width: int) -> List[List[Optional[bytes]]]:
    """The ``width`` length-encoded values of each segment, as ``width`` columns (None for
    NULL; a segment that ends early reads NULL for the rest).

    >>> split_values([b"\\x01a\\xfb", b"\\x02bc\\xfc\\x03\\x00xyz", b"\\x01d"], 2)
    [[b'a', b'bc', b'd'], [None, b'xyz', None]]
    """
    return split_some(segments, range(width))


def split_some(segments: Sequence[bytes], wanted: Sequence[int]) -> List[List[Optional[bytes]]]:
    """The values at the ``wanted`` positions (ascending) of each segment, as columns (None for
    NULL; a segment that ends early reads NULL for the rest); values after the last wanted
    one are not looked at.

    >>> split_some([b"\\x01a\\xfb\\x02bc\\x01z", b"\\x02de\\x01f\\xfc\\x03\\x00xyz"], [0, 2])
    [[b'a', b'de'], [b'bc', b'xyz']]
    >>> split_some([b"\\x01a"], [1])
    [[None]]
    """
    split: List[List[Optional[bytes]]] = [[] for _ in wanted]
    appends = [values.append for values in split]
    steps: List = [None] * (wanted[-1] + 1 if wanted else 0)
    for i, append in zip(wanted, appends):
        steps[i] = append
    for row, data in enumerate(segments):
        position = 0
        try:  # short values and NULLs inline, the usual case
            for append in steps:
                size = data[position]
                if size < 251:
                    if append is not None:
                        append(data[position + 1:position + 1 + size])
                    position += size + 1
                elif size == 251:
                    if append is not None:
                        append(None)
                    position += 1
                else:
                    raise IndexError
        except IndexError:  # a longer value or a row that ends early: this row again, value by value
            for values in split:
                if len(values) > row:
                    values.pop()
            _walk(data, 0, [append if append is not None else _ignore for append in steps])
    return split


def _ignore(_value) -> None:
    pass


def _walk(data: bytes, position: int, appends) -> int:
    """Length-encoded values of ``data`` from ``position``, one per append (None for NULL);
    a row that ends early reads NULL for the rest. Returns where the walk stopped.

    >>> a, b, c = [], [], []
    >>> _walk(b"\\x01a\\xfb\\xfc\\x03\\x00xyz", 0, [a.append, b.append, c.append]), a, b, c
    (9, [b'a'], [None], [b'xyz'])
    """
    end = len(data)
    for append in appends:
        if position >= end:
            append(None)
            continue
        size = data[position]
        if size < 251:
            position += 1
        elif size == 251:
            append(None)
            position += 1
            continue
        else:
            width = 2 if size == 252 else 3 if size == 253 else 8
            size = int.from_bytes(data[position + 1:position + 1 + width], "little")
            position += 1 + width
        append(data[position:position + size])
        position += size
    return position


def _skip(data: bytes, position: int, count: int) -> int:
    """Where the ``count`` values of ``data`` from ``position`` end (at most its end).

    >>> _skip(b"\\x01a\\xfb\\xfc\\x03\\x00xyz", 0, 2), _skip(b"\\x01a", 0, 3)
    (3, 2)
    """
    end = len(data)
    for _ in range(count):
        if position >= end:
            return end
        size = data[position]
        if size < 251:
            position += 1 + size
        elif size == 251:
            position += 1
        else:
            width = 2 if size == 252 else 3 if size == 253 else 8
            position += 1 + width + int.from_bytes(data[position + 1:position + 1 + width], "little")
    return min(position, end)


def query_columns(conn, sql: str, numeric: Sequence[str] = ()) -> Columns:
    """Run one plain query on a PyMySQL connection and read its result as :class:`Columns`;
    the last columns, as long as they are ``numeric`` ones, are read as numbers when they are
    plain decimals."""
    if isinstance(sql, str):
        sql = sql.encode(conn.encoding)
    conn._execute_command(COMMAND.COM_QUERY, sql)
    result = ColumnsResult(conn, numeric)
    conn._result = None
    result.read()
    conn._result = result
    conn._affected_rows = result.affected_rows
    if result.server_status is not None:
        conn.server_status = result.server_status
    if result.columns is None:  # a statement without a result set
        return Columns((), [])
    return result.columns


def count_columns(names: Sequence[str], wanted: Sequence[str]) -> int:
    """How many of the last columns of ``names`` are all in ``wanted``: the numeric tail.

    >>> count_columns(("digest", "digest_text", "count_star", "sum_time"), ("sum_time", "count_star"))
    2
    """
    count = 0
    for name in reversed(names):
        if name not in wanted:
            break
        count += 1
    return count


__all__: Tuple[str, ...] = ("Columns", "ColumnsTable", "ColumnsResult", "query_columns", "decode_column", "decimals_to_columns",
                            "decimals_to_lists", "counted_decimals", "rows_digest",
                            "plain_decimals", "count_columns", "split_values", "split_some")
