"""Lock readings of one MySQL / MariaDB server for the Locks screen and the header's lock-wait
alarm, on the connection the server's other readings use. Read directly from the server's
tables (never through the sys schema's views), each statement with a time limit.

- ``mysql.locks.<server>`` (Locks screen only, at most every 2 s): every InnoDB lock wait, the
  waiting and the blocking transaction and the lock waited for: MariaDB's
  information_schema.INNODB_LOCK_WAITS, INNODB_LOCKS and INNODB_TRX; MySQL 8's
  performance_schema.data_lock_waits and data_locks with INNODB_TRX. Only when there are waits,
  a second statement reads the processlist rows of the sessions concerned.
- ``mysql.lockalarm.<server>`` (every screen, every 5 s): one narrow statement for the header
  alarm: every wait's sessions, its length and the blocker's; kept is the longest wait and the
  head of its chain.
- ``mysql.mdl.<server>`` (Locks screen only, every 2 s): metadata locks from
  performance_schema.metadata_locks (MySQL 8; MariaDB with performance_schema and its mdl
  instrument on), else MariaDB's METADATA_LOCK_INFO plugin (granted locks only: the waiting
  sessions are those whose processlist state says so), else a line on how to see them.
- ``mysql.deadlock.<server>`` (Locks screen only, every 10 s): Innodb_deadlocks (MariaDB) and,
  when it moved (or every 30 s where the server has no such counter), SHOW ENGINE INNODB
  STATUS for its LATEST DETECTED DEADLOCK section. The InnoDB screen's reading is no help here:
  on MariaDB it never runs SHOW ENGINE INNODB STATUS, and on MySQL it keeps only figures.

INNODB_TRX, INNODB_LOCK_WAITS and SHOW ENGINE INNODB STATUS need PROCESS; performance_schema
a SELECT grant on it. Refused, the reading says which, and the statement is asked again a
minute later on a fresh connection. Nothing here writes to the server.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, Tuple

from proxytop.collectors.innodb import DENIED_RETRY, ENGINE_STATUS_SQL, MySQLSession, server_label, source_name
from proxytop.core import Collector, Table
from proxytop.metrics.deadlock import section
from proxytop.metrics.lock_chains import LongestWait, longest_wait
from proxytop.polling.connection import Endpoint

STATEMENT_SECONDS = 2  # the time limit of each statement here
INFO_CHARS = 4096
NEEDS = "needs PROCESS (GRANT PROCESS ON *.*)"
NEEDS_MYSQL = "needs PROCESS and SELECT on performance_schema (GRANT PROCESS ON *.*; GRANT SELECT ON performance_schema.*)"

# Each transaction's columns, the waiter's as w_*, the blocker's as b_* (both products alike).
_TRX = (("trx", "{t}.trx_id"), ("thread", "{t}.trx_mysql_thread_id"), ("state", "{t}.trx_state"),
        ("wait_s", "TIMESTAMPDIFF(SECOND, {t}.trx_wait_started, NOW())"),
        ("age", "TIMESTAMPDIFF(SECOND, {t}.trx_started, NOW())"),
        ("rows_locked", "{t}.trx_rows_locked"), ("rows_modified", "{t}.trx_rows_modified"),
        ("query", "{t}.trx_query"))
_LOCK = ("lock_mode", "lock_type", "lock_table", "lock_index", "lock_data")
EDGE_COLUMNS = tuple(f"w_{name}" for name, _ in _TRX) + _LOCK + tuple(f"b_{name}" for name, _ in _TRX)
SESSION_COLUMNS = ("id", "user", "host", "db", "command", "time", "state", "info")


def timed(sql: str, mariadb: bool, seconds: int = STATEMENT_SECONDS) -> str:
    """A statement with the server's own time limit (the connection's read timeout stays the
    last resort): MariaDB's max_statement_time (any statement), MySQL's MAX_EXECUTION_TIME hint
    (a SELECT only: a SHOW has the read timeout alone there).

    >>> timed("SELECT 1", True), timed("SELECT 1", False), timed("SHOW ENGINE INNODB STATUS", False)
    ('SET STATEMENT max_statement_time=2 FOR SELECT 1', 'SELECT /*+ MAX_EXECUTION_TIME(2000) */ 1', 'SHOW ENGINE INNODB STATUS')
    """
    if mariadb:
        return f"SET STATEMENT max_statement_time={seconds} FOR {sql}"
    return sql.replace("SELECT ", f"SELECT /*+ MAX_EXECUTION_TIME({seconds * 1000}) */ ", 1)


# The server lists every waiter queued for a row as blocked by the holder and by every waiter
# queued before it: 500 sessions waiting for one row are 125,250 pairs, which took MariaDB 27 s
# to join (past the statement's time limit: no chains at all). Only the pairs whose blocking
# lock is held, not itself waited for, are read: 500 pairs, 0.4 s. (A waiter kept waiting only
# by a request queued ahead of it, not by any lock held, is left out.)
QUEUE_HEADS_MARIADB = ("(SELECT * FROM information_schema.INNODB_LOCK_WAITS WHERE blocking_lock_id NOT IN "
                       "(SELECT requested_lock_id FROM information_schema.INNODB_LOCK_WAITS))")
QUEUE_HEADS_MYSQL = ("(SELECT * FROM performance_schema.data_lock_waits WHERE BLOCKING_ENGINE_LOCK_ID NOT IN "
                     "(SELECT REQUESTING_ENGINE_LOCK_ID FROM performance_schema.data_lock_waits))")


def waits_sql(mariadb: bool) -> str:
    """Every lock wait: (waiter, lock waited for, blocker), EDGE_COLUMNS.

    >>> sql = waits_sql(True)
    >>> "INNODB_LOCK_WAITS" in sql and "INNODB_LOCKS" in sql and "sys." not in sql
    True
    >>> sql = waits_sql(False)
    >>> "performance_schema.data_lock_waits" in sql and "performance_schema.data_locks" in sql
    True
    """
    trx = [expr.format(t=t) + f" AS {side}_{name}" for side, t in (("w", "r"), ("b", "b")) for name, expr in _TRX]
    if mariadb:
        lock = ["l.lock_mode", "l.lock_type", "l.lock_table", "l.lock_index", "l.lock_data"]
        source = (f"{QUEUE_HEADS_MARIADB} w "
                  "JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id "
                  "JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id "
                  "LEFT JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.requested_lock_id")
    else:  # MySQL 8.0.1+: the information_schema lock tables are gone
        lock = ["l.LOCK_MODE", "l.LOCK_TYPE", "CONCAT('`', l.OBJECT_SCHEMA, '`.`', l.OBJECT_NAME, '`')",
                "l.INDEX_NAME", "l.LOCK_DATA"]
        source = (f"{QUEUE_HEADS_MYSQL} w "
                  "JOIN information_schema.INNODB_TRX r ON r.trx_id = w.REQUESTING_ENGINE_TRANSACTION_ID "
                  "JOIN information_schema.INNODB_TRX b ON b.trx_id = w.BLOCKING_ENGINE_TRANSACTION_ID "
                  "LEFT JOIN performance_schema.data_locks l ON l.ENGINE_LOCK_ID = w.REQUESTING_ENGINE_LOCK_ID")
    columns = trx[:len(_TRX)] + [f"{expr} AS {name}" for expr, name in zip(lock, _LOCK)] + trx[len(_TRX):]
    return f"SELECT {', '.join(columns)} FROM {source}"


def sessions_sql(ids) -> str:
    """The processlist rows of the sessions in the waits (ids are ints: nothing else is written in).

    >>> sessions_sql([12, 7])
    'SELECT ID AS id, USER AS user, HOST AS host, DB AS db, COMMAND AS command, TIME AS time, STATE AS state, LEFT(INFO, 4096) AS info FROM information_schema.PROCESSLIST WHERE ID IN (7, 12)'
    """
    expressions = ("ID", "USER", "HOST", "DB", "COMMAND", "TIME", "STATE", f"LEFT(INFO, {INFO_CHARS})")
    selected = ", ".join(f"{e} AS {n}" for e, n in zip(expressions, SESSION_COLUMNS))
    listed = ", ".join(str(int(i)) for i in sorted(set(ids)))
    return f"SELECT {selected} FROM information_schema.PROCESSLIST WHERE ID IN ({listed})"


def alarm_sql(mariadb: bool) -> str:
    """Every wait, narrowly: (waiter, its wait, blocker, the blocker's age, the blocker idle);
    the longest first, at most 1,000 rows.

    >>> "LIMIT 1000" in alarm_sql(True) and "INNODB_LOCK_WAITS" in alarm_sql(True)
    True
    """
    if mariadb:
        source = (f"{QUEUE_HEADS_MARIADB} w "
                  "JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id "
                  "JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id")
    else:
        source = (f"{QUEUE_HEADS_MYSQL} w "
                  "JOIN information_schema.INNODB_TRX r ON r.trx_id = w.REQUESTING_ENGINE_TRANSACTION_ID "
                  "JOIN information_schema.INNODB_TRX b ON b.trx_id = w.BLOCKING_ENGINE_TRANSACTION_ID")
    return ("SELECT TIMESTAMPDIFF(SECOND, r.trx_wait_started, NOW()), r.trx_mysql_thread_id, b.trx_mysql_thread_id, "
            "TIMESTAMPDIFF(SECOND, b.trx_started, NOW()), b.trx_query IS NULL "
            f"FROM {source} ORDER BY r.trx_wait_started LIMIT 1000")


def _mariadb(session: MySQLSession) -> bool:
    return session.flavour is not None and session.flavour.is_mariadb


@dataclass(frozen=True)
class LocksReading:
    """The lock waits of one server: ``waits`` has EDGE_COLUMNS, one row per (waiter, blocker);
    ``sessions`` (SESSION_COLUMNS) the processlist rows of the sessions they name."""

    waits: Table
    sessions: Table
    denied: Optional[str] = None
    error: Optional[str] = None


@dataclass(frozen=True)
class AlarmReading:
    longest: Optional[LongestWait] = None  # None: no session waits for a lock
    denied: Optional[str] = None
    error: Optional[str] = None


@dataclass(frozen=True)
class DeadlockReading:
    count: Optional[int]  # Innodb_deadlocks since the server started (None: no such counter)
    noticed: int  # deadlocks seen while proxytop watched
    section: Optional[str]  # the LATEST DETECTED DEADLOCK section (None: none since the server started)
    denied: Optional[str] = None
    error: Optional[str] = None


EMPTY_WAITS = Table(EDGE_COLUMNS, ())
EMPTY_SESSIONS = Table(SESSION_COLUMNS, ())


class LockCollector(Collector):
    kind = ""

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        self.server = server_label(endpoint)
        self.name = f"mysql.{self.kind}.{self.server}"
        self.source = source_name(endpoint)
        self.clock = clock

    def needs(self, session: MySQLSession) -> str:
        return NEEDS if _mariadb(session) else NEEDS_MYSQL


class LockWaits(LockCollector):
    """``mysql.locks.<server>``: a :class:`LocksReading`."""

    kind = "locks"
    default_interval = 2.0
    min_interval = 2.0  # InnoDB copies its lock lists for each reading: every 2 s at the most
    history = 1

    def collect(self, session: MySQLSession) -> LocksReading:
        mariadb = _mariadb(session)
        session.retry_denied(self.clock())
        waits, denied, error = session.read_unless_denied("locks.waits", timed(waits_sql(mariadb), mariadb),
                                                          self.clock())
        if waits is None:
            return LocksReading(EMPTY_WAITS, EMPTY_SESSIONS, self.needs(session) if denied else None, error)
        ids = [row[i] for row in waits.rows for i in (EDGE_COLUMNS.index("w_thread"), EDGE_COLUMNS.index("b_thread"))
               if row[i] is not None]
        sessions = EMPTY_SESSIONS
        if ids:
            found, _denied, error = session.read_unless_denied("locks.sessions", timed(sessions_sql(ids), mariadb),
                                                               self.clock())
            sessions = found if found is not None else EMPTY_SESSIONS
        return LocksReading(Table(EDGE_COLUMNS, waits.rows), sessions, None, error)


def alarm_pace(servers: int) -> float:
    """Seconds between two alarm readings of each server: 5, slower past 100 servers.

    >>> alarm_pace(1), alarm_pace(500)
    (5.0, 25.0)
    """
    return max(5.0, servers / 20.0)


class LockAlarm(LockCollector):
    """``mysql.lockalarm.<server>``: an :class:`AlarmReading`, for the header on every screen."""

    kind = "lockalarm"
    default_interval = 5.0
    min_interval = 5.0
    own_pace = True
    history = 1

    def collect(self, session: MySQLSession) -> AlarmReading:
        mariadb = _mariadb(session)
        session.retry_denied(self.clock())
        table, denied, error = session.read_unless_denied("locks.alarm", timed(alarm_sql(mariadb), mariadb),
                                                          self.clock())
        if table is None:
            return AlarmReading(None, self.needs(session) if denied else None, error)
        return AlarmReading(longest_wait([(w, wait, b, age, bool(idle)) for wait, w, b, age, idle in table.rows]))


DEADLOCKS_SQL = "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'"
RECHECK_SECONDS = 30.0  # without a deadlock counter, the status text is read this often


class Deadlocks(LockCollector):
    """``mysql.deadlock.<server>``: a :class:`DeadlockReading`. SHOW ENGINE INNODB STATUS is
    read once, then only when Innodb_deadlocks moved (or every 30 s on a server without it)."""

    kind = "deadlock"
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True
    history = 1

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        super().__init__(endpoint, clock)
        self.count: Optional[int] = None
        self.noticed = 0
        self.section: Optional[str] = None
        self.read_at: Optional[float] = None

    def collect(self, session: MySQLSession) -> DeadlockReading:
        now = self.clock()
        session.retry_denied(now)
        mariadb = _mariadb(session)
        rows = session.query(timed(DEADLOCKS_SQL, mariadb)).rows
        count = int(rows[0][1]) if rows and str(rows[0][1]).isdigit() else None
        if count is not None and self.count is not None:
            # a count that went back is a restarted server: all of it is new
            self.noticed += count - self.count if count >= self.count else count
        moved, self.count = count != self.count, count
        due = self.read_at is None or (moved if count is not None else now - self.read_at >= RECHECK_SECONDS)
        denied = error = None
        if due:
            table, refused, error = session.read_unless_denied("locks.deadlock",
                                                               timed(ENGINE_STATUS_SQL, mariadb), now)
            if table is not None:
                text = str(table.rows[0][-1] or "") if table.rows else ""
                found = section(text)
                if count is None and self.section is not None and found != self.section:
                    self.noticed += 1  # no counter: a new section is a new deadlock
                self.section, self.read_at = found, now
            denied = self.needs(session) if refused else None
        return DeadlockReading(count, self.noticed, self.section, denied, error)


# ----- metadata locks -------------------------------------------------------------------------------

PERFORMANCE_SCHEMA, PLUGIN = "performance_schema", "metadata_lock_info"
MDL_INSTRUMENT = "wait/lock/metadata/sql/mdl"
# (performance_schema=ON is a server option: a restart; the instrument is on by default on MySQL 8)
HOW_TO_SEE_MDL = (f"not visible: needs performance_schema=ON with instrument {MDL_INSTRUMENT}, "
                  "or INSTALL SONAME 'metadata_lock_info'")
MDL_COLUMNS = ("session", "object_type", "schema_name", "object_name", "lock_type", "lock_duration", "lock_status")
MDL_ROWS = 5000  # at most, read: a server with thousands of open tables has as many granted locks
WAITING_COLUMNS = ("session", "state", "info")


def mdl_sql() -> str:
    """performance_schema.metadata_locks with each owner's session (its connection id)."""
    return ("SELECT t.PROCESSLIST_ID AS session, m.OBJECT_TYPE AS object_type, m.OBJECT_SCHEMA AS schema_name, "
            "m.OBJECT_NAME AS object_name, m.LOCK_TYPE AS lock_type, m.LOCK_DURATION AS lock_duration, "
            "m.LOCK_STATUS AS lock_status FROM performance_schema.metadata_locks m "
            "JOIN performance_schema.threads t ON t.THREAD_ID = m.OWNER_THREAD_ID "
            f"WHERE m.OBJECT_TYPE <> 'GLOBAL' LIMIT {MDL_ROWS}")


PLUGIN_SQL = ("SELECT THREAD_ID AS session, LOCK_TYPE AS object_type, TABLE_SCHEMA AS schema_name, "
              "TABLE_NAME AS object_name, LOCK_MODE AS lock_type, LOCK_DURATION AS lock_duration, "
              f"'GRANTED' AS lock_status FROM information_schema.METADATA_LOCK_INFO LIMIT {MDL_ROWS}")
# The plugin lists granted locks only: the waiting sessions are known by their state alone.
WAITING_SQL = (f"SELECT ID AS session, STATE AS state, LEFT(INFO, {INFO_CHARS}) AS info "
               "FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for%metadata lock'")
# Which source a server has: performance_schema with the instrument on, else the plugin.
SOURCE_SQL = ("SELECT @@performance_schema, (SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = "
              "'METADATA_LOCK_INFO' AND PLUGIN_STATUS = 'ACTIVE')")
INSTRUMENT_SQL = f"SELECT ENABLED FROM performance_schema.setup_instruments WHERE NAME = '{MDL_INSTRUMENT}'"
EMPTY_MDL = Table(MDL_COLUMNS, ())
EMPTY_WAITING = Table(WAITING_COLUMNS, ())


@dataclass(frozen=True)
class MetadataLocksReading:
    """A server's metadata locks: from performance_schema (waits are PENDING rows), from
    MariaDB's METADATA_LOCK_INFO plugin (granted locks only, and ``waiting`` the sessions whose
    state says they wait), or from neither (``source`` None, ``note`` says how to see them)."""

    source: Optional[str]
    locks: Table = EMPTY_MDL
    waiting: Table = EMPTY_WAITING
    note: Optional[str] = None
    error: Optional[str] = None


class MetadataLocks(LockCollector):
    """``mysql.mdl.<server>``: a :class:`MetadataLocksReading`. Which source the server has is
    asked once per connection and again every minute (the instrument can be turned on at
    runtime, the plugin installed)."""

    kind = "mdl"
    default_interval = 2.0
    min_interval = 2.0
    history = 1

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        super().__init__(endpoint, clock)
        self.found: Optional[tuple] = None  # (session, monotonic time, source or None)

    def _source(self, session: MySQLSession, now: float) -> Optional[str]:
        if self.found is not None and self.found[0] is session and now - self.found[1] < DENIED_RETRY:
            return self.found[2]
        mariadb = _mariadb(session)
        row = session.query(timed(SOURCE_SQL, mariadb)).rows[0]
        source = None
        if row[0]:
            instrument, _denied, _error = session.read_unless_denied("locks.mdl.instrument",
                                                                     timed(INSTRUMENT_SQL, mariadb), now)
            if instrument is not None and instrument.rows and str(instrument.rows[0][0]).upper() == "YES":
                source = PERFORMANCE_SCHEMA
        if source is None and row[1]:
            source = PLUGIN
        self.found = (session, now, source)
        return source

    def collect(self, session: MySQLSession) -> MetadataLocksReading:
        now = self.clock()
        session.retry_denied(now)
        mariadb = _mariadb(session)
        source = self._source(session, now)
        if source is None:
            return MetadataLocksReading(None, note=HOW_TO_SEE_MDL)
        sql = mdl_sql() if source == PERFORMANCE_SCHEMA else PLUGIN_SQL
        locks, denied, error = session.read_unless_denied("locks.mdl", timed(sql, mariadb), now)
        if locks is None:
            needs = "SELECT on performance_schema" if source == PERFORMANCE_SCHEMA else "PROCESS"
            return MetadataLocksReading(source, note=f"metadata locks: needs {needs}" if denied else None, error=error)
        waiting = EMPTY_WAITING
        if source == PLUGIN:
            found, _denied, error = session.read_unless_denied("locks.mdl.waiting", timed(WAITING_SQL, mariadb), now)
            waiting = Table(WAITING_COLUMNS, found.rows) if found is not None else EMPTY_WAITING
        return MetadataLocksReading(source, Table(MDL_COLUMNS, locks.rows), waiting, error=error)


def sent_statements() -> Tuple[str, ...]:
    """Every statement the lock readings send, with either flavour's time limit (the Statements
    screen knows them as proxytop's own)."""
    plain = (waits_sql(True), waits_sql(False), sessions_sql([1, 2]), alarm_sql(True), alarm_sql(False),
             DEADLOCKS_SQL, ENGINE_STATUS_SQL, mdl_sql(), PLUGIN_SQL, WAITING_SQL, SOURCE_SQL, INSTRUMENT_SQL)
    return tuple(timed(sql, mariadb) for sql in plain for mariadb in (True, False))


def lock_collectors(endpoint: Endpoint):
    return [LockWaits(endpoint), LockAlarm(endpoint), Deadlocks(endpoint), MetadataLocks(endpoint)]
