"""A text-protocol result read from PyMySQL's row packets straight into columns.

The digest table (20,000 rows of 14 values) and the processlist (10,000 sessions of 16) are
the largest results proxytop reads. Read as rows, every value costs a few Python steps to
slice, decode into str and (for counters) parse into int, and the tuples of str take tens of
megabytes for a moment. Read here, each row packet is walked once into per-column lists of
bytes, and then each column is converted at once, in C:

* the counters at the end of a digest row (decimal text, 1 to 20 digits) are not walked
  value by value at all: the rows' counter tails are joined, their length bytes turned into
  commas, and the whole block read by one ``json.loads`` into an ``array('q')`` per column,
  after checking that the length bytes and the runs of digits agree exactly;
* a text column is decoded as one NUL-joined buffer split again (UTF-8 with replacement, the
  same characters as decoding value by value), and a column of few distinct short values
  (users, hosts, schemas, commands) shares one str per value across readings.

Anything unusual (NULL, a sign, leading zeros, a number beyond 64 bits, a NUL inside a text)
takes the value-by-value path for that column only, with the same result as reading rows.
All server access is still PyMySQL's: its connection sends the query, reads the column
definitions and checks every packet's sequence number.
"""
from __future__ import annotations

import json
from array import array
from typing import Dict, List, Optional, Sequence, Tuple

import pymysql.connections
from pymysql import err
from pymysql.constants import COMMAND, CR
from pymysql.protocol import MysqlPacket

from proxytop.collectors.base import Table
from proxytop.textrows import SHARED_UP_TO, text

_MAX_PACKET = 0xFFFFFF  # a payload this long continues in the next packet
_NUMBER_DIGITS = 20  # the longest decimal an unsigned 64-bit counter has
_DIGITS = b"0123456789"
# Length bytes of short decimals become commas; anything else that is no digit becomes "!"
# (a NULL, a sign, a longer value): the block is then not plain decimals.
_SEPARATORS = bytes(b",!"[0 if n <= _NUMBER_DIGITS else 1] if n not in _DIGITS else n for n in range(256))
_SHARED_DISTINCT = 64  # a text column with at most this many distinct values shares them
_shared_text: Dict[str, str] = {}
_SHARED_LIMIT = 20_000


class Columns:
    """One result as columns: ``names``, ``count`` rows; :meth:`texts` and :meth:`numbers`
    give one column, :meth:`table` the rows as ``session.query`` gives them."""

    def __init__(self, names: Sequence[str], count: int, raw: Dict[int, List[Optional[bytes]]],
                 numbers: Dict[int, array], converters: Sequence[tuple]):
        self.names = tuple(names)
        self.count = count
        self._raw = raw  # column -> its values as sent (None for NULL)
        self._numbers = numbers  # column -> int64 values, for counters read as plain decimals
        self._converters = converters
        self._at = {name: i for i, name in enumerate(self.names)}

    def has(self, name: str) -> bool:
        return name in self._at

    def numbers(self, name: str) -> Optional[array]:
        """Column ``name`` as int64 when it was asked for as numbers and every value was a
        plain decimal (no NULL, sign or leading zero: str() of each gives the text back);
        None otherwise (read :meth:`texts`)."""
        return self._numbers.get(self._at.get(name, -1))

    def texts(self, name: str) -> List[Optional[str]]:
        """Column ``name`` as str (None for NULL); PyMySQL's converter applied to a typed column."""
        i = self._at.get(name)
        if i is None:
            return [None] * self.count
        numbers = self._numbers.get(i)
        if numbers is not None:
            return list(map(str, numbers))
        encoding, converter = self._converters[i] if i < len(self._converters) else (None, None)
        values = self._raw[i]
        if converter is not None or encoding is not None:
            return [_converted(v, encoding, converter) for v in values]
        return decode_column(values)

    def table(self) -> Table:
        """The rows as tuples, as a row-by-row read gives them."""
        columns = [self.texts(name) for name in self.names]
        return Table(self.names, tuple(zip(*columns)) if columns else ())


