"""Collectors for the MySQL / MariaDB servers behind ProxySQL: InnoDB flushing.

One :class:`MySQLSource` per server (served by the engine's pool of threads, one thread at a
time, so a slow server delays only itself) and three collectors on it:

- ``innodb.status.<server>``: the InnoDB status variables the screen reads, from SHOW GLOBAL
  STATUS (no privilege needed);
- ``innodb.vars.<server>``: a subset of SHOW GLOBAL VARIABLES, slowly (own pace). The data is a
  plain mapping that also carries the paths other screens need (datadir,
  innodb_log_group_home_dir, log_bin_basename, tmpdir, ...) and how proxytop reaches the
  server ("host", "port", "socket");
- ``innodb.engine.<server>``: SHOW ENGINE INNODB STATUS (pending writes, the modified age; LSNs
  on MySQL before 8.0.30) and INNODB_METRICS (flushing by type, limits) — both need PROCESS;
  without it the reading says so instead of failing. On MariaDB, INNODB_METRICS and the pending
  writes of INNODB_BUFFER_POOL_STATS, read with the status variables in one statement.

And on the ProxySQL admin connection, ``innodb.discovery`` reads runtime_mysql_servers and the
monitor credentials (admin users only). Nothing here writes to any server.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import pymysql

from proxytop import errors
from proxytop.core import Collector, Table
from proxytop.metrics.innodb import (ALL_METRICS, LSN_METRICS, EngineReading, Flavour, Metric, detect_flavour,
                                     metrics_from_rows, parse_status_text)
from proxytop.metrics.rates import to_number
from proxytop.polling.connection import Endpoint, PyMySQLSource, close_quietly, connect, run_query

log = logging.getLogger(__name__)

PROXYSQL = "proxysql"
DISCOVERY = "innodb.discovery"
ACCESS_DENIED = {1227, 1142, 1143, 1044}  # ER_SPECIFIC_ACCESS_DENIED_ERROR and friends

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


# Of those, what a running server cannot change (its identity, paths and structure): read once
# per connection. The rest are settings SET GLOBAL changes (MariaDB 10.11 even resizes the redo
# log), read at every reading of the variables.
STATIC_VARIABLES = frozenset((
    "version", "version_comment", "hostname", "port", "socket", "datadir", "innodb_data_home_dir",
    "innodb_log_group_home_dir", "innodb_undo_directory", "innodb_temp_tablespaces_dir", "log_bin",
    "log_bin_basename", "relay_log_basename", "tmpdir", "innodb_doublewrite_dir", "innodb_log_files_in_group",
    "innodb_buffer_pool_instances", "innodb_page_size",
))
ALL_VARIABLES_SQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})".format(
    ", ".join(f"'{name}'" for name in VARIABLES))
DYNAMIC_VARIABLES_SQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})".format(
    ", ".join(f"'{name}'" for name in VARIABLES if name not in STATIC_VARIABLES))


def server_label(endpoint: Endpoint) -> str:
    """How a server is named in collector and source names: host:port or the socket path."""
    return endpoint.socket if endpoint.socket else f"{endpoint.host}:{endpoint.port}"


def source_name(endpoint: Endpoint) -> str:
    return f"mysql:{server_label(endpoint)}"


def describe_mysql_error(exc: BaseException, password: Optional[str] = None, server: str = "") -> str:
    """One plain line for a MySQL-side failure (never the password; ``server`` names the host
    in TLS problems)."""
    code = exc.args[0] if getattr(exc, "args", None) and isinstance(exc.args[0], int) else None
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
        message = message.replace(password, "***")
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
    metrics_columns: Optional[str] = None  # INNODB_METRICS' select list, once the first reading showed it
    # MariaDB: whether this user can read INNODB_METRICS (None: not known yet). Once it can, the
    # status collector's one statement brings the engine collector's rows too (see InnoDBStatus).
    engine_readable: Optional[bool] = None
    prefetched: Optional[Tuple[float, EngineReading]] = None  # (monotonic time read, the engine's part)
    static_variables: Optional[Dict[str, object]] = None  # STATIC_VARIABLES, once read on this connection
    # whether a reading may come packed in one row (PACKED_READING_SQL_MARIADB): the server's
    # group_concat_max_len holds the longest list, and no reading came otherwise than whole
    packed_reading: bool = False

    @property
    def reads_together(self) -> bool:
        """One statement per reading: MariaDB (its status variables are a table to join) and
        a user that may read the InnoDB tables."""
        return self.engine_readable is True and self.flavour is not None and self.flavour.is_mariadb

    def take_prefetched(self, now: float, fresh: float) -> Optional[EngineReading]:
        """The engine's part of a reading taken less than ``fresh`` seconds ago (in the same
        batch), once; None when there is none."""
        prefetched, self.prefetched = self.prefetched, None
        if prefetched is None or now - prefetched[0] > fresh:
            return None
        return prefetched[1]

    def query(self, sql: str) -> Table:
        self.queries += 1
        return run_query(self.conn, sql)

    def reopen(self) -> None:
        """A fresh connection in place: global privileges granted since apply only to new
        connections."""
        conn, self.encryption = connect(self.endpoint)
        old, self.conn = self.conn, conn
        try:
            old.close()
        except Exception:
            pass
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
            table = session.query("SELECT @@version, @@version_comment, @@group_concat_max_len")
            if table.rows:
                session.version_text = table.rows[0][0] or ""
                session.version_comment = table.rows[0][1] or ""
                session.packed_reading = packed_lists_fit(table.rows[0][2])
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


def name_value(table: Table) -> Dict[str, str]:
    """A two-column result (Variable_name, Value) as a dict."""
    return {str(row[0]): row[1] for row in table.rows if row and row[0] is not None}


class ServerCollector(Collector):
    kind = ""

    def __init__(self, endpoint: Endpoint):
        self.server = server_label(endpoint)
        self.name = f"innodb.{self.kind}.{self.server}"
        self.source = source_name(endpoint)


# The status variables the InnoDB screen reads (proxytop.metrics.innodb), of the hundred or so that
# LIKE 'Innodb%' lists: each row costs decoding, on every reading of every server.
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
# The same reading packed into one row of three strings, which the server builds and Python
# splits: "<count> NAME VALUE NAME VALUE ..." for the status variables and the metrics that are
# on, "<LRU> <flush list>" for the pending writes. Each row of READING_SQL_MARIADB cost a
# packet, a tuple and three values decoded (a server's 20 rows were a third of its reading);
# GROUP_CONCAT cuts a list at group_concat_max_len (1 KiB by default before MariaDB 10.2.4): a
# connection whose limit is below the longest list reads row by row (packed_lists_fit), and so
# does one whose packed reading did not hold its count of pairs (a value with a space).
PACKED_READING_SQL_MARIADB = (
    "SELECT (SELECT CONCAT(COUNT(*), ' ', IFNULL(GROUP_CONCAT(VARIABLE_NAME, ' ', VARIABLE_VALUE SEPARATOR ' '), '')) "
    "FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ({})), "
    "(SELECT CONCAT(COUNT(*), ' ', IFNULL(GROUP_CONCAT(NAME, ' ', COUNT SEPARATOR ' '), '')) "
    "FROM information_schema.INNODB_METRICS WHERE ENABLED AND NAME IN ({})), "
    "(SELECT CONCAT(SUM(PENDING_FLUSH_LRU), ' ', SUM(PENDING_FLUSH_LIST)) "
    "FROM information_schema.INNODB_BUFFER_POOL_STATS)".format(
        ", ".join(f"'{n.upper()}'" for n in STATUS_VARIABLES), _METRIC_NAMES))


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


# The longest list a packed reading may hold: every name asked for, a 20-digit value (the
# largest BIGINT UNSIGNED) and two separators each.
PACKED_LIST_LIMIT = max(sum(len(name) + 22 for name in STATUS_VARIABLES) + 21,
                        sum(len(name) + 22 for name in ALL_METRICS if name not in LSN_METRICS) + 21)


def packed_lists_fit(group_concat_max_len) -> bool:
    """Whether GROUP_CONCAT keeps a packed reading's lists whole on this connection (a server
    set to cut them shorter than PACKED_LIST_LIMIT, under 1 KiB, is read row by row).

    >>> packed_lists_fit(512), packed_lists_fit(1024), packed_lists_fit(None)
    (False, True, False)
    """
    try:
        return int(group_concat_max_len) >= PACKED_LIST_LIMIT
    except (TypeError, ValueError):
        return False


def _pairs(packed) -> Optional[List[str]]:
    """"<count> name value ..." as [name, value, ...]; None when it holds other than ``count``
    pairs (cut short, or a value with a space).

    >>> _pairs("2 A 1 B 22"), _pairs("0 "), _pairs("3 A 1 B 22"), _pairs(None)
    (['A', '1', 'B', '22'], [], None, None)
    """
    if not packed:
        return None
    parts = packed.split(" ")
    count = parts[0]
    if not count.isdigit():
        return None
    del parts[0]
    if parts == [""]:
        parts = []
    return parts if len(parts) == 2 * int(count) else None


def split_packed_reading(row: Sequence) -> Optional[Tuple[Dict[str, object], Dict[str, Metric],
                                                          Optional[Tuple[int, int]]]]:
    """:func:`split_reading` for the one row of PACKED_READING_SQL_MARIADB; None when a list
    did not come whole (then the rows of READING_SQL_MARIADB are read instead).

    >>> status, metrics, pending = split_packed_reading(("2 INNODB_LOG_WAITS 3 INNODB_CHECKPOINT_AGE 40",
    ...                                                  "1 trx_rseg_history_len 12", "0 5"))
    >>> status, metrics, pending
    ({'Innodb_log_waits': 3, 'Innodb_checkpoint_age': 40}, {'trx_rseg_history_len': Metric(count=12, enabled=True)}, (0, 5))
    >>> split_packed_reading(("0 ", "0 ", None))  # no metric on, no buffer pool to sum
    ({}, {}, None)
    >>> split_packed_reading(("3 INNODB_LOG_WAITS 3 INNODB_CHECKPOINT_AGE 40", "0 ", "0 0")) is None  # cut short
    True
    """
    status_pairs, metric_pairs = _pairs(row[0]), _pairs(row[1])
    if status_pairs is None or metric_pairs is None:
        return None
    names = _STATUS_NAMES
    status = {names.get(name, name): counter(value)
              for name, value in zip(status_pairs[::2], status_pairs[1::2])}
    metrics: Dict[str, Metric] = {}
    for name, value in zip(metric_pairs[::2], metric_pairs[1::2]):
        number = to_number(value)
        metrics[name] = Metric(int(number) if number is not None else None, True)
    pending = None
    if row[2]:
        counts = [to_number(part) for part in row[2].split()]
        if len(counts) == 2 and None not in counts:
            pending = (int(counts[0]), int(counts[1]))
    return status, metrics, pending


class InnoDBStatus(ServerCollector):
    """The InnoDB status variables the screen reads (STATUS_VARIABLES, those the server has) as
    {name: value}, the numbers as int. Needs no privilege.

    On MariaDB, once the user is known to read the InnoDB tables, the one statement of a
    reading also brings the engine collector's rows (READING_SQL_MARIADB), which that collector,
    next in the same batch, takes instead of asking again: per server reading one round trip
    and one result to decode instead of three."""

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
                reading = None
                if session.packed_reading:
                    rows = session.query(PACKED_READING_SQL_MARIADB).rows
                    reading = split_packed_reading(rows[0]) if rows else None
                    if reading is None:
                        log.info("%s: a packed reading did not hold its count of pairs: read row by row",
                                 self.server)
                        session.packed_reading = False
                if reading is None:
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
        # What only a restart changes is read once per connection (a restart means a new one);
        # the settings a SET GLOBAL changes, at every reading.
        static = session.static_variables
        data: Dict[str, object] = dict(name_value(session.query(ALL_VARIABLES_SQL if static is None
                                                                else DYNAMIC_VARIABLES_SQL)))
        if static is None:
            session.static_variables = {name: data[name] for name in STATIC_VARIABLES if name in data}
        else:
            data.update(static)
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


PREFETCH_FRESH = 0.5  # seconds: the engine's part of a status reading older than this is read again


class InnoDBEngine(ServerCollector):
    """SHOW ENGINE INNODB STATUS (pending writes and the modified age; the LSNs where no status
    variable has them) and INNODB_METRICS (flushing by type, the server's own limits); on MariaDB
    INNODB_METRICS and INNODB_BUFFER_POOL_STATS (see _collect_mariadb), usually brought by the
    status collector's statement a moment before. Both
    need PROCESS: a user without it gets a reading that says so (the screen shows "needs
    PROCESS"), never an error, and the refused statement is retried once a minute only, on a
    fresh connection (so that a GRANT made meanwhile is seen)."""

    kind = "engine"
    default_interval = 1.0
    min_interval = 1.0
    history = 2
    retry_denied_after = 60.0

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        super().__init__(endpoint)
        self.clock = clock

    def _read(self, session: MySQLSession, key: str, sql: str):
        """(table or None, denied, error line or None)."""
        if session.denied_until.get(key, 0.0) > self.clock():
            return None, True, None
        try:
            return session.query(sql), False, None
        except pymysql.err.MySQLError as exc:
            if _code(exc) in ACCESS_DENIED:
                session.denied_until[key] = self.clock() + self.retry_denied_after
                return None, True, None
            if errors.is_connection_error(exc):
                raise
            return None, False, describe_mysql_error(exc, session.endpoint.password)

    def collect(self, session: MySQLSession) -> EngineReading:
        prefetched = session.take_prefetched(self.clock(), PREFETCH_FRESH)
        if prefetched is not None:
            return prefetched  # read with the status variables, a moment ago
        expired = [key for key, until in session.denied_until.items() if until <= self.clock()]
        if expired:
            # Time to try again, on a new connection: a GRANT PROCESS made meanwhile applies
            # only to connections opened after it.
            for key in expired:
                del session.denied_until[key]
            session.reopen()
        if session.flavour is not None and session.flavour.is_mariadb:
            return self._collect_mariadb(session)
        text = metrics = None
        table, text_denied, text_error = self._read(session, "status", "SHOW ENGINE INNODB STATUS")
        if table is not None:
            column = table.columns.index("Status") if table.has("Status") else len(table.columns) - 1
            raw = table.rows[0][column] if table.rows else ""
            text = parse_status_text(raw or "")
        names = ", ".join(f"'{name}'" for name in ALL_METRICS)
        # MySQL says STATUS, MariaDB ENABLED: the first reading asks for every column, later
        # ones only for the three it used (a reading of each of hundreds of servers).
        columns = session.metrics_columns or "*"
        table, metrics_denied, metrics_error = self._read(
            session, "metrics", f"SELECT {columns} FROM information_schema.INNODB_METRICS WHERE NAME IN ({names})")
        if table is not None:
            if session.metrics_columns is None:
                session.metrics_columns = metrics_columns(table.columns)
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


def metrics_columns(columns: Sequence[str]) -> Optional[str]:
    """The INNODB_METRICS columns metrics_from_rows() needs, as a select list; None when the
    table lacks one of them (then every column is read, as the first time).

    >>> metrics_columns(["NAME", "SUBSYSTEM", "COUNT", "MAX_COUNT", "ENABLED"])
    'NAME, COUNT, ENABLED'
    >>> metrics_columns(["NAME", "COUNT", "STATUS", "TYPE"]), metrics_columns(["NAME", "COUNT"])
    ('NAME, COUNT, STATUS', None)
    """
    upper = {str(c).upper(): str(c) for c in columns}
    state = "STATUS" if "STATUS" in upper else "ENABLED" if "ENABLED" in upper else None
    if state is None or "NAME" not in upper or "COUNT" not in upper:
        return None
    return ", ".join(upper[c] for c in ("NAME", "COUNT", state))


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
