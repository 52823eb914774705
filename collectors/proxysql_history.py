"""ProxySQL's own history: its ``stats_history`` schema, read on the admin connection.

Once when a connection opens: the raw rows ProxySQL keeps (7 days of them) and the ``_hour``
rows before them (a year), only the columns the series need; then, no more often than ProxySQL
writes them (``admin-stats_mysql_connections``, default 60 s), only the rows newer than the
last one read. Each reading holds the rows it read; proxytop.metrics.proxysql_history turns
the readings into series.

Nothing here writes: ``SAVE MYSQL DIGEST TO DISK`` (which fills history_mysql_query_digest)
resets the live digest, and the history tables are written by ProxySQL's own timers only.
Where a ProxySQL 3.x has a TSDB (the table ``stats_history.tsdb_metrics``, found by its name,
not by the version), its few figures of mysql_connections are read too.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from proxytop import errors
from proxytop.collectors.proxysql import PROXYSQL
from proxytop.core import Collector, Table
from proxytop.metrics.proxysql_history import (HOUR_TABLES, INTERVAL_VARIABLES, RAW_TABLES, TSDB_METRICS, TSDB_TABLE,
                                              HistoryReading)
from proxytop.metrics.rates import to_number

NAME = "proxysql.history"
SCHEMA = "stats_history"
DEFAULT_PACE = 60.0  # admin-stats_mysql_connections' default


class ProxySQLHistory(Collector):
    """Reads stats_history: everything once, then what ProxySQL added since."""

    name = NAME
    source = PROXYSQL
    default_interval = DEFAULT_PACE  # raised or lowered to ProxySQL's own pace once read
    min_interval = 1.0  # ProxySQL's shortest admin-stats_* setting
    own_pace = True
    # every reading after the first holds one interval's rows: a week of them, with the first
    history = 1 + 7 * 24 * 60

    def __init__(self):
        super().__init__()
        self._session = None  # the connection the history was read on (another: read it all again)
        self._newest: Dict[str, float] = {}  # table -> timestamp of its newest row read
        self._tsdb = False
        self._since_first = 0  # readings since the last whole one

    def collect(self, session) -> HistoryReading:
        # All of it again before the engine lets the whole reading go (it keeps ``history``
        # readings): a week at ProxySQL's default minute, a day at 10 s.
        first = session is not self._session or self._since_first >= self.history - 1
        self._since_first = 0 if first else self._since_first + 1
        if first:
            self._session, self._newest = session, {}
        try:
            intervals = self._intervals(session)
            if first:
                self._tsdb = self._has_tsdb(session)
            tables = self._read_tables(session, first)
        except Exception as exc:
            if errors.is_connection_error(exc) or errors.is_passing(exc):
                if first:
                    self._session = None
                raise
            self._session = None  # try it all again next time (a grant, a table may come)
            who = "" if session.is_admin else " by this user"  # an admin user: the ProxySQL has none
            return HistoryReading(problem=f"not readable{who}: {errors.describe(exc)}")
        self._pace(intervals)
        return HistoryReading(tables=tables, intervals=intervals, first=first)

    # --- what is read ------------------------------------------------------------------------
    def _intervals(self, session) -> Tuple[Tuple[str, int], ...]:
        """The admin-stats_* variables; () when this user may not read global_variables (the
        stats user): the intervals are then learnt from the rows."""
        if not session.is_admin:
            return ()
        names = ", ".join(f"'{name}'" for name in sorted(set(INTERVAL_VARIABLES.values())))
        table = session.query(f"select variable_name, variable_value from global_variables "
                              f"where variable_name in ({names})")
        out = []
        for name, value in table.rows:
            number = to_number(value)
            if number is not None:
                out.append((name, int(number)))
        return tuple(sorted(out))

    def _has_tsdb(self, session) -> bool:
        """Whether this ProxySQL keeps a TSDB: its table, whatever the version says. (SQLite's
        own catalogue of the attached file, as a SELECT: ProxySQL knows SHOW TABLES FROM only by
        its whole text, with no tag after it.)"""
        found = session.query(f"select name from {SCHEMA}.sqlite_master where type = 'table' and name = '{TSDB_TABLE}'")
        return bool(found.rows)

    def _read_tables(self, session, first: bool) -> Tuple[Tuple[str, Table], ...]:
        out: List[Tuple[str, Table]] = []
        for table, columns in RAW_TABLES.items():
            rows = self._read(session, table, columns)
            out.append((table, rows))
            if first:
                # the hours before the first raw row (all of them when there is none)
                stamps = [to_number(row[0]) for row in rows.rows]
                before = min((s for s in stamps if s is not None), default=None)
                hours = f"{table}_hour"
                if hours in HOUR_TABLES:
                    out.append((hours, self._read(session, hours, HOUR_TABLES[hours], before=before)))
        if self._tsdb:
            out.append((TSDB_TABLE, self._read_tsdb(session)))
        return tuple(out)

    def _read(self, session, table: str, columns: Tuple[str, ...], before: Optional[float] = None) -> Table:
        where = []
        since = self._newest.get(table)
        if since is not None:
            where.append(f"timestamp > {int(since)}")
        if before is not None:
            where.append(f"timestamp + 3600 <= {int(before)}")
        sql = f"select {', '.join(columns)} from {SCHEMA}.{table}"
        if where:
            sql += " where " + " and ".join(where)
        rows = session.query(sql + " order by timestamp")
        self._note_newest(table, rows, 0)
        return rows

    def _read_tsdb(self, session) -> Table:
        """The TSDB's samples of the few families that hold mysql_connections' figures, summed
        over their labels (one value per family and timestamp)."""
        names = ", ".join(f"'{name}'" for name in sorted(TSDB_METRICS))
        since = self._newest.get(TSDB_TABLE)
        where = f"metric_name in ({names})" + (f" and timestamp > {int(since)}" if since is not None else "")
        rows = session.query(f"select timestamp, metric_name, sum(value) as value from {SCHEMA}.{TSDB_TABLE} "
                             f"where {where} group by timestamp, metric_name order by timestamp")
        self._note_newest(TSDB_TABLE, rows, 0)
        return rows

    def _note_newest(self, table: str, rows: Table, at: int) -> None:
        stamps = [to_number(row[at]) for row in rows.rows]
        newest = max((s for s in stamps if s is not None), default=None)
        if newest is not None:
            self._newest[table] = max(newest, self._newest.get(table, newest))

    def _pace(self, intervals: Tuple[Tuple[str, int], ...]) -> None:
        """Read again when ProxySQL has written again: the shortest interval of the tables read
        (not when they are all off: then the default, to notice them coming back)."""
        written = [seconds for name, seconds in intervals if seconds > 0]
        self.default_interval = float(max(self.min_interval, min(written))) if written else DEFAULT_PACE
