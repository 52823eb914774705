"""One statement sent and its rows read as text, on a PyMySQL connection, without PyMySQL's
result machinery: for the statement a fleet's every server answers every few seconds (the
InnoDB reading, collectors.innodb), whose columns are all text.

PyMySQL sends a query through three method calls, then reads each packet of the answer with
two buffered reads, a packet object and its checks, parses (or looks up) the column
definitions and makes a result object: about 30 us of CPU for any statement, most of a packed
InnoDB reading's. Here the command goes out as one prepared packet, and the answer, which a
small result has whole in the connection's read buffer after its first read, is walked in
place: the column definitions are skipped (every value is read as text), the rows decoded. An
error packet, a lost connection, a timeout and a wrong sequence number end as PyMySQL ends
them (the same exceptions, the connection closed where PyMySQL closes it).
"""
from __future__ import annotations

import struct
from typing import Dict, List, Tuple

from pymysql import err
from pymysql.constants import COMMAND, CR
from pymysql.protocol import MysqlPacket

from proxytop.polling.textrows import described, read_row

_MAX_PACKET = 0xFFFFFF


def query_packet(sql: str, encoding: str = "utf8") -> bytes:
    """The COM_QUERY packet of ``sql`` (sequence number 0), made once per statement.

    >>> query_packet("SELECT 1")
    b'\\t\\x00\\x00\\x00\\x03SELECT 1'
    """
    body = bytes((COMMAND.COM_QUERY,)) + sql.encode(encoding)
    if len(body) >= _MAX_PACKET:
        raise ValueError("a statement this long goes through PyMySQL's own query()")
    return struct.pack("<I", len(body))[:3] + b"\x00" + body


def text_rows(conn, packet: bytes) -> Tuple[Tuple[object, ...], ...]:
    """Send ``packet`` (from :func:`query_packet`) on ``conn``, a PyMySQL connection, and
    return the rows of its one result, each value as str (None for NULL); () for a statement
    without a result set."""
    return _answer(conn, packet, False)[1]


def text_result(conn, packet: bytes) -> Tuple[Tuple[str, ...], Tuple[Tuple[object, ...], ...]]:
    """:func:`text_rows`, with the column names, and each value as proxytop's connections read
    it (proxytop.polling.textrows.TextResult: str for text columns, PyMySQL's converters for
    typed ones); ((), ()) for a statement without a result set. For the queries to the admin
    interface, sent every second: the definitions are parsed once per distinct set."""
    return _answer(conn, packet, True)


def send(conn, packet: bytes) -> None:
    """Send ``packet`` on ``conn`` without reading its answer, which :func:`received_rows`
    then reads (nothing else may be sent meanwhile): a statement sent to several servers
    before any answer is read (proxytop.polling.engine's pool)."""
    if not conn._sock:
        raise err.InterfaceError(0, "")
    previous = conn._result
    if previous is not None:  # what an earlier statement left is finished first, as PyMySQL does
        if previous.unbuffered_active:
            previous._finish_unbuffered_query()
        while conn._result is not None and conn._result.has_next:
            conn.next_result()
        conn._result = None
    conn._write_bytes(packet)  # PyMySQL's: its write timeout, "gone away" on failure
    conn._next_seq_id = 1


def received_rows(conn) -> Tuple[Tuple[object, ...], ...]:
    """The answer to the statement :func:`send` sent, as :func:`text_rows` returns it."""
    if not conn._sock:
        raise err.InterfaceError(0, "")
    return _received(conn, False)[1]


def _answer(conn, packet: bytes, typed: bool):
    send(conn, packet)
    return _received(conn, typed)


