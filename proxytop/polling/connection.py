"""Connections to ProxySQL's admin interface through PyMySQL.

Every value ProxySQL sends is text; PyMySQL reads bytes (use_unicode=False) and proxytop's
converters decode them with replacement, so a query with invalid UTF-8 in the processlist
can't break a collector.
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
from proxytop.core import Source, Table
from proxytop.config import tls
from proxytop.config.endpoints import Endpoint
from proxytop.config.tls import DISABLED, TLSSettings

log = logging.getLogger(__name__)

# Searched in every query sent. Not ``\w+_reset\b``: that retried the \w+ from every letter of
# every word (40 µs for the monitor logs' query, against 1 µs for this one).
_RESET_TABLE = re.compile(r"_reset\b", re.IGNORECASE)
# Every statement proxytop sends ProxySQL's admin interface says whose it is, as the MySQL
# servers' do, but at its end: the admin interface recognises its own commands by their first
# words (ProxySQL_Admin.cpp: KILL CONNECTION, LOAD/SAVE) and hands the rest to SQLite, which
# takes a comment anywhere. Commands it matches by their whole text (CHECKSUM ..., SHOW TABLES;
# the identifying select @@version_comment limit 1) would not be recognised with anything
# added, so they go as they are.
ADMIN_TAG = " /* proxytop */"
_WHOLE_TEXT_COMMAND = re.compile(r"^\s*(checksum|show)\s", re.IGNORECASE)


def admin_statement(sql: str) -> str:
    """``sql`` as proxytop sends it to ProxySQL's admin interface.

    >>> admin_statement("select * from stats_mysql_global"), admin_statement("KILL CONNECTION 7")
    ('select * from stats_mysql_global /* proxytop */', 'KILL CONNECTION 7 /* proxytop */')
    >>> admin_statement("CHECKSUM MEMORY MYSQL QUERY RULES")
    'CHECKSUM MEMORY MYSQL QUERY RULES'
    """
    return sql if _WHOLE_TEXT_COMMAND.match(sql) else sql + ADMIN_TAG
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def close_quietly(conn) -> None:
    """Close a connection that is being given up: it may be gone already, and the reason it
    is given up (the error being raised, the node switched to) is what matters."""
    try:
        conn.close()
    except Exception:
        pass


def parse_version(text: Optional[str]) -> Optional[Tuple[int, int, int]]:
    """'2.7.2-14-g5cc418b' -> (2, 7, 2).

    >>> parse_version("2.7.2-14-g5cc418b"), parse_version("v1.4.16"), parse_version("x")
    ((2, 7, 2), (1, 4, 16), None)
    """
    match = _VERSION.match(text or "")
    return tuple(int(p) for p in match.groups()) if match else None


def _text(raw) -> str:
    """A text value as str: ProxySQL sends every value as text, and invalid UTF-8 (a query in
    the processlist) must not break a collector, so undecodable bytes are replaced."""
    return raw.decode("utf-8", "replace")


def _decimal(raw) -> Decimal:
    """DECIMAL from the bytes a connection with use_unicode=False reads (PyMySQL's own
    converter is Decimal itself, which takes text only)."""
    return Decimal(raw.decode("ascii") if raw.__class__ is bytes else raw)


_TEXT_TYPES = (FIELD_TYPE.STRING, FIELD_TYPE.VAR_STRING, FIELD_TYPE.VARCHAR, FIELD_TYPE.BLOB, FIELD_TYPE.TINY_BLOB,
               FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.JSON, FIELD_TYPE.ENUM, FIELD_TYPE.SET,
               FIELD_TYPE.GEOMETRY)
# PyMySQL's converters (its ``conv`` argument), given bytes (use_unicode=False): text columns
# decoded with replacement; DECIMAL read from bytes (MariaDB sends DECIMAL for sums and for
# columns such as INFORMATION_SCHEMA.PROCESSLIST.TIME_MS); the other types as PyMySQL reads them.
_CONVERTERS = {**pymysql.converters.conversions, FIELD_TYPE.DECIMAL: _decimal, FIELD_TYPE.NEWDECIMAL: _decimal,
               **{kind: _text for kind in _TEXT_TYPES}}


def connect(endpoint: Endpoint) -> Tuple[pymysql.connections.Connection, Optional[str]]:
    """(A PyMySQL connection with connect/read/write timeouts and TLS as ``endpoint.tls`` says,
    every text value read as str; its TLS protocol, 'TLSv1.3', None when it is plain text)."""
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
    )
    if endpoint.socket:
        kwargs["unix_socket"] = endpoint.socket
    else:
        kwargs["host"] = endpoint.host
        kwargs["port"] = endpoint.port
    return tls_connect(pymysql.connections.Connection, endpoint.tls, kwargs)


def tls_connect(connection_class, settings: TLSSettings, kwargs: dict):
    """(``connection_class(**kwargs)``, a PyMySQL connection with these TLS settings, the TLS
    protocol it uses: 'TLSv1.3', None when it is plain text).

    PREFERRED has no PyMySQL argument of its own (given a context, PyMySQL refuses a server
    that offers no TLS, before logging in): such a server is connected to again in plain text."""
    if settings.mode == DISABLED:
        return connection_class(ssl_disabled=True, **kwargs), None
    tls.handshakes.protocol = None
    try:
        conn = connection_class(ssl=tls.context(settings), **kwargs)
    except pymysql.err.OperationalError as exc:
        if settings.required or not _offers_no_tls(exc):
            raise
        return connection_class(ssl_disabled=True, **kwargs), None
    protocol = tls.handshakes.protocol
    if settings.required and protocol is None:
        conn.close()  # not expected of PyMySQL 1.2 (it refuses first), but never plain text when required
        raise pymysql.err.OperationalError(2026, "SSL is required but the server doesn't support it")
    return conn, protocol


def _offers_no_tls(exc: pymysql.err.OperationalError) -> bool:
    return bool(exc.args) and exc.args[0] == 2026 and "support" in str(exc.args[-1])


def open_mysql(endpoint: Endpoint) -> pymysql.connections.Connection:
    """:func:`connect`'s connection alone."""
    return connect(endpoint)[0]


