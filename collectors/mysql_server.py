"""A MySQL / MariaDB server's own state for the Servers screen: a few status counters, its
role settings and its replication channels, read on the connection its InnoDB readings use;
and, for the Status and Commands screens, its whole global status (StatusVariables).

One statement for the status variables every reading, the role variables every 10 s, and
the replication status every reading of a replica but every 10 s of a server that replicates
from nobody (it may become a replica). The replication status (SHOW ALL SLAVES STATUS on
MariaDB, SHOW REPLICA STATUS on MySQL 8.0.22+, SHOW SLAVE STATUS before) needs a privilege
(MariaDB: SLAVE MONITOR; MySQL: REPLICATION CLIENT): without it the reading says so, and the
statement is tried again a minute later, on a new connection.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

from proxytop.collectors.innodb import MySQLSession, counter, server_label, source_name
from proxytop.core import Collector, Table
from proxytop.metrics.innodb import Flavour
from proxytop.polling.connection import Endpoint

# What the Servers screen shows, from SHOW GLOBAL STATUS (a server lacking one leaves it out).
STATUS = (
    "Uptime", "Questions", "Threads_connected", "Threads_running", "Slow_queries", "Aborted_connects",
    "Innodb_rows_read", "Innodb_rows_inserted", "Innodb_rows_updated", "Innodb_rows_deleted",
    "Rows_read", "Handler_write", "Handler_update", "Handler_delete",  # MariaDB 10.6+ has no Innodb_rows_*
    "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads", "Innodb_history_list_length",
    "wsrep_cluster_status", "wsrep_local_state_comment", "wsrep_cluster_size",
)
STATUS_SQL = "SHOW GLOBAL STATUS WHERE Variable_name IN ({})".format(", ".join(f"'{n}'" for n in STATUS))
ROLE_SQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'super_read_only', 'wsrep_on', 'log_bin')"
ALL_STATUS_SQL = "SHOW GLOBAL STATUS"  # the Status and Commands screens' whole reading
ROLE_EVERY = 10.0  # seconds between two readings of the role variables, which change rarely


@dataclass(frozen=True)
class Channel:
    """One replication channel of a replica, by the names of both products' statements."""

    name: str  # MariaDB's Connection_name, MySQL's Channel_Name ('' for the default one)
    source: str  # host:port it replicates from
    io_running: str  # Yes / No / Connecting
    sql_running: str
    lag: Optional[int]  # Seconds_Behind_Master / _Source; None when unknown (a thread stopped)
    io_errno: int = 0
    io_error: str = ""
    sql_errno: int = 0
    sql_error: str = ""


@dataclass(frozen=True)
class ServerReading:
    """What one reading of a server gives the Servers screen."""

    status: Mapping[str, object]
    variables: Mapping[str, object]
    channels: Tuple[Channel, ...] = ()
    replication_denied: Optional[str] = None  # the privilege it takes, when refused
    replication_error: Optional[str] = None


def replication_sql(flavour: Optional[Flavour]) -> str:
    """The statement that lists every replication channel of this server.

    >>> replication_sql(Flavour("MariaDB", (10, 11, 6))), replication_sql(Flavour("MySQL", (8, 0, 36)))
    ('SHOW ALL SLAVES STATUS', 'SHOW REPLICA STATUS')
    >>> replication_sql(Flavour("MySQL", (5, 7, 44)))
    'SHOW SLAVE STATUS'
    """
    if flavour is not None and flavour.is_mariadb:
        return "SHOW ALL SLAVES STATUS"
    if flavour is not None and flavour.version >= (8, 0, 22):
        return "SHOW REPLICA STATUS"
    return "SHOW SLAVE STATUS"


def _field(row: Mapping[str, object], *names: str) -> object:
    for name in names:
        if name in row:
            return row[name]
    return None


