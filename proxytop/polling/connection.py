"""Connections to ProxySQL's admin interface through PyMySQL.

Every value ProxySQL sends is text; we ask PyMySQL for bytes and decode them ourselves with
replacement, so a query with invalid UTF-8 in the processlist can't break a collector.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Dict, FrozenSet, Optional, Tuple

import pymysql
from pymysql.constants import FIELD_TYPE

from proxytop import errors
from proxytop.collectors.base import Source, Table
from proxytop.collectors.folded import Folding
from proxytop.collectors.sides import count_pgsql_servers
from proxytop.polling.columns import query_columns
from proxytop.polling.lean_query import query_packet, text_result
from proxytop.polling.textrows import TextResult
from proxytop.polling.tls import DEFAULT as TLS_DEFAULT, DISABLED as TLS_DISABLED, TLSSettings
from proxytop.polling.tls import context as tls_context, protocol as tls_protocol

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 3.0
_RESET_TABLE = re.compile(r"\w+_reset\b", re.IGNORECASE)
QUERY_PACKETS_KEPT = 256  # distinct statements of a session whose packets are kept
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def close_quietly(conn) -> None:
    """Close a connection that is being given up: it may be gone already, and the reason it
    is given up (the error being raised, the node switched to) is what matters."""
    try:
        conn.close()
    except Exception:
        pass


@dataclass(frozen=True)
class Endpoint:
    """Where and as whom to connect. The password is never shown (repr hides it)."""

    host: str = "127.0.0.1"
    port: int = 6032
    user: str = "admin"
    password: str = field(default="admin", repr=False)
    socket: Optional[str] = None
    timeout: float = DEFAULT_TIMEOUT
    tls: TLSSettings = TLS_DEFAULT

    @property
    def label(self) -> str:
        return self.socket if self.socket else f"{self.host}:{self.port}"


def parse_version(text: Optional[str]) -> Optional[Tuple[int, int, int]]:
    """'2.7.2-14-g5cc418b' -> (2, 7, 2).

    >>> parse_version("2.7.2-14-g5cc418b"), parse_version("v1.4.16"), parse_version("x")
    ((2, 7, 2), (1, 4, 16), None)
    """
    match = _VERSION.match(text or "")
    return tuple(int(p) for p in match.groups()) if match else None


def _decode(value):
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return value


class _Connection(pymysql.connections.Connection):
    """PyMySQL's connection, with one TLS context for all connections of the same TLS
    settings (proxytop.polling.tls). Given no TLS option, PyMySQL 1.1 and later build a default context
    for every connection (TLS when the server offers it): the system's CA store loaded each
    time, about 0.8 MB per connection, and proxytop keeps one connection per server it watches."""

    def __init__(self, *args, tls: TLSSettings = TLS_DEFAULT, **kwargs):
        self._tls_settings = tls
        if tls.mode == TLS_DISABLED:
            kwargs["ssl_disabled"] = True
        elif tls.required:
            kwargs["ssl"] = tls_context(tls)  # PyMySQL then refuses a server without TLS
        super().__init__(*args, **kwargs)

    def _create_ssl_ctx(self, sslp):
        if sslp != {}:
            return super()._create_ssl_ctx(sslp)
        return tls_context(self._tls_settings)  # PREFERRED: PyMySQL asks with no options

    def _read_query_result(self, unbuffered=False):
        # PyMySQL's own, with rows read by proxytop.polling.textrows (one pass, str, shared values).
        self._result = None
        result = TextResult(self)
        if unbuffered:
            result.init_unbuffered_query()
        else:
            result.read()
        self._result = result
        if result.server_status is not None:
            self.server_status = result.server_status
        return result.affected_rows


def _decimal(raw) -> Decimal:
    """DECIMAL from the bytes a connection with use_unicode=False reads (PyMySQL's own
    converter is Decimal itself, which takes text only)."""
    return Decimal(raw.decode("ascii") if raw.__class__ is bytes else raw)


# PyMySQL's converters with DECIMAL read from bytes: MariaDB sends DECIMAL for sums and for
# columns such as INFORMATION_SCHEMA.PROCESSLIST.TIME_MS.
_CONVERTERS = {**pymysql.converters.conversions,
               FIELD_TYPE.DECIMAL: _decimal, FIELD_TYPE.NEWDECIMAL: _decimal}


def open_mysql(endpoint: Endpoint, database: Optional[str] = None) -> pymysql.connections.Connection:
    """A PyMySQL connection with connect/read/write timeouts, returning raw bytes."""
    kwargs = dict(
        conv=_CONVERTERS,
        user=endpoint.user,
        password=endpoint.password,
        connect_timeout=endpoint.timeout,
        read_timeout=endpoint.timeout,
        write_timeout=endpoint.timeout,
        use_unicode=False,
        charset="utf8mb4",
        autocommit=True,
        database=database,
    )
    if endpoint.socket:
        kwargs["unix_socket"] = endpoint.socket
    else:
        kwargs["host"] = endpoint.host
        kwargs["port"] = endpoint.port
    conn = _Connection(tls=endpoint.tls, **kwargs)
    if endpoint.tls.required and tls_protocol(conn) is None:
        # PyMySQL releases before 1.1 fall back to plain text silently: refuse it here too.
        conn.close()
        raise pymysql.err.OperationalError(2026, "TLS is required but the server does not offer it")
    return conn


def encryption(conn) -> Optional[str]:
    """The TLS protocol of an open connection ('TLSv1.3'), None when it is plain text."""
    return tls_protocol(conn)


def run_query(conn, sql: str) -> Table:
    """Run one plain query (no prepared statements: ProxySQL admin has none)."""
    with conn.cursor() as cursor:
        cursor.execute(sql)
        columns = tuple(_decode(d[0]) for d in (cursor.description or ()))
        rows = tuple(cursor.fetchall())  # already str: open_mysql's connections read rows as TextResult
    return Table(columns, rows)


def run_rows(conn, sql: str) -> Tuple[tuple, ...]:
    """:func:`run_query`'s rows alone: the query sent and its result read as a cursor does,
    without making one, nor decoding the column names nobody reads."""
    conn.query(sql)
    result = conn._result
    return result.rows if result is not None and result.rows is not None else ()


@dataclass
class AdminSession:
    """An open admin connection plus what was learnt about the server when it opened."""

    conn: object
    endpoint: Endpoint
    version_text: str = ""
    version: Optional[Tuple[int, int, int]] = None
    tables: FrozenSet[str] = frozenset()
    opened_at: float = field(default_factory=time.monotonic)
    queries: int = 0
    pgsql_servers: Optional[int] = None  # rows of runtime_pgsql_servers (3.x admin user), see proxytop.metrics.sides
    encryption: Optional[str] = None  # 'TLSv1.3' when the connection is encrypted
    # two readings due together served by one query (collectors.folded)
    folding: Folding = field(default_factory=Folding)
    # statement -> its COM_QUERY packet (lean_query.query_packet), made once
    _packets: Dict[str, bytes] = field(default_factory=dict, repr=False)

    def plan_batch(self, due, clock) -> None:
        """The engine is about to run the collectors named in ``due`` on this connection."""
        self.folding.plan(due, clock)

    @property
    def is_admin(self) -> bool:
        """Admin users see runtime_* and configuration tables; the stats user does not."""
        return "runtime_mysql_servers" in self.tables or "mysql_servers" in self.tables

    def has_table(self, name: str) -> bool:
        return name in self.tables

    def query(self, sql: str) -> Table:
        packet = self._packets.get(sql)
        if packet is None:
            if _RESET_TABLE.search(sql):
                # Reading a *_reset table zeroes ProxySQL's counters for everybody.
                raise errors.UnsafeQuery("it names a *_reset table")
            try:
                packet = query_packet(sql, self.conn.encoding)
            except ValueError:  # too long for one packet: PyMySQL sends it in parts
                self.queries += 1
                return run_query(self.conn, sql)
            if len(self._packets) >= QUERY_PACKETS_KEPT:
                self._packets.clear()
            self._packets[sql] = packet
        self.queries += 1
        # The same few statements every second: each one's packet is made (and checked) once,
        # and its answer read without PyMySQL's cursor and result objects (lean_query).
        return Table(*text_result(self.conn, packet))

    def query_columns(self, sql: str, numeric=()):
        """:meth:`query` with the result read as columns (proxytop.polling.columns.Columns): for the
        large results (the digest, the processlist)."""
        if _RESET_TABLE.search(sql):
            raise errors.UnsafeQuery("it names a *_reset table")
        self.queries += 1
        return query_columns(self.conn, sql, numeric)

    def execute(self, sql: str) -> None:
        """The one write proxytop makes (after the user confirms): a KILL CONNECTION."""
        self.queries += 1
        with self.conn.cursor() as cursor:
            cursor.execute(sql)


def open_admin(endpoint: Endpoint) -> AdminSession:
    try:
        conn = open_mysql(endpoint)
    except pymysql.err.OperationalError as exc:
        refused_by_mysql(exc)
        raise
    try:
        session = AdminSession(conn=conn, endpoint=endpoint, encryption=encryption(conn))
        identify(session)
        return session
    except BaseException:
        close_quietly(conn)
        raise


# ProxySQL's traffic port answers ``select @@version_comment`` itself ("(ProxySQL)") and forwards
# everything else to a backend, so only the stats schema tells the admin interface apart: every
# ProxySQL since 1.x has this table, and both the admin and the stats user can read it.
STATS_SCHEMA_TABLE = "stats_mysql_global"
TRAFFIC_PORT = "6033 is ProxySQL's traffic port, 6032 the admin port"


def refused_by_mysql(exc: pymysql.err.OperationalError) -> None:
    """A login refused by a MySQL server rather than by ProxySQL, whose refusals all start with
    "ProxySQL Error:": say that it is not the admin interface, which is the useful news."""
    code, message = (exc.args + (None, ""))[:2]
    if code == 1045 and not str(message).startswith("ProxySQL"):
        raise errors.NotProxySQLAdmin(f"a MySQL server answered: {message}") from exc


def _server_error(exc: BaseException) -> bool:
    """An error the server sent back (codes below 2000), not a broken connection."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    return code is not None and code < 2000


