"""The sessions of one MySQL / MariaDB server for the Sessions screen: its processlist, each
session with its InnoDB transaction, read on the connection the server's other readings use.

``mysql.sessions.<server>`` reads at most every 2 s, and only while the Sessions screen shows
that server. INNODB_TRX needs PROCESS: without it the processlist alone is read (a user without
PROCESS sees only its own sessions) and the reading says so; the join is tried again a minute
later. When proxytop runs on the server's own host (a unix socket, or 127.0.0.1 / localhost /
::1, and the pid in the server's pid file is a process here), each session that is not idle
also gets its OS thread's CPU ticks and I/O bytes from /proc: raw counters, which the screen
turns into rates from two readings. Nothing here writes to the server.

MariaDB (tested against a real 10.11): PROCESSLIST has TIME_MS and TID, the OS thread id.
MySQL 8 (written from the MySQL manual; tested against a double written from it, never
against a real MySQL): PROCESSLIST.TIME is whole seconds, and the OS thread id is
performance_schema.threads' THREAD_OS_ID, joined on PROCESSLIST_ID (it needs SELECT on
performance_schema: without it the thread ids, and so CPU and I/O per session, are left out).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import pymysql

from proxytop.collectors.innodb import ACCESS_DENIED, DENIED_RETRY, TAG, MySQLSession, describe_mysql_error, server_label, source_name
from proxytop.core import Collector, Table
from proxytop.errors import is_connection_error
from proxytop.polling.connection import Endpoint, close_quietly, connect, run_query

INFO_CHARS = 4096  # characters of each statement read (a statement can be megabytes long)
IDLE = "Sleep"
LOCAL_HOSTS = frozenset(("127.0.0.1", "localhost", "::1"))
NO_PROCESS = "needs PROCESS: only this user's sessions, no transactions"
# Names in each reading's table, in order (the statement's aliases, both products alike).
COLUMNS = ("id", "user", "host", "db", "command", "time_ms", "state", "tid", "info", "info_cut",
           "trx_state", "trx_age", "rows_locked", "rows_modified")
PID_FILE_SQL = "SELECT @@pid_file"  # once per connection, on the server's host
TRX_KEY, THREADS_KEY = "sessions.trx", "sessions.threads"  # in MySQLSession.denied_until


def sessions_sql(mariadb: bool, transactions: bool = True, threads: bool = True) -> str:
    """The statement that lists every session (only the user's own without PROCESS) with its
    transaction: the same columns (COLUMNS) whatever is joined, NULL where it isn't.

    >>> "INNODB_TRX" in sessions_sql(True), "INNODB_TRX" in sessions_sql(True, transactions=False)
    (True, False)
    >>> sql = sessions_sql(False)
    >>> "p.TIME * 1000" in sql and "th.THREAD_OS_ID" in sql and "performance_schema.threads" in sql
    True
    >>> "performance_schema" in sessions_sql(False, threads=False)
    False
    """
    if mariadb:
        # TIME_MS is a DECIMAL with microseconds: a whole number of milliseconds is enough
        time_ms, tid, joins = "CAST(p.TIME_MS AS UNSIGNED)", "p.TID", ""
    else:
        time_ms = "p.TIME * 1000"  # whole seconds on MySQL
        tid, joins = ("th.THREAD_OS_ID", " LEFT JOIN performance_schema.threads th ON th.PROCESSLIST_ID = p.ID") \
            if threads else ("NULL", "")
    if transactions:
        # the age computed by the server: trx_started is a DATETIME in the server's time zone
        trx = ["t.trx_state", "TIMESTAMPDIFF(SECOND, t.trx_started, NOW())", "t.trx_rows_locked",
               "t.trx_rows_modified"]
        joins = " LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID" + joins
    else:
        trx = ["NULL"] * 4
    expressions = ["p.ID", "p.USER", "p.HOST", "p.DB", "p.COMMAND", time_ms, "p.STATE", tid,
                   f"LEFT(p.INFO, {INFO_CHARS})", f"CHAR_LENGTH(p.INFO) > {INFO_CHARS}"] + trx
    selected = ", ".join(f"{expression} AS {name}" for expression, name in zip(expressions, COLUMNS))
    return f"SELECT {selected} FROM information_schema.PROCESSLIST p{joins}"


@dataclass(frozen=True)
class SessionsReading:
    """One reading of a server's sessions. ``sessions`` has the columns of COLUMNS; ``threads``
    holds (session id, OS thread id, CPU ticks (utime + stime), read bytes, write bytes) of the
    sessions whose thread was read (the bytes None where /proc/<pid>/task/<tid>/io can't be
    read): only on the server's own host, and only for sessions not idle (Sleep with no
    transaction), whose threads use no CPU."""

    sessions: Table
    own_id: Optional[int] = None  # proxytop's own connection (hidden by the screen)
    transactions: bool = True  # INNODB_TRX was joined
    denied: Optional[str] = None  # what is missing and why, when it wasn't
    local: bool = False  # on the server's host: the threads were read from /proc
    host_note: Optional[str] = None  # why not, when it looked local
    threads: Tuple[Tuple[int, int, int, Optional[int], Optional[int]], ...] = ()
    clock_ticks: int = 100  # CLK_TCK: CPU ticks per second
    error: Optional[str] = None  # the thread ids could not be joined (MySQL)


def join_to_drop(code: Optional[int], message: str, mariadb: bool, transactions: bool, threads: bool) -> Optional[str]:
    """Which join to leave out after the statement failed: the transactions (INNODB_TRX needs
    PROCESS) or, on MySQL, the thread ids (performance_schema.threads needs SELECT on it, and
    5.7 before 5.7.9 has no THREAD_OS_ID); None: neither is to blame.

    >>> join_to_drop(1227, "Access denied; you need (at least one of) the PROCESS privilege(s)", True, True, True)
    'sessions.trx'
    >>> join_to_drop(1142, "SELECT command denied to user 'u'@'h' for table 'threads'", False, True, True)
    'sessions.threads'
    >>> join_to_drop(1146, "Table 'test.x' doesn't exist", True, True, True) is None
    True
    """
    names_threads = "threads" in message or "performance_schema" in message or code == 1054
    if threads and not mariadb and (names_threads or code not in ACCESS_DENIED):
        return THREADS_KEY
    if transactions and code in ACCESS_DENIED:
        return TRX_KEY
    return None


def on_this_host(endpoint: Endpoint) -> bool:
    """Whether the server may run on the host proxytop runs on.

    >>> on_this_host(Endpoint(host="127.0.0.1", port=3306)), on_this_host(Endpoint(host="db1", port=3306))
    (True, False)
    >>> on_this_host(Endpoint(host="db1", port=3306, socket="/run/mysqld/mysqld.sock"))
    True
    """
    return bool(endpoint.socket) or endpoint.host in LOCAL_HOSTS


def stat_ticks(text: str) -> Optional[int]:
    """utime + stime (fields 14 and 15, in clock ticks) of a /proc/<pid>/task/<tid>/stat line.
    The command name (field 2) is in parentheses and may hold spaces and ')': the fields are
    counted after its last ')'.

    >>> stat_ticks("8743 (mariadbd) S 1 8740 8740 0 -1 4194368 12 0 0 0 25 7 0 0 20 0 40 0 9 0")
    32
    >>> stat_ticks("1 (a) b) S 1") is None
    True
    """
    fields = text[text.rfind(")") + 2:].split()
    try:
        return int(fields[11]) + int(fields[12])  # fields 14 and 15; field 3 is fields[0]
    except (IndexError, ValueError):
        return None


def io_bytes(text: str) -> Tuple[Optional[int], Optional[int]]:
    """(read_bytes, write_bytes) of a /proc/<pid>/task/<tid>/io: the bytes the thread made the
    storage layer read and write (not those of sockets, which rchar and wchar count).

    >>> io_bytes("rchar: 10\\nwchar: 20\\nsyscr: 1\\nsyscw: 1\\nread_bytes: 4096\\nwrite_bytes: 8192\\n")
    (4096, 8192)
    """
    values: Dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in ("read_bytes", "write_bytes"):
            values[name] = int(value)
    return values.get("read_bytes"), values.get("write_bytes")


def read_file(path: str) -> Optional[str]:
    try:
        with open(path, "r", encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:  # the thread ended, or the file is not ours to read
        return None


@dataclass
class ServerHost:
    """What was learnt once per connection about the server's process on this host."""

    session: object  # the MySQLSession it was learnt on (a new connection learns it again)
    pid: Optional[int]
    note: Optional[str]  # why its threads are not read, when pid is None


