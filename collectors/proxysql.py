"""Collectors that read ProxySQL's admin interface.

Each query names exactly one table, in lower case (ProxySQL refreshes a stats table only when
its exact name appears in the query text), and never a ``*_reset`` table. Values stay text, as
ProxySQL sends them; screens convert by column name.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from proxytop import errors
from proxytop.collectors import folded
from proxytop.core import Collector, Table
from proxytop.metrics.rates import RATE_WINDOW

PROXYSQL = "proxysql"


class TableCollector(Collector):
    """Reads ``select * from <table>``: one table per query, all columns mapped by name."""

    source = PROXYSQL
    table = ""
    needs_admin = False  # the read-only stats user can't read runtime_* / configuration tables

    _refused_by: Any = None  # the connection whose ProxySQL refused an optional query

    def collect(self, session) -> Optional[Table]:
        if self.needs_admin and not session.is_admin:
            return None  # "needs an admin user": shown by the screen, no failing query sent
        return session.query(f"select * from {self.table}")

    def ask_unless_refused(self, session, ask: Callable[[Any], Any]) -> Any:
        """``ask(session)``: an optional query that saves work (a concatenated reading, a
        checksum). None when this connection's ProxySQL refused it, now or before: it is not
        sent again on that connection, and the collector reads as without it. A broken
        connection, or a locked admin database (1205), raises as any reading does."""
        if self._refused_by is session:
            return None
        try:
            return ask(session)
        except Exception as exc:
            if errors.is_connection_error(exc) or errors.is_passing(exc):
                raise
            self._refused_by = session
            return None


class GlobalStatus(Collector):
    """stats_mysql_global as {Variable_Name: Variable_Value}: cheap, feeds the header too."""

    name = "proxysql.global"
    table = "stats_mysql_global"
    source = PROXYSQL
    default_interval = 1.0
    min_interval = 0.5
    history = 2 + int(RATE_WINDOW / min_interval)  # rates span RATE_WINDOW seconds of readings

    def collect(self, session) -> Dict[str, str]:
        return self.read_plainly(session)

    def read_plainly(self, session) -> Dict[str, str]:
        """The rows of :meth:`sql` by themselves (the header's, when not read with the pool's:
        collectors.folded)."""
        table = session.query(self.sql())
        name_at = table.columns.index("Variable_Name")
        value_at = table.columns.index("Variable_Value")
        return {row[name_at]: row[value_at] for row in table.rows}

    def sql(self) -> str:
        return f"select * from {self.table}"


# What every screen's header shows (uptime, Q/s, conn, trx) and the Errors screen's refused
# logins: the few rows of stats_mysql_global read when no screen on view needs all of them.
HEADER_VARIABLES = ("ProxySQL_Uptime", "Questions", "Client_Connections_connected", "Active_Transactions",
                    "Access_Denied_Wrong_Password", "Access_Denied_Max_Connections",
                    "Access_Denied_Max_User_Connections")


class HeaderStatus(GlobalStatus):
    """The header's rows of stats_mysql_global, {Variable_Name: Variable_Value} as GlobalStatus.

    ProxySQL rebuilds the whole table for any query naming it (a WHERE doesn't make that
    cheaper), but 7 rows instead of ~100 are sent, decoded and kept: on a screen that doesn't
    show the global status, this is the larger part of proxytop's own cost per refresh. The
    table is SQLite's inside ProxySQL, so ``where ... in (...)`` is answered as written."""

    name = "proxysql.header_status"
    variables = HEADER_VARIABLES
    history = 2  # the header's rate (Q/s) and the refused logins/s: one pair

    def collect(self, session) -> Dict[str, str]:
        # with the connection pool's reading when that is due too (collectors.folded)
        return folded.read(session, self, self.read_plainly)

    def sql(self) -> str:
        """
        >>> HeaderStatus().sql()[:80]
        "select * from stats_mysql_global where Variable_Name in ('ProxySQL_Uptime', 'Que"
        """
        wanted = ", ".join(f"'{name}'" for name in self.variables)
        return f"select * from {self.table} where Variable_Name in ({wanted})"


class ConnectionPool(TableCollector):
    name = "proxysql.connection_pool"
    table = "stats_mysql_connection_pool"
    default_interval = 1.0
    min_interval = 0.5

    def collect(self, session) -> Optional[Table]:
        # with the header's rows of the global status when that is due too (collectors.folded)
        return folded.read(session, self, super().collect)


class RuntimeServers(TableCollector):
    """runtime_mysql_servers: weight, max_connections, comment. Configuration changes rarely,
    so it is read slowly."""

    name = "proxysql.runtime_servers"
    table = "runtime_mysql_servers"
    needs_admin = True
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True