def _received(conn, typed: bool):
    if getattr(conn, "_current_timeout", None) != conn._read_timeout:
        conn._sock.settimeout(conn._read_timeout)
        if hasattr(conn, "_current_timeout"):
            conn._current_timeout = conn._read_timeout
    reader = _Packets(conn)
    try:
        first = reader.next()
        head = first[0]
        if head == 0xFF:
            reader.done()
            MysqlPacket(first, conn.encoding).raise_for_error()
        if head == 0x00 or head == 0xFB:  # OK (no result set), or LOCAL INFILE (never asked for)
            reader.done()
            if head == 0xFB:
                raise err.InternalError("LOCAL INFILE asked for by the server")
            return (), ()
        columns = head if head < 251 else int.from_bytes(first[1:1 + {252: 2, 253: 3, 254: 8}[head]], "little")
        span = reader.whole(columns + 1) if typed else None  # the definitions, then their EOF
        if span is not None:
            converters, names = _described_span(conn, span)
        else:
            definitions = []
            for _ in range(columns + 1):
                data = reader.next()
                if data[:1] == b"\xff":
                    reader.done()
                    MysqlPacket(data, conn.encoding).raise_for_error()
                if typed:
                    definitions.append(bytes(data))
            if typed:
                _fields, converters, description = described(conn, tuple(definitions))
                names = tuple(_name(d[0]) for d in description)
            else:
                converters, names = ((None, None),) * columns, ()  # every value as str
        rows: List[tuple] = []
        while True:
            data = reader.next()
            head = data[0] if data else 0
            if head == 0xFE and len(data) < 9:  # EOF: warnings, then the server's status
                reader.done()
                status = int.from_bytes(data[3:5], "little") if len(data) >= 5 else None
                if status is not None:
                    conn.server_status = status
                return names, tuple(rows)
            if head == 0xFF:
                reader.done()
                MysqlPacket(data, conn.encoding).raise_for_error()
            rows.append(read_row(data, 0, converters))
    except (OSError, EOFError) as exc:
        conn._force_close()
        detail = f" ({exc})" if isinstance(exc, OSError) else ""
        raise err.OperationalError(CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query{detail}")


_spans: Dict[bytes, list] = {}  # definitions' packets -> [their payloads, description, its column names]
SPANS_KEPT = 64


def _described_span(conn, span: bytes) -> Tuple[tuple, Tuple[str, ...]]:
    """(converters, column names) of a result's column definitions and their EOF, given as
    the packets' bytes (``span``: headers included, sequence numbers checked): the same few
    statements are sent every second, and their definitions are looked up as one text
    instead of being taken one packet at a time. textrows.described parses them (once per
    connection settings); the names are kept with the description it gives."""
    known = _spans.get(span)
    if known is None:
        payloads, at = [], 0
        while at < len(span):
            size = span[at] | span[at + 1] << 8 | span[at + 2] << 16
            payloads.append(span[at + 4:at + 4 + size])
            at += 4 + size
        if len(_spans) >= SPANS_KEPT:
            _spans.clear()
        known = _spans[span] = [tuple(payloads), None, ()]
    _fields, converters, description = described(conn, known[0])
    if known[1] is not description:
        known[1:] = [description, tuple(_name(d[0]) for d in description)]
    return converters, known[2]


def _name(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else value


class _Packets:
    """The payloads of the packets of one answer, taken from the read buffer in place."""

    def __init__(self, conn):
        self.conn = conn
        self.rfile = conn._rfile
        self.expected = 1
        self.buffer = b""
        self.start = 0

    def next(self) -> bytes:
        buffer, start = self.buffer, self.start
        if start + 4 <= len(buffer):
            size = buffer[start] | buffer[start + 1] << 8 | buffer[start + 2] << 16
            stop = start + 4 + size
            if stop <= len(buffer) and size < _MAX_PACKET:
                self._check(buffer[start + 3])
                self.start = stop
                return buffer[start + 4:stop]
        # not whole in what was looked at: what was taken is consumed, then more is read
        if start:
            self.rfile.read(start)
        self.buffer, self.start = self.rfile.peek(1), 0
        buffer = self.buffer
        if len(buffer) >= 4:
            size = buffer[0] | buffer[1] << 8 | buffer[2] << 16
            if 4 + size <= len(buffer) and size < _MAX_PACKET:
                self._check(buffer[3])
                self.start = 4 + size
                return buffer[4:4 + size]
        # longer than the buffer (or over 16 MB, in parts): read as PyMySQL reads it
        self.buffer, self.start = b"", 0
        parts = []
        while True:
            header = self.rfile.read(4)
            if len(header) < 4:
                raise EOFError
            size = header[0] | header[1] << 8 | header[2] << 16
            self._check(header[3])
            data = self.rfile.read(size)
            if len(data) < size:
                raise EOFError
            parts.append(data)
            if size < _MAX_PACKET:
                return parts[0] if len(parts) == 1 else b"".join(parts)

    def whole(self, count: int):
        """The next ``count`` packets as one bytes, headers included, when all of them are in
        the buffer, none is an error packet or 16 MB long, and their sequence numbers follow;
        else None, and nothing is taken (next() takes them one by one, and reports what is
        wrong as it does)."""
        buffer, start = self.buffer, self.start
        end, expected, at = len(buffer), self.expected, start
        for _ in range(count):
            if at + 5 > end:
                return None
            size = buffer[at] | buffer[at + 1] << 8 | buffer[at + 2] << 16
            if size == 0 or size >= _MAX_PACKET or buffer[at + 3] != expected or buffer[at + 4] == 0xFF:
                return None
            expected = (expected + 1) & 0xFF
            at += 4 + size
        if at > end:
            return None
        self.start, self.expected = at, expected
        return buffer[start:at]

    def _check(self, sequence: int) -> None:
        if sequence != self.expected:
            self.conn._force_close()
            if sequence == 0:  # MariaDB's error packet as it shuts down
                raise err.OperationalError(CR.CR_SERVER_LOST, "Lost connection to MySQL server during query")
            raise err.InternalError(f"Packet sequence number wrong - got {sequence} expected {self.expected}")
        self.expected = (self.expected + 1) & 0xFF

    def done(self) -> None:
        """The answer is read: what was taken from the buffer is consumed."""
        if self.start:
            self.rfile.read(self.start)
            self.start = 0
        self.conn._next_seq_id = self.expected
