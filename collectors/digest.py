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
import threading
import time
from array import array
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from proxytop.collectors.base import Collector, Table
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


class QueryDigest(Collector):
    """``select * from stats_mysql_query_digest`` as a Table whose rows are kept as parsed
    columns (see :meth:`compact`). A longer history feeds the Time/s sparkline of the
    drill-down; older readings are kept only as per-digest totals
    (:class:`proxytop.metrics.digests.DigestTotals`)."""

    name = "proxysql.query_digest"
    source = PROXYSQL
    tables = MYSQL_TABLES
    default_interval = DEFAULT_FLOOR
    history = 61

    def __init__(self, floor: float = DEFAULT_FLOOR):
        super().__init__()
        self.floor = floor
        self.last_duration = 0.0
        self._position = None  # digest -> index, shared by the kept totals of an unchanged digest set
        self._kept: Optional[digests.DigestTotals] = None  # the last reading shrunk (lends its first_seen)
        self._last: Optional[digests.Parsed] = None  # the last reading (lends its keys and texts)
        # its rows' counters as sent (the next reading parses only the rows whose bytes differ):
        # kept here, not in the reading, so that one copy lives, not one per reading kept
        self._last_sent: Optional[List[bytes]] = None
        self._last_hashes: Optional[array] = None  # hash() of each of its rows' key and text

    @property
    def min_interval(self) -> float:  # type: ignore[override]
        """The interval in force can't be shorter than this: the floor, or 20 times the last read."""
        return max(self.floor, float(math.ceil(READ_COST_FACTOR * self.last_duration)))  # whole seconds

    def collect(self, session) -> Optional[Table]:
        known = getattr(session, "tables", None)
        if known and self.tables.digest not in known:
            return None  # a ProxySQL without this table: the screen says so, no failing query
        started, wall = time.monotonic(), time.time()
        sql = f"select * from {self.tables.digest}"
        read_columns = getattr(session, "query_columns", None)
        if read_columns is None:  # a session that reads rows only
            table = session.query(sql)
            self.last_duration = time.monotonic() - started
            return self.compact(table, wall)
        result = read_columns(sql, numeric=digests.COUNTERS)
        self.last_duration = time.monotonic() - started
        return self.compact_columns(result, wall)

    def compact_columns(self, result, wall_time: float) -> Table:
        """A reading read as columns (proxytop.polling.columns), parsed here against the last one (only
        the rows that changed are converted) and kept as columns as :meth:`compact` does; a
        reading they would not give back exactly is kept as rows, as read."""
        # each row known by the hash of its key and text: a reading with new digests among the
        # same rows decodes only the new ones (160 KB at 20,000 digests, where the rows' own
        # bytes would be megabytes)
        hashes = array("q", map(hash, result.heads)) if result.tails is not None else None
        before, self._last_hashes = self._last_hashes, hashes
        reading = digests.parse_columns(result, wall_time, self.tables.schema_column, self._last, self._last_sent,
                                        (before, hashes) if before is not None and hashes is not None else None)
        self._last_sent = result.tails if reading.plain else None
        if not reading.exact or not reading.keys:
            self._last = reading if reading.heads is not None else None
            return result.table()
        self._last = reading
        return Table(result.names, digests.ParsedRows(reading, result.names, self.tables.schema_column))  # type: ignore[arg-type]

    def compact(self, table: Table, wall_time: float) -> Table:
        """The reading parsed here, on the worker's thread, and kept as columns: a Table whose
        rows are regenerated from them when something iterates them (a recording). 20,000
        digests take about 2 MB instead of 20; a table they would not give back exactly (NULLs,
        bad values, an unknown column) is kept as read."""
        reading = digests.parse(table.columns, table.rows, wall_time, self.tables.schema_column, self._last)
        rows = digests.compact_rows(table.columns, table.rows, reading, self.tables.schema_column)
        if rows is None:
            self._last = self._last_sent = self._last_hashes = None
            return table
        self._last, self._last_sent, self._last_hashes = reading, None, None
        return Table(table.columns, rows)  # type: ignore[arg-type]

    def shrink(self, data: Any) -> Any:
        if not isinstance(data, Table):
            return data
        already = data.rows.parsed if isinstance(data.rows, digests.ParsedRows) else parsed_before(data)
        kept = digests.totals(already, self._position, self._kept) if already is not None else \
            digests.shared_with(digests.table_totals(data.columns, data.rows, self._position), self._kept)
        self._position = kept.position
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


# ----- one parse per reading, shared by the screens and the worker's shrink -------------------
_parsed_lock = threading.Lock()
_parsed_recent: List[Tuple[Table, digests.Parsed]] = []


def parsed(table: Table, wall_time: float, schema_column: str = MYSQL_TABLES.schema_column) -> digests.Parsed:
    """``digests.parse`` of a Table, computed once per reading (each is used as the current,
    then the previous reading, and shrunk): 20,000 digests take tens of milliseconds. A new
    reading shares the row keys and texts of the one before when they are the same."""
    if isinstance(table.rows, digests.ParsedRows):  # parsed when it was read
        return table.rows.parsed
    with _parsed_lock:
        for seen, result in _parsed_recent:
            if seen is table:
                return result if result.wall_time == wall_time or not wall_time else \
                    dataclasses.replace(result, wall_time=wall_time)
        before = _parsed_recent[-1][1] if _parsed_recent else None
    result = digests.parse(table.columns, table.rows, wall_time, schema_column, previous=before)
    with _parsed_lock:
        # the current and the previous reading only: at 20,000 digests each costs tens of MB
        _parsed_recent[:] = _parsed_recent[-1:] + [(table, result)]
    return result


def parsed_before(table: Table) -> Optional[digests.Parsed]:
    """The reading of ``table`` if it was parsed and is still kept, else None (never parses)."""
    with _parsed_lock:
        for seen, result in _parsed_recent:
            if seen is table:
                return result
    return None