def _converted(value: Optional[bytes], encoding, converter):
    if value is None:
        return None
    if encoding is not None:
        value = value.decode(encoding)
    if converter is not None:
        value = converter(value)
    return text(value) if value.__class__ is bytes else value


def decode_column(values: List[Optional[bytes]]) -> List[Optional[str]]:
    """UTF-8 (undecodable bytes replaced) of every value, in one decode of the joined column;
    a column of few distinct short values shares one str per value across readings.

    >>> decode_column([b"app", None, b"caf\\xc3\\xa9", b"\\xff", b"", b"app"])
    ['app', None, 'café', '\\ufffd', '', 'app']
    """
    if not values:
        return []
    nulls = None in values
    joined = b"\x00".join(b"" if v is None else v for v in values) if nulls else b"\x00".join(values)
    if joined.count(b"\x00") != len(values) - 1:  # a NUL inside a value: one by one
        decoded = [None if v is None else v.decode("utf-8", "replace") for v in values]
    else:
        # the decoder never takes a NUL into an invalid sequence: the split gives each value's own decode
        decoded = joined.decode("utf-8", "replace").split("\x00")  # type: ignore[assignment]
        if nulls:
            for n, v in enumerate(values):
                if v is None:
                    decoded[n] = None
    distinct = dict.fromkeys(decoded)
    if len(distinct) <= _SHARED_DISTINCT:
        if len(_shared_text) >= _SHARED_LIMIT:
            _shared_text.clear()
        for value in distinct:
            if value is not None and len(value) <= SHARED_UP_TO:
                distinct[value] = _shared_text.setdefault(value, value)
            else:
                distinct[value] = value
        decoded = list(map(distinct.__getitem__, decoded))
    return decoded


def plain_decimals(block: bytes) -> Optional[Tuple[bytes, int]]:
    """``block`` (length-encoded strings) with every length byte turned into a comma, and the
    number of values, when every value is a plain decimal of 0 to 20 digits; None otherwise.

    >>> plain_decimals(b"\\x0212\\x010\\x03900")
    (b',12,0,900', 3)
    >>> plain_decimals(b"\\x02-1"), plain_decimals(b"\\xfb"), plain_decimals(b"\\x0212\\x01"), plain_decimals(b"")
    (None, None, None, None)
    """
    marked = block.translate(_SEPARATORS)
    if not marked.startswith(b",") or b"!" in marked:
        return None
    pieces = marked.split(b",")
    # each length byte must be the length of the run of digits after it: then reading the
    # block by its length bytes gives exactly these runs
    if block.translate(None, _DIGITS) != bytes(map(len, pieces[1:])):
        return None
    return marked, len(pieces) - 1


def decimals_to_columns(block: bytes, width: int) -> Optional[List[array]]:
    """``width`` int64 columns from a block of rows of ``width`` plain-decimal values (see
    :func:`plain_decimals`), or None when a value is not one (an empty value, a leading zero,
    a number beyond int64).

    >>> [list(c) for c in decimals_to_columns(b"\\x0212\\x010\\x013\\x014", 2)]
    [[12, 3], [0, 4]]
    >>> decimals_to_columns(b"\\x0201", 1), decimals_to_columns(b"\\x00", 1), decimals_to_columns(b"\\x011", 2)
    (None, None, None)
    """
    found = plain_decimals(block)
    if found is None or not width or found[1] % width:
        return None
    marked = found[0]
    try:
        # one C parse of every number; JSON has no leading zeros and no empty numbers
        values = array("q", json.loads(b"[" + marked[1:] + b"]"))
    except (ValueError, OverflowError):
        return None
    if len(values) != found[1]:  # a lone empty value reads as no value at all
        return None
    return [values[c::width] for c in range(width)]


