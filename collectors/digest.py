"""The query digest (stats_mysql_query_digest) and what the Queries screen needs beside it.

Reading the digest table is expensive for ProxySQL: every read copies the whole digest map
into SQLite, whatever the WHERE or LIMIT, and the cost grows with the number of digests. So
it is read only while a screen that needs it is visible, at most every ``floor`` seconds
(5 by default, ``--digest-min-interval``) and never sooner than 20 times the last read took.

Table and column names live in :class:`DigestTables`, one declaration per protocol, so that
the PostgreSQL twin (stats_pgsql_query_digest, with ``database`` for ``schemaname``) reuses
the same collector and metrics.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any, Optional, Tuple

from proxytop.core import Collector, Table
from proxytop.collectors.proxysql import PROXYSQL
from proxytop.collectors.proxysql_stats import MySQLVariables, name_value
from proxytop.metrics import digests

DEFAULT_FLOOR = 5.0  # seconds between two digest reads, at least
READ_COST_FACTOR = 20  # ... and at least this many times the last read's duration


@dataclass(frozen=True)
class DigestTables:
    """Where one protocol's digest, rules and users live, and how its settings are named."""

    digest: str
    schema_column: str
    rules: str
    users: str
    enabled_variable: str
    iterations_variable: str
    track_hostname_variable: str


MYSQL_TABLES = DigestTables(
    digest="stats_mysql_query_digest",
    schema_column="schemaname",
    rules="runtime_mysql_query_rules",
    users="runtime_mysql_users",
    enabled_variable="mysql-query_digests",
    iterations_variable="mysql-query_processor_iterations",
    track_hostname_variable="mysql-query_digests_track_hostname",
)


def statement(tables: DigestTables, version: Optional[Tuple[int, int, int]]) -> str:
    """The digest read. From 2.0.6 on (every column known) the row key's numbers and address
    and the counters come as one text column (``digests.PACKED``): a row of 4 fields reads off
    the socket in half the time of 14. Names and texts, which can hold commas, stay columns.

    >>> statement(MYSQL_TABLES, (2, 0, 5))
    'select * from stats_mysql_query_digest'
    >>> statement(MYSQL_TABLES, (2, 7, 2))[:61]
    "select ifnull(hostgroup, '') || ',' || ifnull(client_address,"
    """
    if version is None or version < (2, 0, 6):
        return f"select * from {tables.digest}"
    packed = " || ',' || ".join(f"ifnull({name}, '')" for name in digests.PACKED)
    return f"select {packed} as {digests.PACKED_COLUMN}, {tables.schema_column}, username, digest_text from {tables.digest}"


class QueryDigest(Collector):
    """The digest (:func:`statement`), parsed as it is read (a
    :class:`proxytop.metrics.digests.Reading`: the screens that show it share that one parse).
    A longer history feeds the Time/s sparkline of the drill-down; older readings are kept only
    as per-digest totals (:class:`proxytop.metrics.digests.DigestTotals`)."""

    name = "proxysql.query_digest"
    source = PROXYSQL
    tables = MYSQL_TABLES
    default_interval = DEFAULT_FLOOR
    history = 61

    def __init__(self, floor: float = DEFAULT_FLOOR):
        super().__init__()
        self.floor = floor
        self.last_duration = 0.0
        self._kept: Optional[digests.DigestTotals] = None  # the last reading shrunk

    @property
    def min_interval(self) -> float:  # type: ignore[override]
        """The interval in force can't be shorter than this: the floor, or 20 times the last read."""
        return max(self.floor, float(math.ceil(READ_COST_FACTOR * self.last_duration)))  # whole seconds

    def collect(self, session) -> Optional[digests.Reading]:
        known = getattr(session, "tables", None)
        if known and self.tables.digest not in known:
            return None  # a ProxySQL without this table: the screen says so, no failing query
        started, wall = time.monotonic(), time.time()
        table = session.query(statement(self.tables, getattr(session, "version", None)))
        self.last_duration = time.monotonic() - started
        return digests.parse(table.columns, table.rows, wall, self.tables.schema_column)

    def shrink(self, data: Any) -> Any:
        if not isinstance(data, digests.Reading):
            return data
        kept = digests.totals(data)
        if self._kept is not None and kept.digests == self._kept.digests:
            # one tuple of digest names for the readings of the same digests: 1.5 MB a reading at 20,000
            kept = dataclasses.replace(kept, digests=self._kept.digests)
        self._kept = kept
        return kept


class DigestVariables(MySQLVariables):
    """The settings that decide what the digest shows and how rules are walked (admin only).

    admin-stats_mysql_query_digest_to_disk is asked for with LIKE: ProxySQL rebuilds the
    digest table for any query whose text contains its name, and that name contains it."""

    name = "proxysql.digest_variables"
    wanted = (MYSQL_TABLES.enabled_variable, MYSQL_TABLES.iterations_variable,
              MYSQL_TABLES.track_hostname_variable, "mysql-query_processor_regex")
    to_disk_like = "admin-stats%query%digest%to%disk"

    def collect(self, session):
        if not session.is_admin:
            return None
        names = ", ".join(f"'{name}'" for name in self.wanted)
        return name_value(session.query(f"select * from global_variables where variable_name in ({names}) "
                                        f"or variable_name like '{self.to_disk_like}'"))


class RuntimeUsers(Collector):
    """Each user's default hostgroup and transaction_persistent, for routes: only those
    columns are asked for (never the passwords). Admin users only."""

    name = "proxysql.runtime_users"
    source = PROXYSQL
    tables = MYSQL_TABLES
    default_interval = 30.0
    min_interval = 10.0
    own_pace = True
    history = 1

    def collect(self, session) -> Optional[Table]:
        if not session.is_admin:
            return None
        return session.query(f"select username, active, default_hostgroup, transaction_persistent, frontend "
                             f"from {self.tables.users}")