def channels_from(table: Table) -> Tuple[Channel, ...]:
    """Channels from the rows of any of the three statements (their columns read by name:
    the two products and their versions order and name them differently).

    >>> table = Table(("Connection_name", "Master_Host", "Master_Port", "Slave_IO_Running", "Slave_SQL_Running",
    ...                "Seconds_Behind_Master", "Last_IO_Errno", "Last_IO_Error", "Last_SQL_Errno", "Last_SQL_Error"),
    ...               [("", "127.0.0.1", "3391", "Yes", "No", None, "0", "", "1062", "Duplicate entry '1'")])
    >>> channel = channels_from(table)[0]
    >>> channel.source, channel.sql_running, channel.lag, channel.sql_errno
    ('127.0.0.1:3391', 'No', None, 1062)
    """
    channels = []
    for row in table.dicts():
        lag = counter(_field(row, "Seconds_Behind_Master", "Seconds_Behind_Source"))
        channels.append(Channel(
            name=str(_field(row, "Connection_name", "Channel_Name", "Channel_name") or ""),
            source=f"{_field(row, 'Master_Host', 'Source_Host') or '?'}:{_field(row, 'Master_Port', 'Source_Port') or '?'}",
            io_running=str(_field(row, "Slave_IO_Running", "Replica_IO_Running") or ""),
            sql_running=str(_field(row, "Slave_SQL_Running", "Replica_SQL_Running") or ""),
            lag=lag if isinstance(lag, int) else None,
            io_errno=counter(_field(row, "Last_IO_Errno")) or 0,
            io_error=str(_field(row, "Last_IO_Error") or ""),
            sql_errno=counter(_field(row, "Last_SQL_Errno")) or 0,
            sql_error=str(_field(row, "Last_SQL_Error") or ""),
        ))
    return tuple(channels)


def replication_privilege(flavour: Optional[Flavour]) -> str:
    return "SLAVE MONITOR" if flavour is not None and flavour.is_mariadb else "REPLICATION CLIENT"


class OneServerCollector(Collector):
    """A reading of one server, every interval (1 s by default), named ``<prefix>.<server>``."""

    prefix = "mysql.server"
    default_interval = 1.0
    min_interval = 0.5
    history = 2

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        self.server = server_label(endpoint)
        self.name = f"{self.prefix}.{self.server}"
        self.source = source_name(endpoint)
        self.clock = clock


class ServerStatus(OneServerCollector):
    """``mysql.server.<server>``: a :class:`ServerReading` of one server."""

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        super().__init__(endpoint, clock)
        self._role: Tuple[object, float, Dict[str, object]] = (None, 0.0, {})  # (connection, read at, values)
        # (connection, read at, channels): a server that replicates from nobody is asked again
        # every ROLE_EVERY seconds, not every reading (a statement a second saved per primary)
        self._no_channels: Tuple[object, float] = (None, 0.0)

    def role_variables(self, session: MySQLSession) -> Dict[str, object]:
        """read_only and friends, read on a new connection and then every ROLE_EVERY seconds."""
        conn, read_at, values = self._role
        now = self.clock()
        if conn is not session.conn or now - read_at >= ROLE_EVERY:
            values = {str(name): value for name, value in session.query(ROLE_SQL).rows}
            self._role = (session.conn, now, values)
        return values

    def collect(self, session: MySQLSession) -> ServerReading:
        session.retry_denied(self.clock())
        status = {str(name): counter(value) for name, value in session.query(STATUS_SQL).rows}
        variables = self.role_variables(session)
        conn, read_at = self._no_channels
        if conn is session.conn and self.clock() - read_at < ROLE_EVERY:
            return ServerReading(status, variables)
        sql = replication_sql(session.flavour)
        table, denied, error = session.read_unless_denied(sql, sql, self.clock())
        if table is None:
            return ServerReading(status, variables, replication_error=error,
                                 replication_denied=replication_privilege(session.flavour) if denied else None)
        channels = channels_from(table)
        self._no_channels = (session.conn, self.clock()) if not channels else (None, 0.0)
        return ServerReading(status, variables, channels)


class StatusVariables(Collector):
    """``mysql.global_status.<server>``: the whole of ``SHOW GLOBAL STATUS`` (no privilege
    needed) as {name: value}, the values as the server sent them (text). The Status and
    Commands screens read it, only for the server they show: about 560 rows on MariaDB 10.11,
    so it is read every second at the most."""

    default_interval = 1.0
    min_interval = 1.0
    history = 2  # a rate is the difference of the last two readings: status counters move at once

    def __init__(self, endpoint: Endpoint):
        self.server = server_label(endpoint)
        self.name = f"mysql.global_status.{self.server}"
        self.source = source_name(endpoint)

    def collect(self, session: MySQLSession) -> Dict[str, object]:
        return {str(name): value for name, value in session.query(ALL_STATUS_SQL).rows}
