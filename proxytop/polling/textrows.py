"""Rows of a text-protocol result read in one pass, as str, with short values shared.

ProxySQL's admin interface sends every value as text. PyMySQL reads each value with three
method calls and proxytop then decoded it again: at 10,000 processlist sessions (160,000
values, every 2 s) that was most of a refresh. Here each row packet is walked once, and values
of up to ``SHARED_UP_TO`` bytes ("0", "ONLINE", host names, user names, variable names) come
from one table of already decoded strings, so that thousands of rows and the readings kept
for rates and sparklines hold one copy of each instead of one per cell. The row packets
already in the connection's read buffer are taken from it in place (:func:`row_payloads`, also
used by proxytop.polling.columns), and the column definitions of a result are parsed once per distinct
set: proxytop sends the same few queries every second.
"""
from __future__ import annotations

from typing import Dict, Iterator, Tuple

import pymysql.connections
from pymysql import err
from pymysql.constants import CR
from pymysql.protocol import MysqlPacket

SHARED_UP_TO = 24  # bytes: longer values (queries, comments) are decoded each time
SHARED_NUMBERS_UP_TO = 4  # digits: 0-9999 (ids, flags, small gauges) are shared, counters not
SHARED_LIMIT = 20_000  # entries; the table starts again when full (about 2 MB at most)

_shared: Dict[bytes, str] = {}  # dict get/set are atomic: every connection's thread shares it


def text(raw: bytes) -> str:
    """``raw`` decoded as UTF-8 (undecodable bytes replaced), shared when short.

    >>> text(b"ONLINE") is text(bytes(b"ONLINE"))
    True
    >>> text(b"caf\\xc3\\xa9 \\xff")
    'café \\ufffd'
    """
    if len(raw) > SHARED_UP_TO:
        return raw.decode("utf-8", "replace")
    value = _shared.get(raw)
    if value is None:
        value = raw.decode("utf-8", "replace")
        # Counters change with every reading: sharing them would only churn the table.
        if len(raw) <= SHARED_NUMBERS_UP_TO or not raw.isdigit():
            if len(_shared) >= SHARED_LIMIT:
                _shared.clear()
            _shared[raw] = value
    return value


DESCRIBED_LIMIT = 256  # results whose column definitions are kept (one per query proxytop sends)
_described: Dict[tuple, tuple] = {}  # the definitions as sent -> (fields, converters, description, decoders)


class _Replay:
    """A connection that gives back packets already read: PyMySQL's own parsing of column
    definitions runs on them."""

    def __init__(self, connection, payloads):
        self.use_unicode, self.encoding, self.decoders = connection.use_unicode, connection.encoding, connection.decoders
        self._payloads = iter(payloads)

    def _read_packet(self, packet_type=MysqlPacket):
        return packet_type(next(self._payloads), self.encoding)


class DescribedOnce(pymysql.connections.MySQLResult):
    """PyMySQL's result, with the column definitions parsed once per distinct set: proxytop
    sends the same few queries every second, and parsing each definition again (six strings
    and a struct per column) was a good part of a small result's cost."""

    def _get_descriptions(self):
        connection = self.connection
        payloads = _definition_payloads(connection, self.field_count + 1)  # + EOF
        fields, converters, self.description = described(connection, payloads)
        self.fields, self.converters = list(fields), list(converters)


def described(connection, payloads: Tuple[bytes, ...]) -> tuple:
    """(fields, converters, description) of a result's column definitions and their EOF
    (``payloads``), as PyMySQL parses them, parsed once per distinct set."""
    key = (connection.use_unicode, connection.encoding, payloads)
    known = _described.get(key)
    # every PyMySQL connection makes its own copy of the decoders: equal ones will do (one
    # connection per watched MySQL server otherwise parsed every definition again)
    if known is None or (known[3] is not connection.decoders and known[3] != connection.decoders):
        result = pymysql.connections.MySQLResult(_Replay(connection, payloads))
        result.field_count = len(payloads) - 1
        pymysql.connections.MySQLResult._get_descriptions(result)
        known = (tuple(result.fields), tuple(result.converters), result.description, connection.decoders)
        if len(_described) >= DESCRIBED_LIMIT:
            _described.clear()
        _described[key] = known
    return known[:3]


_MAX_PACKET = 0xFFFFFF  # a payload this long continues in the next packet