def run_query(conn, sql: str) -> Table:
    """Run one plain query (no prepared statements: ProxySQL admin has none)."""
    with conn.cursor() as cursor:
        cursor.execute(sql)
        columns = tuple(d[0] for d in (cursor.description or ()))
        rows = tuple(cursor.fetchall())
    return Table(columns, rows)


class Folding:
    """What a connection knows for combining the header's and the pool's readings into one query
    (proxytop.collectors.folded): which collectors are due in the
    batch being run (told by the engine, :meth:`plan`), the part kept for the second one, the
    pool's columns, and the collectors seen (each finds its partner here)."""

    def __init__(self):
        self.due = frozenset()  # names of the collectors due in this batch
        self.kept: Dict[str, Tuple[object, float, float]] = {}  # name -> (data, started, started wall)
        self.pool_columns: Dict[str, Tuple[str, ...]] = {}  # pool table -> its columns' names
        self.collectors: Dict[str, object] = {}  # table -> the collector that reads it this way
        self.refused = False  # the ProxySQL refused the combined query: two queries from now on
        self.clock = time.monotonic  # the engine's

    def plan(self, due, clock=time.monotonic) -> None:
        """A batch starts: ``due`` are the names of the collectors it runs."""
        self.due = frozenset(due)
        self.kept.clear()
        self.clock = clock


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
        if _RESET_TABLE.search(sql):
            # Reading a *_reset table zeroes ProxySQL's counters for everybody.
            raise errors.UnsafeQuery("it names a *_reset table")
        self.queries += 1
        return run_query(self.conn, admin_statement(sql))

    def execute(self, sql: str) -> None:
        """The one write proxytop makes (after the user confirms): a KILL CONNECTION."""
        self.queries += 1
        with self.conn.cursor() as cursor:
            cursor.execute(admin_statement(sql))


def open_admin(endpoint: Endpoint) -> AdminSession:
    try:
        conn, protocol = connect(endpoint)
    except pymysql.err.OperationalError as exc:
        refused_by_mysql(exc)
        if exc.args and exc.args[0] == 2013 and "timed out" in str(exc.args[-1]):
            # connected, then no greeting within the timeout: an HTTP server waiting for its
            # request, or a hung server (one attempt, one timeout: PyMySQL does not retry)
            raise errors.NotMySQL(silent=True) from exc
        raise
    except pymysql.err.InternalError as exc:  # "Packet sequence number wrong": another protocol's bytes
        raise errors.NotMySQL(silent=False) from exc
    try:
        session = AdminSession(conn=conn, endpoint=endpoint, encryption=protocol)
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
        raise errors.MySQLServerFound(f"a MySQL server answered: {message}") from exc


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
        if server.startswith("5.5.5-"):  # MariaDB's greeting keeps an old prefix for old clients
            server = server[len("5.5.5-"):]
        found = " ".join(str(part) for part in (server, f"({text})" if text else "") if part)
        raise errors.MySQLServerFound(f"server says {text or server!r}", found=found)
    try:
        version = run_query(session.conn, admin_statement("select @@version"))
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
    session.pgsql_servers = count_pgsql_servers(session)


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
        # What answered instead, when it was a MySQL server: the live view then watches it as one.
        self.found_mysql: Optional[str] = None
        self._answered: set = set()  # the endpoints that answered as ProxySQL (private: not recorded)

    def opened(self, session: AdminSession) -> None:
        """A session was opened to ``session.endpoint``: it is the header's from now on."""
        self.session = session
        self._answered.add(session.endpoint.label)

    def open(self, endpoint: Endpoint) -> AdminSession:
        """An admin session to ``endpoint``, noting what answered when it was a MySQL server."""
        try:
            return open_admin(endpoint)
        except errors.MySQLServerFound as exc:
            self.found_mysql = exc.found
            raise

    def connect(self) -> AdminSession:
        session = self.open(self.endpoint)
        self.opened(session)
        log.info("connected to %s as %s, version %s, %s", self.endpoint.label, self.endpoint.user,
                 session.version_text, session.encryption or "no TLS")
        return session

    def is_connection_error(self, exc: BaseException) -> bool:
        return errors.is_connection_error(exc)

    def describe_error(self, exc: BaseException) -> str:
        if isinstance(exc, errors.NotMySQL) and exc.silent and self.endpoint.label in self._answered:
            # It answered as ProxySQL before: now hung, stopped or overloaded, not the wrong port.
            exc = TimeoutError("timed out")
        return errors.describe(exc, password=self.endpoint.password, timeout=self.endpoint.timeout,
                               server=self.endpoint.socket or self.endpoint.host)


def count_pgsql_servers(session: AdminSession) -> Optional[int]:
    """Rows of runtime_pgsql_servers on a 3.x admin connection (None when not readable): asked
    once when the connection opens, so that ``m`` knows without a query of its own."""
    if not session.version or session.version < (3,) or "runtime_pgsql_servers" not in session.tables:
        return None
    result = run_query(session.conn, admin_statement("select count(*) from runtime_pgsql_servers"))
    try:
        return int(result.rows[0][0])
    except (IndexError, TypeError, ValueError):
        return None