class ColumnsResult(pymysql.connections.MySQLResult):
    """PyMySQL's result, with the row packets read into columns: the last columns, as long
    as they are ``numeric`` ones, as int64 arrays when they are plain decimals (see :class:`Columns`)."""

    def __init__(self, connection, numeric: Sequence[str] = ()):
        super().__init__(connection)
        self.numeric = numeric
        self.columns: Optional[Columns] = None

    def _read_rowdata_packet(self):
        conn = self.connection
        count = len(self.converters)
        names = tuple(_name(field.name) for field in self.fields)
        tail = count_columns(names, self.numeric)
        if any(converter is not None or encoding is not None for encoding, converter in self.converters[count - tail:]):
            tail = 0  # typed columns: PyMySQL's converters decide
        head = count - tail
        raw: List[List[Optional[bytes]]] = [[] for _ in range(count)]
        tails: List[bytes] = []
        rows = self._read_rows(conn, raw[:head], tails if tail else None)
        self.connection = None
        numbers: Dict[int, array] = {}
        if tail:
            parsed = decimals_to_columns(b"".join(tails), tail) if rows else [array("q") for _ in range(tail)]
            if parsed is not None and all(len(c) == rows for c in parsed):
                numbers = dict(zip(range(head, count), parsed))
            else:  # not all plain decimals: walk the tails value by value
                appends = [values.append for values in raw[head:]]
                for data in tails:
                    _walk(data, 0, appends)
        self.columns = Columns(names, rows, {i: raw[i] for i in range(count) if i not in numbers}, numbers,
                               self.converters)
        self.affected_rows = rows
        self.rows = ()

    def _read_rows(self, conn, head: List[list], tails: Optional[List[bytes]]) -> int:
        """Row packets until the EOF packet: the first values into ``head``'s lists, the rest
        of each row into ``tails`` (when given). Errors and sequence checks as PyMySQL's."""
        read = conn._rfile.read
        appends = [values.append for values in head]
        keep_tail = tails.append if tails is not None else None
        expected = conn._next_seq_id
        rows = 0
        try:
            while True:
                header = read(4)
                if len(header) < 4:
                    raise EOFError
                size = header[0] | header[1] << 8 | header[2] << 16
                if header[3] != expected:
                    conn._next_seq_id = expected
                    return self._out_of_sequence(conn, header[3])
                expected = (expected + 1) & 0xFF
                data = read(size)
                if len(data) < size:
                    raise EOFError
                while size == _MAX_PACKET:  # a row longer than 16 MB: its next part
                    header = read(4)
                    if len(header) < 4:
                        raise EOFError
                    size = header[0] | header[1] << 8 | header[2] << 16
                    if header[3] != expected:
                        conn._next_seq_id = expected
                        return self._out_of_sequence(conn, header[3])
                    expected = (expected + 1) & 0xFF
                    more = read(size)
                    if len(more) < size:
                        raise EOFError
                    data += more
                first = data[0] if data else 0
                if first == 0xFE and len(data) < 9:  # EOF: the end of the rows
                    conn._next_seq_id = expected
                    self._check_packet_is_eof(MysqlPacket(data, None))
                    return rows
                if first == 0xFF:  # an error packet in place of a row
                    conn._next_seq_id = expected
                    MysqlPacket(data, None).raise_for_error()
                position = _walk(data, 0, appends)
                if keep_tail is not None:
                    keep_tail(data[position:])
                rows += 1
        except (OSError, EOFError) as exc:
            conn._force_close()
            detail = f" ({exc})" if isinstance(exc, OSError) else ""
            raise err.OperationalError(CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query{detail}")

    @staticmethod
    def _out_of_sequence(conn, got: int):
        conn._force_close()
        raise err.InternalError(f"Packet sequence number wrong - got {got} expected {conn._next_seq_id}")


def _name(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else value


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
        return Columns((), 0, {}, {}, ())
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


__all__: Tuple[str, ...] = ("Columns", "ColumnsResult", "query_columns", "decode_column", "decimals_to_columns",
                            "plain_decimals", "count_columns")
