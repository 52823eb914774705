"""A MySQL 8 server test double: the statements proxytop sends a MySQL server, answered with
MySQL 8.0.36's shapes (or 8.4's, ``version="8.4.3"``), written from the MySQL 8.0 / 8.4
reference manual. No real MySQL 8 runs here (Debian has only MariaDB): this double is how the
MySQL half of proxytop meets MySQL's names, columns and errors.

It speaks the MySQL protocol (tests/mysql_protocol.py) and answers:

- ``SELECT @@a, @@b``: the variables of tests/data/mysql8/global-variables.tsv;
- ``SHOW GLOBAL STATUS`` / ``SHOW GLOBAL VARIABLES``, with or without a WHERE, from the
  .tsv files beside it (MySQL's names: no Innodb_history_list_length); counters advance with
  time, so rates between two readings are not zero;
- ``SHOW REPLICA STATUS`` with 8.0.22+'s column names: two channels of a replica (``europe``
  lagging, ``asia`` stopped on an SQL error) or none for a primary (``replica=False``);
  8.0 still answers ``SHOW SLAVE STATUS`` with the old names, 8.4 gives error 1064;
- ``SHOW MASTER STATUS`` (8.0; ``SHOW BINARY LOG STATUS`` from 8.2, the only one in 8.4), its
  position moving with time, and ``SHOW REPLICAS``: two replicas of a primary;
- ``SHOW ENGINE INNODB STATUS`` (the MySQL 8.0.30 text the parser tests read) and SELECTs of
  ``information_schema`` (PROCESSLIST, INNODB_TRX, INNODB_METRICS) and
  ``performance_schema.threads``, run by SQLite over those tables with MySQL 8's columns (a
  column MySQL lacks, such as MariaDB's PROCESSLIST.TIME_MS, is error 1054);
- ``KILL QUERY n`` / ``KILL CONNECTION n`` (kept in ``kills``), ``EXPLAIN SELECT …`` in MySQL
  8's EXPLAIN columns.

Anything else is an error (1064, 1146, 1193…), never an empty answer, so that a change in
proxytop's SQL is caught; and every statement must carry proxytop's ``/* proxytop */`` tag
(PyMySQL's own ``SET`` as it connects aside). Run it by hand: ``python -m tests.mysql8_double``.
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import sqlite3
import time
from typing import Dict, List, Optional, Tuple

from tests.mysql_protocol import LONGLONG, VAR_STRING, ProtocolServer, QueryError

DATA = os.path.join(os.path.dirname(__file__), "data")
USER, PASSWORD = "monitor", "monitor-8-pw"
TAG = "/* proxytop */ "
SETUP = re.compile(r"^\s*set\s+(names|autocommit)\b", re.IGNORECASE)

# ----- the server's tables, as data ----------------------------------------------------------

# SHOW REPLICA STATUS, MySQL 8.0.22+ (MySQL doc "SHOW REPLICA STATUS Statement"), in order.
REPLICA_COLUMNS = (
    "Replica_IO_State", "Source_Host", "Source_User", "Source_Port", "Connect_Retry", "Source_Log_File",
    "Read_Source_Log_Pos", "Relay_Log_File", "Relay_Log_Pos", "Relay_Source_Log_File", "Replica_IO_Running",
    "Replica_SQL_Running", "Replicate_Do_DB", "Replicate_Ignore_DB", "Replicate_Do_Table", "Replicate_Ignore_Table",
    "Replicate_Wild_Do_Table", "Replicate_Wild_Ignore_Table", "Last_Errno", "Last_Error", "Skip_Counter",
    "Exec_Source_Log_Pos", "Relay_Log_Space", "Until_Condition", "Until_Log_File", "Until_Log_Pos",
    "Source_SSL_Allowed", "Source_SSL_CA_File", "Source_SSL_CA_Path", "Source_SSL_Cert", "Source_SSL_Cipher",
    "Source_SSL_Key", "Seconds_Behind_Source", "Source_SSL_Verify_Server_Cert", "Last_IO_Errno", "Last_IO_Error",
    "Last_SQL_Errno", "Last_SQL_Error", "Replicate_Ignore_Server_Ids", "Source_Server_Id", "Source_UUID",
    "Source_Info_File", "SQL_Delay", "SQL_Remaining_Delay", "Replica_SQL_Running_State", "Source_Retry_Count",
    "Source_Bind", "Last_IO_Error_Timestamp", "Last_SQL_Error_Timestamp", "Source_SSL_Crl", "Source_SSL_Crlpath",
    "Retrieved_Gtid_Set", "Executed_Gtid_Set", "Auto_Position", "Replicate_Rewrite_DB", "Channel_Name",
    "Source_TLS_Version", "Source_public_key_path", "Get_Source_public_key", "Network_Namespace",
)
CHANNEL_DEFAULTS = {
    "Replica_IO_State": "Waiting for source to send event", "Source_User": "repl", "Source_Port": 3306,
    "Connect_Retry": 60, "Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes", "Last_Errno": 0,
    "Last_Error": "", "Skip_Counter": 0, "Until_Condition": "None", "Until_Log_Pos": 0,
    "Source_SSL_Allowed": "No", "Source_SSL_Verify_Server_Cert": "No", "Last_IO_Errno": 0, "Last_IO_Error": "",
    "Last_SQL_Errno": 0, "Last_SQL_Error": "", "Source_Info_File": "mysql.slave_master_info", "SQL_Delay": 0,
    "SQL_Remaining_Delay": None, "Replica_SQL_Running_State": "Replica has read all relay log; waiting for more updates",
    "Source_Retry_Count": 86400, "Auto_Position": 1, "Get_Source_public_key": 0,
}
# SHOW MASTER STATUS (8.0) / SHOW BINARY LOG STATUS (8.2+), and SHOW REPLICAS (8.0.22+): the
# primary's binary log moves BINLOG_BYTES_PER_SECOND, and two replicas are connected to it.
BINLOG_COLUMNS = ("File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set")
BINLOG_BYTES_PER_SECOND = 20000
REPLICAS_COLUMNS = ("Server_Id", "Host", "Port", "Source_Id", "Replica_UUID")
REPLICAS = [[21, "db8-replica-1", 3306, 11, "8e3f4c74-ab12-11ee-9c1e-0242ac120021"],
            [22, "db8-replica-2", 3306, 11, "9f4a5d85-ab12-11ee-9c1e-0242ac120022"]]

# Two channels of a replica (multi-source): one behind (its lag grows LAG_PER_SECOND a second),
# one whose applier stopped on a duplicate key, as MySQL 8's multithreaded applier words it.
CHANNELS = (
    {"Channel_Name": "europe", "Source_Host": "db8-eu.example", "Seconds_Behind_Source": 95,
     "Source_Log_File": "binlog.000212", "Read_Source_Log_Pos": 4410221, "Relay_Source_Log_File": "binlog.000212",
     "Exec_Source_Log_Pos": 3901112, "Relay_Log_File": "db8-replica-relay-bin-europe.000044",
     "Relay_Log_Pos": 3901331, "Source_Server_Id": 11, "Source_UUID": "6c1f2a52-ab12-11ee-9c1e-0242ac120011",
     "Retrieved_Gtid_Set": "6c1f2a52-ab12-11ee-9c1e-0242ac120011:1-902211",
     "Executed_Gtid_Set": "6c1f2a52-ab12-11ee-9c1e-0242ac120011:1-901977"},
    {"Channel_Name": "asia", "Source_Host": "db8-ap.example", "Seconds_Behind_Source": None,
     "Replica_SQL_Running": "No", "Replica_SQL_Running_State": "", "Last_Errno": 1062, "Last_SQL_Errno": 1062,
     "Last_Error": "Coordinator stopped because there were error(s) in the worker(s). The most recent failure being: "
                   "Worker 1 failed executing transaction '7d2e3b63-ab12-11ee-9c1e-0242ac120012:5521' at source log "
                   "binlog.000098, end_log_pos 90211. See error log and/or "
                   "performance_schema.replication_applier_status_by_worker table for more details about this "
                   "failure or others, if any.",
     "Last_SQL_Error_Timestamp": "241126 22:41:07", "Source_Log_File": "binlog.000098",
     "Read_Source_Log_Pos": 120044, "Relay_Source_Log_File": "binlog.000098", "Exec_Source_Log_Pos": 89977,
     "Relay_Log_File": "db8-replica-relay-bin-asia.000012", "Relay_Log_Pos": 90196, "Source_Server_Id": 12,
     "Source_UUID": "7d2e3b63-ab12-11ee-9c1e-0242ac120012",
     "Retrieved_Gtid_Set": "7d2e3b63-ab12-11ee-9c1e-0242ac120012:1-5530",
     "Executed_Gtid_Set": "7d2e3b63-ab12-11ee-9c1e-0242ac120012:1-5520"},
)
CHANNELS[1]["Last_SQL_Error"] = CHANNELS[1]["Last_Error"]
LAG_PER_SECOND = 1  # the lagging channel falls one more second behind every second

# information_schema.PROCESSLIST of MySQL 8.0 (8 columns: no TIME_MS, no TID) and, per
# session, its OS thread (performance_schema.threads) and InnoDB transaction (INNODB_TRX).
# TIME and the transaction's age grow with the double's clock. proxytop's own connections are
# added as they are (COMMAND Query for the one asking).
PROCESSLIST_COLUMNS = ("ID", "USER", "HOST", "DB", "COMMAND", "TIME", "STATE", "INFO")
SESSIONS = (
    # id, user, host, db, command, time, state, info, OS thread id
    (5, "event_scheduler", "localhost", None, "Daemon", 441000, "Waiting on empty queue", None, 3021),
    (4101, "app", "10.0.0.21:51234", "shop", "Sleep", 47, "", None, 3188),
    (4102, "report", "10.0.0.22:40112", "shop", "Query", 12, "executing",
     "SELECT o.id, o.total FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.country = 'FR'", 3190),
    (4103, "app", "10.0.0.21:51240", "shop", "Query", 4, "updating", "UPDATE orders SET status = 'paid' WHERE id = 7",
     3191),
    (4104, "app", "10.0.0.21:51302", "shop", "Sleep", 2, "", None, 3195),
)
TRX_COLUMNS = ("trx_id", "trx_state", "trx_started", "trx_requested_lock_id", "trx_wait_started", "trx_weight",
               "trx_mysql_thread_id", "trx_query", "trx_operation_state", "trx_tables_in_use", "trx_tables_locked",
               "trx_lock_structs", "trx_lock_memory_bytes", "trx_rows_locked", "trx_rows_modified",
               "trx_concurrency_tickets", "trx_isolation_level", "trx_unique_checks", "trx_foreign_key_checks",
               "trx_last_foreign_key_error", "trx_adaptive_hash_latched", "trx_adaptive_hash_timeout",
               "trx_is_read_only", "trx_autocommit_non_locking", "trx_schedule_weight")
TRANSACTIONS = (
    # session, trx_id, state, age in seconds, rows locked, rows modified
    (4101, "120029", "RUNNING", 52, 3, 2),  # idle in its transaction: the usual blocker
    (4103, "120031", "LOCK WAIT", 4, 1, 0),  # waits for 4101's lock
)
THREADS_COLUMNS = ("THREAD_ID", "NAME", "TYPE", "PROCESSLIST_ID", "PROCESSLIST_USER", "PROCESSLIST_HOST",
                   "PROCESSLIST_DB", "PROCESSLIST_COMMAND", "PROCESSLIST_TIME", "PROCESSLIST_STATE",
                   "PROCESSLIST_INFO", "PARENT_THREAD_ID", "ROLE", "INSTRUMENTED", "HISTORY", "CONNECTION_TYPE",
                   "THREAD_OS_ID", "RESOURCE_GROUP", "EXECUTION_ENGINE", "CONTROLLED_MEMORY",
                   "MAX_CONTROLLED_MEMORY", "TOTAL_MEMORY", "MAX_TOTAL_MEMORY", "TELEMETRY_ACTIVE")
BACKGROUND_THREADS = (("thread/sql/main", 3001), ("thread/innodb/page_flush_coordinator_thread", 3012))

# INNODB_METRICS (MySQL's columns: STATUS says 'enabled', MariaDB's ENABLED 1): name, count,
# enabled. The flushing counters are off unless someone enables them (innodb_monitor_enable).
METRICS_COLUMNS = ("NAME", "SUBSYSTEM", "COUNT", "MAX_COUNT", "MIN_COUNT", "AVG_COUNT", "COUNT_RESET",
                   "MAX_COUNT_RESET", "MIN_COUNT_RESET", "AVG_COUNT_RESET", "TIME_ENABLED", "TIME_DISABLED",
                   "TIME_ELAPSED", "TIME_RESET", "STATUS", "TYPE", "COMMENT")
METRICS = (
    ("buffer_flush_adaptive_total_pages", "buffer", 0, False),
    ("buffer_flush_sync_total_pages", "buffer", 0, False),
    ("buffer_flush_background_total_pages", "buffer", 0, False),
    ("buffer_LRU_batch_flush_total_pages", "buffer", 0, False),
    ("buffer_flush_sync_waits", "buffer", 0, False),
    ("buffer_flush_n_to_flush_by_age", "buffer", 0, False),
    ("log_max_modified_age_async", "log", 0, False),
    ("log_max_modified_age_sync", "log", 0, False),
    ("log_lsn_current", "log", 8301120994, True),
    ("log_lsn_last_checkpoint", "log", 8244000112, True),
    ("log_lsn_last_flush", "log", 8301120994, True),
    ("trx_rseg_history_len", "transaction", 4410, True),
)
ENGINE_STATUS_TEXT = os.path.join(DATA, "innodb", "mysql-8.0.30.txt")

# EXPLAIN (MySQL 8's traditional format) of a SELECT, by the first table it reads.
EXPLAIN_COLUMNS = ("id", "select_type", "table", "partitions", "type", "possible_keys", "key", "key_len", "ref",
                   "rows", "filtered", "Extra")
PLANS = {
    "shop.orders": (
        (1, "SIMPLE", "c", None, "ref", "PRIMARY,idx_country", "idx_country", "10", "const", 212, "100.00",
         "Using index"),
        (1, "SIMPLE", "o", None, "ref", "idx_customer", "idx_customer", "4", "shop.c.id", 14, "100.00", None),
    ),
}

# What each privilege guards (MySQL doc "Privileges Provided by MySQL", "SHOW REPLICA STATUS
# Statement", "The INFORMATION_SCHEMA INNODB_TRX Table"…): a statement naming the text, and the
# error a user without the privilege gets. PROCESSLIST without PROCESS lists the user's own
# sessions only.
ALL_GRANTS = ("PROCESS", "REPLICATION CLIENT", "REPLICATION SLAVE", "SELECT ON performance_schema")
GUARDS = (
    ("show replica status", "REPLICATION CLIENT",
     (1227, "Access denied; you need (at least one of) the SUPER, REPLICATION CLIENT privilege(s) for this operation")),
    ("show slave status", "REPLICATION CLIENT",
     (1227, "Access denied; you need (at least one of) the SUPER, REPLICATION CLIENT privilege(s) for this operation")),
    ("show master status", "REPLICATION CLIENT",
     (1227, "Access denied; you need (at least one of) the SUPER, REPLICATION CLIENT privilege(s) for this operation")),
    ("show binary log status", "REPLICATION CLIENT",
     (1227, "Access denied; you need (at least one of) the SUPER, REPLICATION CLIENT privilege(s) for this operation")),
    ("show replicas", "REPLICATION SLAVE",
     (1227, "Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s) for this operation")),
    ("show engine innodb status", "PROCESS",
     (1227, "Access denied; you need (at least one of) the PROCESS privilege(s) for this operation")),
    ("information_schema.innodb_", "PROCESS",
     (1227, "Access denied; you need (at least one of) the PROCESS privilege(s) for this operation")),
    ("performance_schema.", "SELECT ON performance_schema",
     (1142, "SELECT command denied to user '{user}'@'localhost' for table '{table}'")),
)

ROLES = {  # what tells a replica from a primary in SHOW GLOBAL VARIABLES
    True: {"read_only": "ON", "super_read_only": "ON", "hostname": "db8-replica"},
    False: {"read_only": "OFF", "super_read_only": "OFF", "hostname": "db8-primary"},
}


def read_tsv(name: str) -> List[Tuple[str, str, float]]:
    """(name, value, increase per second) of a tests/data/mysql8 file."""
    rows = []
    with open(os.path.join(DATA, "mysql8", name), encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#") or not line.strip():
                continue
            parts = line.rstrip("\n").split("\t") + ["", ""]
            rows.append((parts[0], parts[1], float(parts[2] or 0)))
    return rows


def old_replication_name(column: str) -> str:
    """SHOW SLAVE STATUS's name of a SHOW REPLICA STATUS column (MySQL 8.0 keeps both).

    >>> old_replication_name("Seconds_Behind_Source"), old_replication_name("Replicate_Do_DB")
    ('Seconds_Behind_Master', 'Replicate_Do_DB')
    """
    column = re.sub(r"(^|_)Source(?=_|$)", r"\1Master", column)
    return re.sub(r"(^|_)Replica(?=_|$)", r"\1Slave", column)


def typed(columns, rows):
    """A result whose columns of integers are BIGINT, as MySQL types them (PyMySQL then reads
    ints, as from a real server); the others text.

    >>> typed(["ID", "INFO"], [[1, None], [2, "x"]])[2] == [LONGLONG, VAR_STRING]
    True
    """
    def integers(i):
        values = [row[i] for row in rows if row[i] is not None]
        return bool(values) and all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    return list(columns), [list(row) for row in rows], [LONGLONG if integers(i) else VAR_STRING
                                                        for i in range(len(columns))]


# ----- MySQL functions SQLite lacks --------------------------------------------------------------

def _timestampdiff(unit: str, start: Optional[str], end: Optional[str]) -> Optional[int]:
    if start is None or end is None:
        return None
    seconds = (datetime.datetime.fromisoformat(end) - datetime.datetime.fromisoformat(start)).total_seconds()
    return int(seconds // {"SECOND": 1, "MINUTE": 60, "HOUR": 3600}[unit.upper()])


def _now() -> str:
    return datetime.datetime.now().replace(microsecond=0).isoformat(sep=" ")


def sqlite_for_mysql(sql: str) -> str:
    """MySQL's syntax that SQLite reads otherwise: TIMESTAMPDIFF's unit is a keyword there, and
    LEFT( the start of a join.

    >>> sqlite_for_mysql("SELECT LEFT(p.INFO, 9), TIMESTAMPDIFF(SECOND, a, NOW()) FROM p LEFT JOIN t")
    "SELECT MYSQL_LEFT(p.INFO, 9), TIMESTAMPDIFF('SECOND', a, NOW()) FROM p LEFT JOIN t"
    """
    sql = re.sub(r"\bLEFT\(", "MYSQL_LEFT(", sql, flags=re.IGNORECASE)
    return re.sub(r"TIMESTAMPDIFF\(\s*(SECOND|MINUTE|HOUR)\s*,", r"TIMESTAMPDIFF('\1',", sql, flags=re.IGNORECASE)


def mysql_error(exc: sqlite3.Error) -> QueryError:
    """A SQLite failure as the error MySQL gives for the same mistake."""
    text = str(exc)
    column = re.match(r"no such column: (\S+)", text)
    if column:
        return QueryError(1054, f"Unknown column '{column.group(1)}' in 'field list'", "42S22")
    table = re.match(r"no such table: (\w+)\.(\w+)", text)
    if table and table.group(1) == "information_schema":
        return QueryError(1109, f"Unknown table '{table.group(2).upper()}' in information_schema", "42S02")
    if table:
        return QueryError(1146, f"Table '{table.group(1)}.{table.group(2)}' doesn't exist", "42S02")
    return QueryError(1064, f"You have an error in your SQL syntax ({text})", "42000")


# ----- the double -------------------------------------------------------------------------------

class MySQL8Double(ProtocolServer):
    """Start with ``start()``; ``port`` is then the listening port. ``kills`` holds
    ("QUERY" | "CONNECTION", id) of each KILL carried out."""

    unsupported_command = "Unknown command"

    def __init__(self, port: int = 0, replica: bool = True, version: str = "8.0.36", grants=ALL_GRANTS, **protocol):
        super().__init__(port=port, **protocol)
        self.version = version
        self.replica = replica
        self.grants = frozenset(grants)  # the monitor user's privileges, of ALL_GRANTS
        self.started = time.monotonic()
        self.started_wall = datetime.datetime.now().replace(microsecond=0)
        self.status = read_tsv("global-status.tsv")
        self.variables = {name: value for name, value, _ in read_tsv("global-variables.tsv")}
        self.variables.update(ROLES[replica], version=version)
        self.kills: List[Tuple[str, int]] = []
        self.killed_queries: set = set()  # sessions whose statement a KILL QUERY ended
        self.killed_sessions: set = set()
        self.connections: Dict[int, str] = {}  # proxytop's connections: id -> user
        with open(ENGINE_STATUS_TEXT, encoding="utf-8") as handle:
            self.engine_status = handle.read()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # --- the protocol's questions ---
    def handshake_version(self) -> str:
        return self.version

    def password_of(self, user: str) -> Optional[str]:
        return PASSWORD if user == USER else None

    def open_session(self, user: str, conn_id: int) -> "Session":
        with self._lock:
            self.connections[conn_id] = user
        return Session(self, conn_id, user)

    def init_db(self, session, schema: str) -> None:
        session.database = schema

    # --- tables at this moment ---
    def status_rows(self) -> List[Tuple[str, str]]:
        elapsed = self.elapsed()
        return [(name, str(int(float(value) + per_second * elapsed)) if per_second else value)
                for name, value, per_second in self.status]

    def channel_rows(self) -> List[list]:
        if not self.replica:
            return []
        rows = []
        for channel in CHANNELS:
            values = dict(CHANNEL_DEFAULTS, **channel)
            if values["Seconds_Behind_Source"] is not None:
                values["Seconds_Behind_Source"] += int(LAG_PER_SECOND * self.elapsed())
            rows.append([values.get(column, "") for column in REPLICA_COLUMNS])
        return rows

    def binlog_row(self) -> Tuple[str, int, str, str, str]:
        position = 157 + int(BINLOG_BYTES_PER_SECOND * self.elapsed())
        return ("binlog.000031", position, "", "", "6c1f2a52-ab12-11ee-9c1e-0242ac120011:1-902211")

    def sessions(self, asking: int, sql: str) -> List[tuple]:
        """PROCESSLIST rows with each one's OS thread id, the data's and proxytop's."""
        grown = int(self.elapsed())
        rows = []
        for sid, user, host, db, command, age, state, info, os_id in SESSIONS:
            if sid in self.killed_sessions:
                continue
            if sid in self.killed_queries:
                command, state, info = "Sleep", "", None
            rows.append((sid, user, host, db, command, age + grown, state, info, os_id))
        with self._lock:
            connections = dict(self.connections)
        for conn_id, user in sorted(connections.items()):
            mine = conn_id == asking
            rows.append((conn_id, user, "127.0.0.1:50000", None, "Query" if mine else "Sleep", 0,
                         "executing" if mine else "", sql if mine else None, 4000 + conn_id))
        return rows

    def transactions(self) -> List[tuple]:
        rows = []
        for sid, trx_id, state, age, locked, modified in TRANSACTIONS:
            if sid in self.killed_sessions:
                continue  # rolled back with its session
            started = self.started_wall - datetime.timedelta(seconds=age)
            values = {"trx_id": trx_id, "trx_state": state, "trx_started": started.isoformat(sep=" "),
                      "trx_mysql_thread_id": sid, "trx_rows_locked": locked, "trx_rows_modified": modified,
                      "trx_isolation_level": "REPEATABLE READ", "trx_weight": locked + modified,
                      "trx_tables_in_use": 1 if state == "LOCK WAIT" else 0, "trx_tables_locked": 1}
            rows.append(tuple(values.get(column) for column in TRX_COLUMNS))
        return rows

    def kill(self, what: str, target: int) -> None:
        known = {row[0] for row in SESSIONS} - self.killed_sessions
        if target not in known:
            raise QueryError(1094, f"Unknown thread id: {target}")
        with self._lock:
            self.kills.append((what, target))
        (self.killed_queries if what == "QUERY" else self.killed_sessions).add(target)


class Session:
    """One client connection."""

    def __init__(self, double: MySQL8Double, conn_id: int, user: str):
        self.double = double
        self.conn_id = conn_id
        self.user = user
        self.database: Optional[str] = None

    def query(self, sql: str):
        if not sql.startswith(TAG):
            if SETUP.match(sql):
                return None  # PyMySQL's own as it connects
            raise QueryError(1064, "the MySQL 8 double answers only statements tagged /* proxytop */", "42000")
        statement = sql[len(TAG):].strip()
        lowered = " ".join(statement.lower().split())
        self.check_privileges(lowered)
        variables = re.fullmatch(r"select (@@\w+(?:\s*,\s*@@\w+)*)", lowered)
        if variables:
            return self.select_variables([name.strip() for name in statement[len("select "):].split(",")])
        show = re.fullmatch(r"show global (status|variables)( where .*)?", lowered)
        if show:  # SELECT * FROM status|variables, and the WHERE as written
            kind = show.group(1)
            rows = self.double.status_rows() if kind == "status" else sorted(self.double.variables.items())
            where = statement[re.search(r"\swhere\s", statement, re.IGNORECASE).start():] if show.group(2) else ""
            return self.run(f"SELECT * FROM {kind}{where}", rows=rows, table=kind)
        if lowered == "show replica status":
            return typed(REPLICA_COLUMNS, self.double.channel_rows())
        if lowered == "show slave status" and self.double.version.startswith("8.0"):
            return typed([old_replication_name(c) for c in REPLICA_COLUMNS], self.double.channel_rows())
        binlog = "show binary log status" if tuple(map(int, self.double.version.split(".")[:2])) >= (8, 2) else "show master status"
        if lowered == binlog:  # SHOW MASTER STATUS is gone in 8.4 (MySQL doc "SHOW BINARY LOG STATUS")
            return typed(BINLOG_COLUMNS, [list(self.double.binlog_row())])
        if lowered == "show replicas":
            return typed(REPLICAS_COLUMNS, REPLICAS if not self.double.replica else [])
        if lowered == "show engine innodb status":
            return ["Type", "Name", "Status"], [["InnoDB", "", self.double.engine_status]]
        kill = re.fullmatch(r"kill (query|connection) (\d+)", lowered)
        if kill:
            self.double.kill(kill.group(1).upper(), int(kill.group(2)))
            return None
        if lowered.startswith("explain select "):
            return self.explain(statement)
        if lowered.startswith("select "):
            return self.run(statement)
        raise QueryError(1064, f"You have an error in your SQL syntax near '{statement[:40]}'", "42000")

    def check_privileges(self, lowered: str) -> None:
        for text, privilege, (code, message) in GUARDS:
            if text in lowered and privilege not in self.double.grants:
                table = lowered.split(text, 1)[1].split()[0] if text.endswith(".") else ""
                raise QueryError(code, message.format(user=self.user, table=table), "42000")

    def select_variables(self, names: List[str]):
        values = []
        for name in names:
            value = self.double.variables.get(name[2:].lower())
            if value is None:
                raise QueryError(1193, f"Unknown system variable '{name[2:]}'")
            values.append(value)
        return names, [values]

    def explain(self, statement: str):
        table = re.search(r"\bfrom\s+`?(\w+)`?(?:\.`?(\w+)`?)?", statement, re.IGNORECASE)
        if table is None:
            raise QueryError(1064, "You have an error in your SQL syntax", "42000")
        schema, name = (table.group(1), table.group(2)) if table.group(2) else (self.database, table.group(1))
        if schema is None:
            raise QueryError(1046, "No database selected", "3D000")
        plan = PLANS.get(f"{schema}.{name}".lower())
        if plan is None:
            raise QueryError(1146, f"Table '{schema}.{name}' doesn't exist", "42S02")
        return typed(EXPLAIN_COLUMNS, plan)

    def run(self, sql: str, rows=None, table: Optional[str] = None):
        """A SELECT over this moment's tables, run by SQLite."""
        db = sqlite3.connect(":memory:")
        try:
            db.create_function("MYSQL_LEFT", 2, lambda text, n: None if text is None else text[:n])
            db.create_function("CHAR_LENGTH", 1, lambda text: None if text is None else len(text))
            db.create_function("NOW", 0, _now)
            db.create_function("TIMESTAMPDIFF", 3, _timestampdiff)
            if table is not None:  # SHOW GLOBAL STATUS / VARIABLES: names compare without case, as in MySQL
                db.execute(f"CREATE TABLE {table} (Variable_name TEXT COLLATE NOCASE, Value TEXT)")
                db.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)
            else:
                self.fill(db, sql)
            cursor = db.execute(sqlite_for_mysql(sql))
            return typed([d[0] for d in cursor.description], cursor.fetchall())
        except sqlite3.Error as exc:
            raise mysql_error(exc) from None
        finally:
            db.close()

    def fill(self, db: sqlite3.Connection, sql: str) -> None:
        double = self.double
        sessions = double.sessions(self.conn_id, TAG + sql)
        if "PROCESS" not in double.grants:  # the user's own sessions only
            sessions = [row for row in sessions if row[1] == self.user]
        threads = [(1000 + i, name, "BACKGROUND", None, os_id) for i, (name, os_id) in enumerate(BACKGROUND_THREADS)]
        threads += [(2000 + s[0], "thread/sql/one_connection", "FOREGROUND", s[0], s[8]) for s in sessions]
        metrics = [(name, subsystem, count, "enabled" if on else "disabled") for name, subsystem, count, on in METRICS]
        tables = {
            "information_schema.PROCESSLIST": (PROCESSLIST_COLUMNS, [s[:8] for s in sessions]),
            "information_schema.INNODB_TRX": (TRX_COLUMNS, double.transactions()),
            "information_schema.INNODB_METRICS": (METRICS_COLUMNS, [
                dict(zip(("NAME", "SUBSYSTEM", "COUNT", "STATUS"), m)) for m in metrics]),
            "performance_schema.threads": (THREADS_COLUMNS, [
                dict(zip(("THREAD_ID", "NAME", "TYPE", "PROCESSLIST_ID", "THREAD_OS_ID"), t)) for t in threads]),
        }
        db.execute("ATTACH ':memory:' AS information_schema")
        db.execute("ATTACH ':memory:' AS performance_schema")
        for name, (columns, rows) in tables.items():
            db.execute(f"CREATE TABLE {name} ({', '.join(columns)})")
            rows = [tuple(row.get(c) for c in columns) if isinstance(row, dict) else row for row in rows]
            db.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in columns)})", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description="MySQL 8 server test double")
    parser.add_argument("--port", type=int, default=3306)
    parser.add_argument("--primary", action="store_true", help="a primary: no replication channels")
    parser.add_argument("--version", default="8.0.36", help="8.0.36 (default) or 8.4.3")
    args = parser.parse_args()
    double = MySQL8Double(port=args.port, replica=not args.primary, version=args.version).start()
    print(f"MySQL {args.version} test double on 127.0.0.1:{double.port} ({USER}/{PASSWORD})", flush=True)
    double.run_until_interrupted()


if __name__ == "__main__":
    main()
