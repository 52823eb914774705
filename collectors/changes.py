"""The slow readings that only the Events screen's watch needs (proxytop.metrics.events):
ProxySQL's runtime global variables and its modules' load versions, and each MySQL server's
global variables. The rest of what events watch (backend statuses, uptimes, replica threads,
the cluster's checksums) comes from readings proxytop takes anyway.

Every 30 s (the checksums every 10 s): settings change rarely, and a full SHOW GLOBAL
VARIABLES is some 600 rows on MariaDB 10.11.
"""
from __future__ import annotations

from typing import Optional

from proxytop.collectors.innodb import MySQLSession, server_label, source_name
from proxytop.collectors.proxysql import TableCollector
from proxytop.core import Collector
from proxytop.metrics.events import VariablesReading
from proxytop.metrics.rates import to_number
from proxytop.polling.connection import Endpoint

VARIABLES_EVERY = 30.0  # seconds between two readings of a source's global variables
CHECKSUMS_EVERY = 10.0  # seconds between two readings of ProxySQL's module versions

# ProxySQL's uptime, read with its variables: a restart is then known to the reading itself.
# (stats_mysql_global is the cheap table to read; the WHERE sends one row.)
PROXYSQL_UPTIME_SQL = "select Variable_Value from stats_mysql_global where Variable_Name = 'ProxySQL_Uptime'"
PROXYSQL_VARIABLES_SQL = "select variable_name, variable_value from runtime_global_variables"
MYSQL_VARIABLES_SQL = "SHOW GLOBAL VARIABLES"
MYSQL_UPTIME_SQL = "SHOW GLOBAL STATUS WHERE Variable_name = 'Uptime'"


class ProxySQLVariables(TableCollector):
    """``proxysql.variables``: runtime_global_variables (what is in force, not what was set and
    not yet loaded) as a VariablesReading. Needs an admin user."""

    name = "proxysql.variables"
    table = "runtime_global_variables"
    needs_admin = True
    default_interval = VARIABLES_EVERY
    min_interval = VARIABLES_EVERY
    own_pace = True
    history = 1

    def collect(self, session) -> Optional[VariablesReading]:
        if not session.is_admin:
            return None
        values = {str(name): "" if value is None else str(value)
                  for name, value in session.query(PROXYSQL_VARIABLES_SQL).rows}
        uptime_rows = session.query(PROXYSQL_UPTIME_SQL).rows
        return VariablesReading(values, to_number(uptime_rows[0][0]) if uptime_rows else None)


class ProxySQLChecksums(TableCollector):
    """``proxysql.checksums``: runtime_checksums_values, each module's version and checksum
    (each LOAD ... TO RUNTIME raises the version). A few rows. Needs an admin user."""

    name = "proxysql.checksums"
    table = "runtime_checksums_values"
    needs_admin = True
    default_interval = CHECKSUMS_EVERY
    min_interval = CHECKSUMS_EVERY
    own_pace = True
    history = 1


class MySQLVariables(Collector):
    """``mysql.variables.<server>``: SHOW GLOBAL VARIABLES and the server's Uptime, as a
    VariablesReading."""

    default_interval = VARIABLES_EVERY
    min_interval = VARIABLES_EVERY
    own_pace = True
    history = 1

    def __init__(self, endpoint: Endpoint):
        self.server = server_label(endpoint)
        self.name = variables_name(self.server)
        self.source = source_name(endpoint)

    def collect(self, session: MySQLSession) -> VariablesReading:
        values = {str(name): _text(value) for name, value in session.query(MYSQL_VARIABLES_SQL).rows}
        uptime = {str(name): value for name, value in session.query(MYSQL_UPTIME_SQL).rows}.get("Uptime")
        return VariablesReading(values, to_number(_text(uptime)) if uptime is not None else None)


def variables_name(server: str) -> str:
    return f"mysql.variables.{server}"


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