class Sessions(Collector):
    """``mysql.sessions.<server>``: a :class:`SessionsReading` of one server."""

    default_interval = 2.0
    min_interval = 2.0  # a large processlist costs the server and proxytop: every 2 s at the most
    history = 2

    def __init__(self, endpoint: Endpoint, clock=time.monotonic, proc: str = "/proc"):
        self.server = server_label(endpoint)
        self.name = f"mysql.sessions.{self.server}"
        self.source = source_name(endpoint)
        self.clock = clock
        self.proc = proc
        self.local = on_this_host(endpoint)
        self._host: Optional[ServerHost] = None
        try:
            self.clock_ticks = os.sysconf("SC_CLK_TCK")
        except (ValueError, OSError, AttributeError):
            self.clock_ticks = 100

    def collect(self, session: MySQLSession) -> SessionsReading:
        mariadb = session.flavour is not None and session.flavour.is_mariadb
        session.retry_denied(self.clock())
        transactions = TRX_KEY not in session.denied_until
        threads = THREADS_KEY not in session.denied_until
        error = None
        while True:
            try:
                table = session.query(sessions_sql(mariadb, transactions, threads))
                break
            except pymysql.err.MySQLError as exc:
                if is_connection_error(exc):
                    raise
                code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
                dropped = join_to_drop(code, str(exc), mariadb, transactions, threads)
                if dropped is None:
                    raise
                if dropped == THREADS_KEY:
                    threads = False
                    error = "no OS thread ids: " + describe_mysql_error(exc, session.endpoint.password)
                else:
                    transactions = False
                session.denied_until[dropped] = self.clock() + DENIED_RETRY
        own_id = session.conn.thread_id() if hasattr(session.conn, "thread_id") else None
        host = self._server_host(session)
        counters = self._threads(host.pid, table) if host.pid is not None else ()
        return SessionsReading(sessions=table, own_id=own_id, transactions=transactions,
                               denied=None if transactions else NO_PROCESS,
                               local=host.pid is not None, host_note=host.note, threads=counters,
                               clock_ticks=self.clock_ticks, error=error)

    def _server_host(self, session: MySQLSession) -> ServerHost:
        """The server's pid, once per connection (a new connection may be to a restarted server)."""
        if self._host is not None and self._host.session is session:
            return self._host
        pid, note = None, None
        if self.local:
            pid, note = self._find_pid(session)
        self._host = ServerHost(session, pid, note)
        return self._host

    def _find_pid(self, session: MySQLSession) -> Tuple[Optional[int], Optional[str]]:
        rows = session.query(PID_FILE_SQL).rows
        path = str(rows[0][0]) if rows and rows[0][0] else ""
        text = read_file(path) if path else None
        if text is None:
            return None, f"the server's pid file {path or '(none)'} can't be read here"
        try:
            pid = int(text.split()[0])
        except (IndexError, ValueError):
            return None, f"the server's pid file {path} holds no pid"
        if not os.path.isdir(os.path.join(self.proc, str(pid), "task")):
            # 127.0.0.1 may be a port forwarded to another host or a container
            return None, f"process {pid} of the server's pid file is not on this host"
        return pid, None

    def _threads(self, pid: int, table: Table) -> Tuple[Tuple[int, int, int, Optional[int], Optional[int]], ...]:
        """The counters of the threads of the sessions that are not idle."""
        i_id, i_command, i_tid, i_trx = (COLUMNS.index(n) for n in ("id", "command", "tid", "trx_state"))
        found = []
        task = os.path.join(self.proc, str(pid), "task")
        for row in table.rows:
            tid = row[i_tid]
            if tid is None or (row[i_command] == IDLE and row[i_trx] is None):
                continue
            base = f"{task}/{int(tid)}/"
            stat = read_file(base + "stat")
            ticks = stat_ticks(stat) if stat is not None else None
            if ticks is None:
                continue  # the thread ended meanwhile
            io = read_file(base + "io")
            read, written = io_bytes(io) if io is not None else (None, None)
            found.append((int(row[i_id]), int(tid), ticks, read, written))
        return tuple(found)