def _definition_payloads(connection, count: int) -> Tuple[bytes, ...]:
    """The payloads of the next ``count`` packets (a result's column definitions and their
    EOF), read as :func:`row_payloads` reads rows: PyMySQL's own packet reader made an
    object and ran its checks for each, a third of a small result's reading."""
    expected = connection._next_seq_id
    payloads = []
    try:
        for _ in range(count):
            data, expected = _read_packet(connection, expected)
            if data[:1] == b"\xff":  # an error in place of a definition, as PyMySQL reports it
                connection._next_seq_id = expected
                MysqlPacket(data, None).raise_for_error()
            payloads.append(data)
    except (OSError, EOFError) as exc:
        connection._force_close()
        detail = f" ({exc})" if isinstance(exc, OSError) else ""
        raise err.OperationalError(CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query{detail}")
    connection._next_seq_id = expected
    return tuple(payloads)


def row_payloads(result: pymysql.connections.MySQLResult, connection) -> Iterator[bytes]:
    """The payload of each row packet of ``result`` until its EOF packet. The packets already
    in the connection's read buffer are taken from it in place (one peek and one read per
    buffer, not two reads per packet); the rest are read one by one. Sequence numbers, the
    EOF packet, an error packet and a lost connection are handled as PyMySQL handles them."""
    rfile = connection._rfile
    peek = getattr(rfile, "peek", None)
    expected = connection._next_seq_id
    try:
        while True:
            buffered = peek(1) if peek is not None else b""
            end = len(buffered)
            start = 0
            while start + 4 <= end:
                size = buffered[start] | buffered[start + 1] << 8 | buffered[start + 2] << 16
                stop = start + 4 + size
                if stop > end or size == _MAX_PACKET or not size:
                    break  # the rest of this packet is not read yet: read it below
                if buffered[start + 3] != expected:
                    _out_of_sequence(connection, buffered[start + 3], expected)
                first = buffered[start + 4]
                if first == 0xFE and size < 9 or first == 0xFF:
                    break  # the end of the rows or an error: below, as one packet
                expected = (expected + 1) & 0xFF
                yield buffered[start + 4:stop]
                start = stop
            if start:
                rfile.read(start)  # the packets taken from the buffer
                continue
            data, expected = _read_packet(connection, expected)
            first = data[0] if data else 0
            if first == 0xFE and len(data) < 9:  # EOF: the end of the rows
                connection._next_seq_id = expected
                result._check_packet_is_eof(MysqlPacket(data, None))
                return
            if first == 0xFF:  # an error packet in place of a row
                connection._next_seq_id = expected
                MysqlPacket(data, None).raise_for_error()
            yield data
    except (OSError, EOFError) as exc:
        connection._force_close()
        detail = f" ({exc})" if isinstance(exc, OSError) else ""
        raise err.OperationalError(CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query{detail}")


def _read_packet(connection, expected: int) -> Tuple[bytes, int]:
    """One whole packet read from the connection (its parts joined when longer than 16 MB),
    and the sequence number expected after it."""
    read = connection._rfile.read
    parts = []
    while True:
        header = read(4)
        if len(header) < 4:
            raise EOFError
        size = header[0] | header[1] << 8 | header[2] << 16
        if header[3] != expected:
            _out_of_sequence(connection, header[3], expected)
        expected = (expected + 1) & 0xFF
        data = read(size)
        if len(data) < size:
            raise EOFError
        parts.append(data)
        if size < _MAX_PACKET:
            return (parts[0] if len(parts) == 1 else b"".join(parts)), expected


def _out_of_sequence(connection, got: int, expected: int):
    connection._force_close()
    raise err.InternalError(f"Packet sequence number wrong - got {got} expected {expected}")


class TextResult(DescribedOnce):
    """PyMySQL's result with rows read by :func:`read_row`: str for text columns (what
    proxytop decoded them to anyway), PyMySQL's converters for typed columns (MySQL's
    INFORMATION_SCHEMA has integers)."""

    def _read_rowdata_packet(self):
        converters = self.converters
        rows = [read_row(data, 0, converters) for data in row_payloads(self, self.connection)]
        self.connection = None
        self.affected_rows = len(rows)
        self.rows = tuple(rows)

    def _read_row_from_packet(self, packet):  # unbuffered reads, one packet at a time
        try:
            data, position = packet._data, packet._position
        except AttributeError:  # a PyMySQL whose packets differ: its own reader, then decode
            return tuple(v.decode("utf-8", "replace") if v.__class__ is bytes else v
                         for v in super()._read_row_from_packet(packet))
        return read_row(data, position, self.converters)


def read_row(data: bytes, position: int, converters) -> tuple:
    """The values of one text-protocol row packet from ``position``: length-encoded strings,
    0xFB for NULL. ``converters`` holds PyMySQL's (encoding, converter) per column; a row
    that ends early (as PyMySQL allows) has fewer values.

    >>> read_row(b"\\x01a\\xfb\\x0212", 0, [(None, None), (None, None), (None, int)])
    ('a', None, 12)
    """
    end = len(data)
    row = []
    append = row.append
    shared = _shared.get
    for encoding, converter in converters:
        if position >= end:
            break
        size = data[position]
        position += 1
        if size >= 251:
            if size == 251:
                append(None)
                continue
            width = 2 if size == 252 else 3 if size == 253 else 8
            size = int.from_bytes(data[position:position + width], "little")
            position += width
        raw = data[position:position + size]
        position += size
        if converter is None and encoding is None:
            if size <= SHARED_UP_TO:
                value = shared(raw)
                if value is None:
                    value = text(raw)
            else:
                value = raw.decode("utf-8", "replace")
        else:
            value = raw.decode(encoding) if encoding is not None else raw
            if converter is not None:
                value = converter(value)
            if value.__class__ is bytes:
                value = text(value)
        append(value)
    return tuple(row)
