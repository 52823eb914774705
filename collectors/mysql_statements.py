"""The statement digest of one MySQL / MariaDB server for the Statements screen:
performance_schema.events_statements_summary_by_digest, read on the connection the server's
other readings use.

``mysql.statements.<server>`` reads at most every 10 s, and only while a screen shows that
server's statements (the Statements screen, or the servers of a ProxySQL digest in Queries).
The read sorts the whole digest table (performance_schema_digests_size rows at most: 5,000 to
10,000 by default) by SUM_TIMER_WAIT in the server's memory and sends the heaviest
:data:`LIMIT` rows, only the columns the screen shows.

Once per connection a probe asks whether performance_schema is on (MariaDB's default is off,
and it can only be turned on with a restart: with it off the table answers with no rows and
no error) and whether the table has QUANTILE_95 (MySQL 8.0's p95; MariaDB has none). SELECT on
performance_schema refused: the reading says so, and it is asked again a minute later.

Statement digests strip comments, so proxytop's own statements (tagged ``/* proxytop */``) are
known there by their text: the rows whose DIGEST_TEXT has the key (metrics.statements) of a
statement proxytop sends, taken from where those statements are defined, are left out.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import FrozenSet, Optional, Tuple

from proxytop.collectors.innodb import (ENGINE_SQL_MARIADB, ENGINE_STATUS_SQL, METRICS_SQL, READING_SQL_MARIADB,
                                        STATUS_SQL as INNODB_STATUS_SQL, VARIABLES_SQL, VERSION_SQL, MySQLSession,
                                        server_label, source_name)
from proxytop.collectors.galera import SENT_STATEMENTS as GALERA_STATEMENTS
from proxytop.collectors.mysql_locks import sent_statements as lock_statements
from proxytop.collectors.replication import sent_statements as replication_statements
from proxytop.collectors.mysql_server import ALL_STATUS_SQL, ROLE_SQL, STATUS_SQL as SERVER_STATUS_SQL, replication_sql
from proxytop.collectors.mysql_sessions import PID_FILE_SQL, sessions_sql
from proxytop.collectors.mysql_space import SPACE_STATEMENTS
from proxytop.collectors.changes import MYSQL_UPTIME_SQL, MYSQL_VARIABLES_SQL
from proxytop.core import Collector, Table
from proxytop.metrics.innodb import Flavour
from proxytop.metrics.statements import COLUMNS, CUT_KEY, KeptKeys, is_statement, statement_key
from proxytop.polling.connection import Endpoint

LIMIT = 300  # the heaviest digests (by SUM_TIMER_WAIT) read each time
DENIED_KEY = "statements"  # in MySQLSession.denied_until
TABLE = "performance_schema.events_statements_summary_by_digest"
PROBE_SQL = ("SELECT @@performance_schema, (SELECT COUNT(*) FROM information_schema.COLUMNS "
             "WHERE TABLE_SCHEMA = 'performance_schema' AND TABLE_NAME = 'events_statements_summary_by_digest' "
             "AND COLUMN_NAME = 'QUANTILE_95')")
# The columns read, in the order of metrics.statements.COLUMNS; QUANTILE_95 only where it exists.
_EXPRESSIONS = ("SCHEMA_NAME", "DIGEST", "DIGEST_TEXT", "COUNT_STAR", "SUM_TIMER_WAIT", "SUM_ROWS_EXAMINED",
                "SUM_ROWS_SENT", "SUM_ROWS_AFFECTED", "SUM_NO_INDEX_USED", "SUM_NO_GOOD_INDEX_USED", "SUM_ERRORS",
                "MAX_TIMER_WAIT", "CAST(UNIX_TIMESTAMP(FIRST_SEEN) AS SIGNED)",
                "CAST(UNIX_TIMESTAMP(LAST_SEEN) AS SIGNED)")


def statements_sql(p95: bool, limit: int = LIMIT) -> str:
    """The digest read: the heaviest ``limit`` rows, the screen's columns only.

    >>> "QUANTILE_95" in statements_sql(True), "QUANTILE_95" in statements_sql(False)
    (True, False)
    >>> statements_sql(False).endswith("ORDER BY SUM_TIMER_WAIT DESC LIMIT 300")
    True
    """
    expressions = _EXPRESSIONS + (("QUANTILE_95",) if p95 else ("NULL",))
    selected = ", ".join(f"{expression} AS {name}" for expression, name in zip(expressions, COLUMNS))
    return f"SELECT {selected} FROM {TABLE} ORDER BY SUM_TIMER_WAIT DESC LIMIT {int(limit)}"


CHANGES_STATEMENTS = (MYSQL_VARIABLES_SQL, MYSQL_UPTIME_SQL)  # the Events screen's reading of each server


def own_statements() -> Tuple[str, ...]:
    """Every statement proxytop's readings send a MySQL server, as defined where it is sent
    (EXPLAIN and KILL, sent only on a key, aside)."""
    flavours = (Flavour("MariaDB", (10, 11, 0)), Flavour("MySQL", (8, 0, 36)), Flavour("MySQL", (5, 7, 44)))
    sessions = tuple(sessions_sql(mariadb, transactions, threads) for mariadb in (True, False)
                     for transactions in (True, False) for threads in (True, False))
    return ((VERSION_SQL, VARIABLES_SQL, INNODB_STATUS_SQL, READING_SQL_MARIADB, ENGINE_SQL_MARIADB, METRICS_SQL,
             ENGINE_STATUS_SQL, SERVER_STATUS_SQL, ALL_STATUS_SQL, ROLE_SQL, PID_FILE_SQL, PROBE_SQL,
             statements_sql(True), statements_sql(False))
            + tuple(replication_sql(flavour) for flavour in flavours) + sessions + lock_statements()
            + replication_statements() + GALERA_STATEMENTS + SPACE_STATEMENTS + CHANGES_STATEMENTS)


OWN_KEYS: FrozenSet[str] = frozenset(statement_key(sql) for sql in own_statements())


def is_own(key: str) -> bool:
    """Whether a digest's key is one of proxytop's statements (a long one cut by the server too)."""
    return key in OWN_KEYS or (len(key) >= CUT_KEY and any(is_statement(key, own) for own in OWN_KEYS))


@dataclass(frozen=True)
class StatementsReading:
    """One reading of a server's statement digest: ``digests`` has the columns of
    metrics.statements.COLUMNS (p95_timer NULL where the server has no QUANTILE_95)."""

    digests: Table
    enabled: bool = True  # @@performance_schema (off: the table is empty, and says nothing)
    denied: bool = False  # SELECT on performance_schema refused
    error: Optional[str] = None  # the read failed otherwise (one line)
    p95: bool = False  # the server has QUANTILE_95
    own_hidden: int = 0  # proxytop's own statements left out
    limit: int = LIMIT


@dataclass
class Probe:
    """What was learnt once per connection (performance_schema can't change without a restart)."""

    session: object
    enabled: bool
    p95: bool


class MySQLStatements(Collector):
    """``mysql.statements.<server>``: a :class:`StatementsReading` of one server."""

    default_interval = 10.0
    min_interval = 10.0  # a sort of the whole digest table in the server: every 10 s at the most
    history = 2

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        self.server = server_label(endpoint)
        self.name = statements_name(self.server)
        self.source = source_name(endpoint)
        self.clock = clock
        self._probe: Optional[Probe] = None
        self._keys = KeptKeys()

    def collect(self, session: MySQLSession) -> StatementsReading:
        session.retry_denied(self.clock())
        probe = self._probed(session)
        empty = Table(COLUMNS, ())
        if not probe.enabled:
            return StatementsReading(empty, enabled=False)
        table, denied, error = session.read_unless_denied(DENIED_KEY, statements_sql(probe.p95), self.clock())
        if table is None:
            return StatementsReading(empty, denied=denied, error=error, p95=probe.p95)
        digest_at, text_at = COLUMNS.index("digest"), COLUMNS.index("text")
        keys = self._keys.of((row[digest_at], row[text_at]) for row in table.rows)
        kept = tuple(row for row, key in zip(table.rows, keys) if not is_own(key))
        return StatementsReading(Table(COLUMNS, kept), p95=probe.p95, own_hidden=len(table.rows) - len(kept))

    def _probed(self, session: MySQLSession) -> Probe:
        if self._probe is None or self._probe.session is not session:
            rows = session.query(PROBE_SQL).rows
            enabled, p95 = (rows[0][0], rows[0][1]) if rows else (0, 0)
            self._probe = Probe(session, str(enabled) in ("1", "ON"), bool(p95))
        return self._probe


def statements_name(server: str) -> str:
    return f"mysql.statements.{server}"