# ----- what the Sessions screen's keys send (on the server's source thread, after a yes) --------

def kill(session: MySQLSession, session_id: int, query_only: bool) -> None:
    """KILL QUERY (the statement stops, the session stays) or KILL CONNECTION (the session
    ends, its open transaction rolled back) of one session, on proxytop's connection."""
    session.query(f"KILL {'QUERY' if query_only else 'CONNECTION'} {int(session_id)}")


EXPLAIN_SECONDS = 2  # MariaDB: the EXPLAIN is stopped after this (max_statement_time)


def explain_sql(statement: str, mariadb: bool) -> str:
    """EXPLAIN of a statement, with a time limit where the server has one for any statement.
    MySQL has none for EXPLAIN (MAX_EXECUTION_TIME is for a SELECT's execution): there the
    connection's read timeout ends the wait.

    >>> explain_sql("SELECT 1", True), explain_sql("SELECT 1", False)
    ('SET STATEMENT max_statement_time=2 FOR EXPLAIN SELECT 1', 'EXPLAIN SELECT 1')
    """
    if mariadb:
        return f"SET STATEMENT max_statement_time={EXPLAIN_SECONDS} FOR EXPLAIN {statement}"
    return f"EXPLAIN {statement}"


def explain(session: MySQLSession, database: Optional[str], statement: str) -> Tuple[Optional[Table], Optional[str]]:
    """(the plan, None) or (None, why not) of a SELECT, on a connection of its own (a slow
    EXPLAIN or its timeout must not cost the readings' connection), in the session's schema.
    Never raises: a failure here is the EXPLAIN's, not the server's."""
    mariadb = session.flavour is not None and session.flavour.is_mariadb
    try:
        conn, _protocol = connect(session.endpoint)
    except Exception as exc:  # any failure to connect is one line for the user
        return None, describe_mysql_error(exc, session.endpoint.password)
    try:
        if database:
            conn.select_db(database)
        return run_query(conn, TAG + explain_sql(statement, mariadb)), None
    except Exception as exc:  # a timeout, a table gone, a privilege missing: one line
        return None, describe_mysql_error(exc, session.endpoint.password)
    finally:
        close_quietly(conn)