def identify(session: AdminSession) -> None:
    """Check this is a ProxySQL admin interface; learn its version and readable tables."""
    try:
        comment = run_query(session.conn, "select @@version_comment limit 1")
        text = comment.rows[0][0] if comment.rows else ""
    except pymysql.err.MySQLError as exc:
        code, message = (exc.args + (None, ""))[:2]
        if "ProxySQL Admin Error" in str(message):
            text = "(ProxySQL Admin Module)"  # only ProxySQL answers with such an error
        else:
            raise
    if "ProxySQL" not in (text or ""):
        server = getattr(session.conn, "server_version", "") or "unknown server"
        raise errors.NotProxySQLAdmin(f"server says {text or server!r}")
    try:
        version = run_query(session.conn, "select @@version")
        tables = run_query(session.conn, "SHOW TABLES")
        session.tables = frozenset(row[0] for row in tables.rows)
        if "runtime_mysql_servers" in session.tables:
            stats = run_query(session.conn, "SHOW TABLES FROM stats")
            session.tables = session.tables | frozenset(row[0] for row in stats.rows)
    except pymysql.err.MySQLError as exc:
        if not _server_error(exc) or "ProxySQL Admin Error" in str(exc):
            raise
        # e.g. "No database selected" from the backend a traffic port forwarded this to
        raise errors.NotProxySQLAdmin(TRAFFIC_PORT) from exc
    if STATS_SCHEMA_TABLE not in session.tables:
        raise errors.NotProxySQLAdmin(TRAFFIC_PORT)
    session.version_text = version.rows[0][0] if version.rows else ""
    session.version = parse_version(session.version_text)
    session.pgsql_servers = count_pgsql_servers(session, run_query)


class PyMySQLSource(Source):
    """A source whose handles keep their PyMySQL connection as ``conn`` (ProxySQL's admin
    interface, the MySQL servers of the InnoDB screen)."""

    def close(self, handle) -> None:
        close_quietly(handle.conn)


class ProxySQLSource(PyMySQLSource):
    """The ProxySQL admin connection all ProxySQL collectors share (queries are serialized
    inside ProxySQL anyway)."""

    name = "proxysql"

    def __init__(self, endpoint: Endpoint):
        self.endpoint = endpoint
        self.description = f"ProxySQL {endpoint.label}"
        self.session: Optional[AdminSession] = None  # the latest session, for the header

    def connect(self) -> AdminSession:
        session = open_admin(self.endpoint)
        self.session = session
        log.info("connected to %s as %s, version %s, %s", self.endpoint.label, self.endpoint.user,
                 session.version_text, session.encryption or "no TLS")
        return session

    def is_connection_error(self, exc: BaseException) -> bool:
        return errors.is_connection_error(exc)

    def describe_error(self, exc: BaseException) -> str:
        return errors.describe(exc, password=self.endpoint.password, timeout=self.endpoint.timeout,
                               server=self.endpoint.socket or self.endpoint.host)
