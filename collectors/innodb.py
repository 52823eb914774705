"""Collectors for the MySQL / MariaDB servers behind ProxySQL: InnoDB flushing.

One :class:`MySQLSource` per server (the engine's pool of threads serves them, so a slow server
delays only itself) and three collectors on it: ``innodb.status.<server>`` (status variables, no
privilege needed), ``innodb.vars.<server>`` (variables, slowly; with the paths the IOstat
screen maps onto devices and how proxytop reaches the server) and ``innodb.engine.<server>``
(SHOW ENGINE INNODB STATUS and INNODB_METRICS, which need PROCESS: without it the reading says
so instead of failing). On the ProxySQL admin connection, ``innodb.discovery`` reads
runtime_mysql_servers and the monitor credentials. Nothing here writes to any server.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import pymysql

from proxytop import errors
from proxytop.core import MYSQL_SOURCE_PREFIX, Collector, Table
from proxytop.metrics.innodb import (ALL_METRICS, LSN_METRICS, EngineReading, Flavour, Metric, detect_flavour,
                                     metrics_from_rows, parse_status_text)
from proxytop.metrics.rates import to_number
from proxytop.polling.connection import Endpoint, PyMySQLSource, close_quietly, connect, run_query

log = logging.getLogger(__name__)

PROXYSQL = "proxysql"
DISCOVERY = "innodb.discovery"
# Every statement proxytop sends a MySQL server starts with this comment, so that a DBA tells
# proxytop's sessions apart in a processlist, the general log or an audit log. (Digests strip
# comments: there proxytop's statements are known by their text. ProxySQL's admin interface
# is sent none: it matches some of its commands by their exact text.)
TAG = "/* proxytop */ "
ACCESS_DENIED = {1227, 1142, 1143, 1044}  # ER_SPECIFIC_ACCESS_DENIED_ERROR and friends
DENIED_RETRY = 60.0  # seconds before a statement refused for a missing privilege is sent again

# What the InnoDB screen needs, plus the paths the IOstat screen maps onto devices.
VARIABLES = (
    "version", "version_comment", "hostname", "port", "socket",
    "datadir", "innodb_data_home_dir", "innodb_log_group_home_dir", "innodb_undo_directory",
    "innodb_temp_tablespaces_dir", "innodb_tmpdir", "log_bin", "log_bin_basename", "relay_log_basename",
    "tmpdir", "innodb_doublewrite_dir",
    "innodb_log_file_size", "innodb_log_files_in_group", "innodb_redo_log_capacity", "innodb_log_buffer_size",
    "innodb_buffer_pool_size", "innodb_buffer_pool_instances", "innodb_page_size",
    "innodb_io_capacity", "innodb_io_capacity_max", "innodb_max_dirty_pages_pct",
    "innodb_max_dirty_pages_pct_lwm", "innodb_adaptive_flushing", "innodb_adaptive_flushing_lwm",
    "innodb_flush_log_at_trx_commit", "innodb_flush_method", "innodb_flush_neighbors",
    "innodb_flush_sync", "innodb_lru_scan_depth", "innodb_page_cleaners", "innodb_thread_concurrency",
    "innodb_doublewrite", "sync_binlog",
)

VERSION_SQL = "SELECT @@version, @@version_comment"  # once per connection
ENGINE_STATUS_SQL = "SHOW ENGINE INNODB STATUS"
VARIABLES_SQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})".format(", ".join(f"'{n}'" for n in VARIABLES))


def server_label(endpoint: Endpoint) -> str:
    """How a server is named in collector and source names: host:port or the socket path."""
    return endpoint.socket if endpoint.socket else f"{endpoint.host}:{endpoint.port}"


def source_name(endpoint: Endpoint) -> str:
    return f"{MYSQL_SOURCE_PREFIX}{server_label(endpoint)}"


def describe_mysql_error(exc: BaseException, password: Optional[str] = None, server: str = "") -> str:
    """One plain line for a MySQL-side failure (never the password; ``server`` names the host
    in TLS problems)."""
    code = _code(exc)
    text = str(exc.args[1]) if code is not None and len(exc.args) > 1 else str(exc)
    lowered = text.lower()
    if code in (2002, 2003) or isinstance(exc, ConnectionRefusedError):
        if "refused" in lowered or isinstance(exc, ConnectionRefusedError):
            message = "connection refused (is the MySQL server running and listening there?)"
        elif "no such file" in lowered:
            message = "socket file not found"
        else:
            message = errors.describe(exc, server=server)
    elif code in ACCESS_DENIED:
        message = f"access denied: {text}"
    else:
        message = errors.describe(exc, server=server)
    if password:
        message = errors.mask_password(message, password)
    return " ".join(message.split())


def _code(exc: BaseException) -> Optional[int]:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


@dataclass
class MySQLSession:
    """An open connection to one MySQL server and what was learnt when it opened."""

    conn: object
    endpoint: Endpoint
    version_text: str = ""
    version_comment: str = ""
    flavour: Optional[Flavour] = None
    queries: int = 0
    # A statement refused for lack of PROCESS is not retried every poll (each refusal is an
    # access-denied error in the server's counters and audit logs): monotonic time of the
    # next attempt, per statement.
    denied_until: Dict[str, float] = field(default_factory=dict)
    reopens: int = 0
    encryption: Optional[str] = None  # 'TLSv1.3' when the connection is encrypted
    # MariaDB: whether this user can read INNODB_METRICS (None: not known yet). Once it can, the
    # status collector's one statement brings the engine collector's rows too (see InnoDBStatus).
    engine_readable: Optional[bool] = None
    prefetched: Optional[Tuple[float, EngineReading]] = None  # (monotonic time read, the engine's part)

    @property
    def reads_together(self) -> bool:
        """One statement per reading: MariaDB (its status variables are a table to join) and
        a user that may read the InnoDB tables."""
        return self.engine_readable is True and self.flavour is not None and self.flavour.is_mariadb

    def query(self, sql: str) -> Table:
        self.queries += 1
        return run_query(self.conn, TAG + sql)

    def read_unless_denied(self, key: str, sql: str, now: float, retry_after: float = DENIED_RETRY):
        """(table or None, denied, error line or None) of ``sql``. A statement refused for a
        missing privilege is not sent again until ``retry_after`` seconds have passed (each
        refusal is an access-denied error in the server's counters and audit logs); another
        failed statement is one line; a broken connection raises."""
        if self.denied_until.get(key, 0.0) > now:
            return None, True, None
        try:
            return self.query(sql), False, None
        except pymysql.err.MySQLError as exc:
            if _code(exc) in ACCESS_DENIED:
                self.denied_until[key] = now + retry_after
                return None, True, None
            if errors.is_connection_error(exc):
                raise
            return None, False, describe_mysql_error(exc, self.endpoint.password)

    def retry_denied(self, now: float) -> None:
        """Forget the refusals whose wait is over, on a new connection: a privilege granted
        meanwhile applies only to connections opened after it."""
        expired = [key for key, until in self.denied_until.items() if until <= now]
        if expired:
            for key in expired:
                del self.denied_until[key]
            self.reopen()

    def reopen(self) -> None:
        """A fresh connection in place: global privileges granted since apply only to new
        connections."""
        conn, self.encryption = connect(self.endpoint)
        close_quietly(self.conn)
        self.conn = conn
        self.reopens += 1


class MySQLSource(PyMySQLSource):
    """One MySQL / MariaDB server. ``endpoint`` may be replaced between connections (for
    instance when ProxySQL's monitor password changes); the next connect uses the new one."""

    # A fleet may be hundreds of servers: they share the engine's bounded pool of threads
    # instead of a thread each (a hung one holds one pool thread until its timeout).
    pooled = True

    def __init__(self, endpoint: Endpoint, description: str = ""):
        self.endpoint = endpoint
        self.name = source_name(endpoint)
        self.label = server_label(endpoint)
        self.description = description or f"MySQL {self.label}"
        self.session: Optional[MySQLSession] = None

    def connect(self) -> MySQLSession:
        endpoint = self.endpoint
        conn, protocol = connect(endpoint)
        try:
            session = MySQLSession(conn=conn, endpoint=endpoint, encryption=protocol)
            table = session.query(VERSION_SQL)
            if table.rows:
                session.version_text = table.rows[0][0] or ""
                session.version_comment = table.rows[0][1] or ""
            session.flavour = detect_flavour(session.version_text, session.version_comment)
        except BaseException:
            close_quietly(conn)
            raise
        self.session = session
        log.info("connected to %s as %s: %s", self.label, endpoint.user, session.version_text)
        return session

    def is_connection_error(self, exc: BaseException) -> bool:
        if _code(exc) in ACCESS_DENIED:
            return False  # a missing privilege concerns one query, not the connection
        return errors.is_connection_error(exc)

    def describe_error(self, exc: BaseException) -> str:
        return describe_mysql_error(exc, self.endpoint.password, server=self.endpoint.socket or self.endpoint.host)


class ServerCollector(Collector):
    kind = ""

    def __init__(self, endpoint: Endpoint):
        self.server = server_label(endpoint)
        self.name = f"innodb.{self.kind}.{self.server}"
        self.source = source_name(endpoint)


# The status variables the InnoDB screen reads (proxytop.metrics.innodb).
STATUS_VARIABLES = (
    "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_flushed", "Innodb_buffer_pool_pages_lru_flushed",
    "Innodb_buffer_pool_pages_total", "Innodb_buffer_pool_wait_free", "Innodb_checkpoint_age",
    "Innodb_checkpoint_max_age", "Innodb_data_pending_fsyncs", "Innodb_history_list_length", "Innodb_log_waits",
    "Innodb_lsn_current", "Innodb_lsn_flushed", "Innodb_lsn_last_checkpoint", "Innodb_os_log_pending_fsyncs",
    "Innodb_os_log_pending_writes", "Innodb_os_log_written", "Innodb_redo_log_checkpoint_lsn",
    "Innodb_redo_log_current_lsn", "Innodb_redo_log_flushed_to_disk_lsn",
)
STATUS_SQL = "SHOW GLOBAL STATUS WHERE Variable_name IN ({})".format(", ".join(f"'{n}'" for n in STATUS_VARIABLES))


# MariaDB: the engine collector's reading as (name, value, kind) rows of text: the INNODB_METRICS
# counters that are on (kind 'metric'; one that is off reads as missing, which the screen treats
# alike), and the pending writes of INNODB_BUFFER_POOL_STATS ('LRU flush-list', kind 'pool') in
# place of SHOW ENGINE INNODB STATUS, whose other figures are status variables there (the LSNs
# too: INNODB_METRICS' are not asked for).
_METRIC_NAMES = ", ".join(f"'{name}'" for name in ALL_METRICS if name not in LSN_METRICS)
ENGINE_SQL_MARIADB = (
    "SELECT NAME, CAST(COUNT AS CHAR), 'metric' FROM information_schema.INNODB_METRICS "
    f"WHERE ENABLED AND NAME IN ({_METRIC_NAMES}) UNION ALL SELECT 'PENDING_WRITES', "
    "CONCAT(SUM(PENDING_FLUSH_LRU), ' ', SUM(PENDING_FLUSH_LIST)), 'pool' "
    "FROM information_schema.INNODB_BUFFER_POOL_STATS")
# MariaDB, with PROCESS: a whole reading in one statement (one round trip instead of three):
# the status variables (kind 'status') and the engine collector's rows.
READING_SQL_MARIADB = (
    "SELECT VARIABLE_NAME, VARIABLE_VALUE, 'status' FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ({}) "
    "UNION ALL {}".format(", ".join(f"'{n.upper()}'" for n in STATUS_VARIABLES), ENGINE_SQL_MARIADB))
_STATUS_NAMES = {name.upper(): name for name in STATUS_VARIABLES}


def counter(value):
    """A status variable's value as an int when it is one (they are counters and gauges, read
    once here rather than at every use), else as sent.

    >>> counter("42"), counter("ON"), counter(None)
    (42, 'ON', None)
    """
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def status_values(table: Table) -> Dict[str, object]:
    """SHOW GLOBAL STATUS rows (Variable_name, Value) as {name: counter(value)}."""
    return {str(row[0]): counter(row[1]) for row in table.rows if row and row[0] is not None}


def split_reading(rows: Sequence[Sequence]) -> Tuple[Dict[str, object], Dict[str, Metric], Optional[Tuple[int, int]]]:
    """(status variables by their SHOW STATUS name, the INNODB_METRICS counters that are on,
    (LRU, flush list) pending writes) from the rows of READING_SQL_MARIADB or ENGINE_SQL_MARIADB.

    >>> status, metrics, pending = split_reading([("INNODB_LOG_WAITS", "3", "status"),
    ...     ("trx_rseg_history_len", "12", "metric"), ("PENDING_WRITES", "0 5", "pool")])
    >>> status, metrics, pending
    ({'Innodb_log_waits': 3}, {'trx_rseg_history_len': Metric(count=12, enabled=True)}, (0, 5))
    >>> split_reading([("PENDING_WRITES", None, "pool")])[2] is None  # no pool to sum
    True
    """
    status: Dict[str, object] = {}
    metrics: Dict[str, Metric] = {}
    pending = None
    for name, value, kind in rows:
        if kind == "status":
            status[_STATUS_NAMES.get(name, name)] = counter(value)
        elif kind == "metric":
            number = to_number(value)
            metrics[name] = Metric(int(number) if number is not None else None, True)
        elif kind == "pool" and value:
            counts = [to_number(part) for part in value.split()]
            if len(counts) == 2 and None not in counts:
                pending = (int(counts[0]), int(counts[1]))
    return status, metrics, pending


class InnoDBStatus(ServerCollector):
    """The InnoDB status variables the screen reads (STATUS_VARIABLES, those the server has) as
    {name: value}, the numbers as int. Needs no privilege.

    On MariaDB, once the user is known to read the InnoDB tables, the same statement brings the
    engine collector's rows (READING_SQL_MARIADB), which that collector, next in the same batch,
    takes instead of asking again: one round trip per server reading instead of two."""

    kind = "status"
    default_interval = 1.0
    min_interval = 0.5
    history = 2

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        super().__init__(endpoint)
        self.clock = clock

    def collect(self, session: MySQLSession) -> Dict[str, object]:
        if session.reads_together:
            started = self.clock()
            try:
                reading = split_reading(session.query(READING_SQL_MARIADB).rows)
            except pymysql.err.MySQLError as exc:
                if _code(exc) not in ACCESS_DENIED:
                    raise
                # PROCESS revoked: status alone; the engine collector finds out on its own
                session.engine_readable = False
            else:
                status, metrics, pending = reading
                session.prefetched = (started, EngineReading(metrics=metrics, pool_pending=pending))
                return status
        return status_values(session.query(STATUS_SQL))


class InnoDBVariables(ServerCollector):
    """The variables the InnoDB and IOstat screens need; they change rarely: read slowly."""

    kind = "vars"
    default_interval = 30.0
    min_interval = 10.0
    own_pace = True

    def collect(self, session: MySQLSession) -> Dict[str, object]:
        data: Dict[str, object] = {str(name): value for name, value in session.query(VARIABLES_SQL).rows}
        endpoint = session.endpoint
        server_port, server_socket = data.get("port"), data.get("socket")
        data["server_port"] = server_port
        data["server_socket"] = server_socket
        if endpoint.socket:
            data["host"] = "localhost"
            data["socket"] = endpoint.socket
            data["port"] = int(server_port) if str(server_port or "").isdigit() else None
        else:
            data["host"] = endpoint.host
            data["port"] = endpoint.port
            data["socket"] = server_socket
        data["user"] = endpoint.user
        return data


# SELECT *: MySQL says STATUS, MariaDB ENABLED (metrics_from_rows reads either)
METRICS_SQL = "SELECT * FROM information_schema.INNODB_METRICS WHERE NAME IN ({})".format(
    ", ".join(f"'{name}'" for name in ALL_METRICS))
PREFETCH_FRESH = 0.5  # seconds: the engine's part of a status reading older than this is read again


class InnoDBEngine(ServerCollector):
    """SHOW ENGINE INNODB STATUS (pending writes and the modified age; the LSNs where no status
    variable has them) and INNODB_METRICS (flushing by type, the server's own limits); on MariaDB
    INNODB_METRICS and INNODB_BUFFER_POOL_STATS, usually brought by the status collector's
    statement a moment before. Both need PROCESS: without it the reading says so (never an
    error), and the refused statement is retried once a minute, on a fresh connection (so that
    a GRANT made meanwhile is seen)."""

    kind = "engine"
    default_interval = 1.0
    min_interval = 1.0
    history = 2

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        super().__init__(endpoint)
        self.clock = clock

    def _read(self, session: MySQLSession, key: str, sql: str):
        """(table or None, denied, error line or None)."""
        return session.read_unless_denied(key, sql, self.clock())

    def collect(self, session: MySQLSession) -> EngineReading:
        prefetched, session.prefetched = session.prefetched, None  # taken once
        if prefetched is not None and self.clock() - prefetched[0] <= PREFETCH_FRESH:
            return prefetched[1]  # read with the status variables, a moment ago
        session.retry_denied(self.clock())
        if session.flavour is not None and session.flavour.is_mariadb:
            return self._collect_mariadb(session)
        text = metrics = None
        table, text_denied, text_error = self._read(session, "status", ENGINE_STATUS_SQL)
        if table is not None:
            column = table.columns.index("Status") if table.has("Status") else len(table.columns) - 1
            raw = table.rows[0][column] if table.rows else ""
            text = parse_status_text(raw or "")
        table, metrics_denied, metrics_error = self._read(session, "metrics", METRICS_SQL)
        if table is not None:
            metrics = metrics_from_rows(table.dicts())
        return EngineReading(text=text, metrics=metrics, text_denied=text_denied, metrics_denied=metrics_denied,
                             text_error=text_error, metrics_error=metrics_error)

    def _collect_mariadb(self, session: MySQLSession) -> EngineReading:
        """MariaDB's LSNs, checkpoint age and limit, history list and pending fsyncs are status
        variables: what the status text added is the pending writes, which
        INNODB_BUFFER_POOL_STATS has. One statement, no text to parse."""
        table, denied, error = self._read(session, "engine", ENGINE_SQL_MARIADB)
        if table is None:
            session.engine_readable = False if denied else session.engine_readable
            return EngineReading(text_denied=denied, metrics_denied=denied, text_error=error, metrics_error=error)
        session.engine_readable = True
        _status, metrics, pending = split_reading(table.rows)
        return EngineReading(metrics=metrics, pool_pending=pending)


def server_collectors(endpoint: Endpoint) -> List[ServerCollector]:
    return [InnoDBStatus(endpoint), InnoDBVariables(endpoint), InnoDBEngine(endpoint)]


# ----- discovery through ProxySQL ---------------------------------------------------------------


@dataclass(frozen=True)
class DiscoveredServer:
    """One backend of ProxySQL, however many hostgroups it is in."""

    host: str
    port: int
    hostgroups: Tuple[int, ...]
    statuses: Tuple[str, ...]  # ProxySQL's status per hostgroup, same order
    comment: str = ""

    @property
    def label(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Discovery:
    admin: bool
    servers: Tuple[DiscoveredServer, ...] = ()
    monitor_user: Optional[str] = None
    monitor_password: Optional[str] = field(default=None, repr=False)


def group_servers(rows: Sequence[Mapping]) -> Tuple[DiscoveredServer, ...]:
    """runtime_mysql_servers rows -> one entry per distinct host:port, hostgroups in order.

    >>> servers = group_servers([
    ...     {"hostgroup_id": "20", "hostname": "db1", "port": "3306", "status": "ONLINE", "comment": "r"},
    ...     {"hostgroup_id": "10", "hostname": "db1", "port": "3306", "status": "ONLINE", "comment": "w"},
    ...     {"hostgroup_id": "20", "hostname": "db2", "port": "3306", "status": "SHUNNED", "comment": ""}])
    >>> [(s.label, s.hostgroups, s.statuses) for s in servers]
    [('db1:3306', (10, 20), ('ONLINE', 'ONLINE')), ('db2:3306', (20,), ('SHUNNED',))]
    """
    grouped: Dict[Tuple[str, int], List[Tuple[int, str, str]]] = {}
    for row in rows:
        host = str(row.get("hostname") or "").strip()
        try:
            port = int(str(row.get("port") or "3306"))
            hostgroup = int(str(row.get("hostgroup_id")))
        except ValueError:
            continue
        if not host:
            continue
        grouped.setdefault((host, port), []).append((hostgroup, str(row.get("status") or ""),
                                                     str(row.get("comment") or "")))
    servers = []
    for (host, port), entries in sorted(grouped.items()):
        entries.sort()
        comments = [c for _, _, c in entries if c]
        servers.append(DiscoveredServer(host, port, tuple(h for h, _, _ in entries), tuple(s for _, s, _ in entries),
                                        comments[0] if comments else ""))
    return tuple(servers)


class MySQLDiscovery(Collector):
    """The distinct backends in runtime_mysql_servers and, when they will be used, the monitor
    credentials (mysql-monitor_username / mysql-monitor_password). Admin users only: with the
    stats user the reading says discovery needs an admin user and no query is sent."""

    name = DISCOVERY
    source = PROXYSQL
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True

    def __init__(self, monitor_credentials: bool = True):
        # False when MySQL credentials were given: ProxySQL's monitor password is then never read.
        self.monitor_credentials = monitor_credentials

    def collect(self, session) -> Discovery:
        if not session.is_admin:
            return Discovery(admin=False)
        table = session.query("select hostgroup_id, hostname, port, status, comment from runtime_mysql_servers")
        if not self.monitor_credentials:
            return Discovery(admin=True, servers=group_servers(table.dicts()))
        settings = session.query("select variable_name, variable_value from global_variables where variable_name "
                                 "in ('mysql-monitor_username', 'mysql-monitor_password')")
        values = {str(row[0]): row[1] for row in settings.rows}
        return Discovery(admin=True, servers=group_servers(table.dicts()),
                         monitor_user=values.get("mysql-monitor_username") or None,
                         monitor_password=values.get("mysql-monitor_password"))
