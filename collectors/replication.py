"""A MySQL / MariaDB server's replication, whole, for the Replication screen: every channel's
full status row (SHOW ALL SLAVES STATUS on MariaDB, SHOW REPLICA STATUS on MySQL 8.0.22+,
SHOW SLAVE STATUS before), the lag of its last readings, and, on a server that writes a
binary log, where that log stands (SHOW MASTER STATUS; SHOW BINARY LOG STATUS on MySQL 8.2+),
the replicas connected to it (SHOW SLAVE HOSTS; SHOW REPLICAS on MySQL 8.0.22+) and the
settings and counters of its group commit.

Read only while the Replication screen is shown. A statement refused for a privilege is
named in the reading and asked again a minute later (as ServerStatus does), the rest still read.
What rarely changes is read on a new connection and then every ROLE_EVERY (10) seconds, as
ServerStatus reads the role variables: the variables (settings, and the GTID positions the
primary's detail shows; a MariaDB channel's Trx<IO takes the applied position from its own
row's Gtid_Slave_Pos, read every time) and the replicas connected. A steady primary then costs
three statements a reading, a replica two or three.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, Mapping, Optional, Tuple

from proxytop.collectors.innodb import MySQLSession, counter
from proxytop.collectors.mysql_server import (ROLE_EVERY, Channel, OneServerCollector, channels_from,
                                              replication_privilege, replication_sql)
from proxytop.core import Table
from proxytop.metrics.innodb import Flavour
from proxytop.polling.connection import Endpoint

VARIABLES = ("log_bin", "sync_binlog", "innodb_flush_log_at_trx_commit", "gtid_slave_pos", "gtid_binlog_pos",
             "gtid_executed", "binlog_format")
VARIABLES_SQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})".format(", ".join(f"'{n}'" for n in VARIABLES))
# MariaDB counts group commits and binary log bytes; MySQL has none of these (left out then).
STATUS = ("Binlog_commits", "Binlog_group_commits", "Binlog_bytes_written")
STATUS_SQL = "SHOW GLOBAL STATUS WHERE Variable_name IN ({})".format(", ".join(f"'{n}'" for n in STATUS))
LAG_POINTS = 180  # readings of lag kept per channel for the sparkline: 3 minutes at 1 s, 6 at 2 s


@dataclass(frozen=True)
class ChannelStatus:
    """One channel: its summary, its whole status row as the server sent it, and the lag of
    its last readings (oldest first; None while unknown)."""

    channel: Channel
    fields: Tuple[Tuple[str, object], ...] = ()
    lags: Tuple[Optional[int], ...] = ()

    def row(self) -> Dict[str, object]:
        return dict(self.fields)


@dataclass(frozen=True)
class ReplicationReading:
    """What one reading of a server's replication gives."""

    channels: Tuple[ChannelStatus, ...] = ()
    variables: Mapping[str, object] = field(default_factory=dict)
    status: Mapping[str, object] = field(default_factory=dict)
    binlog_file: Optional[str] = None  # the binary log being written, and the position in it
    binlog_position: Optional[int] = None
    replicas: Tuple[Tuple[str, str], ...] = ()  # (server id, host:port) of each replica connected
    denied: Tuple[Tuple[str, str], ...] = ()  # (what, the privilege it takes)
    errors: Tuple[str, ...] = ()

    @property
    def log_bin(self) -> bool:
        return str(self.variables.get("log_bin") or "").upper() in ("ON", "1")


def binlog_sql(flavour: Optional[Flavour]) -> str:
    """Where the binary log stands.

    >>> binlog_sql(Flavour("MariaDB", (10, 11, 6))), binlog_sql(Flavour("MySQL", (8, 4, 0)))
    ('SHOW MASTER STATUS', 'SHOW BINARY LOG STATUS')
    """
    if flavour is not None and not flavour.is_mariadb and flavour.version >= (8, 2, 0):
        return "SHOW BINARY LOG STATUS"
    return "SHOW MASTER STATUS"


def replicas_sql(flavour: Optional[Flavour]) -> str:
    """The replicas connected.

    >>> replicas_sql(Flavour("MariaDB", (10, 11, 6))), replicas_sql(Flavour("MySQL", (8, 0, 36)))
    ('SHOW SLAVE HOSTS', 'SHOW REPLICAS')
    """
    if flavour is not None and not flavour.is_mariadb and flavour.version >= (8, 0, 22):
        return "SHOW REPLICAS"
    return "SHOW SLAVE HOSTS"


def sent_statements() -> Tuple[str, ...]:
    """Every statement this reading sends, for any flavour (the Statements screen knows them
    as proxytop's own)."""
    flavours = (Flavour("MariaDB", (10, 11, 0)), Flavour("MySQL", (8, 0, 36)), Flavour("MySQL", (8, 4, 0)),
                Flavour("MySQL", (5, 7, 44)))
    return (VARIABLES_SQL, STATUS_SQL) + tuple(sql for flavour in flavours
                                               for sql in (binlog_sql(flavour), replicas_sql(flavour)))


def binlog_privilege(flavour: Optional[Flavour]) -> str:
    return "BINLOG MONITOR" if flavour is not None and flavour.is_mariadb else "REPLICATION CLIENT"


def replicas_privilege(flavour: Optional[Flavour]) -> str:
    return "REPLICATION MASTER ADMIN" if flavour is not None and flavour.is_mariadb else "REPLICATION SLAVE"


def replicas_from(table: Table) -> Tuple[Tuple[str, str], ...]:
    """(server id, host:port) of SHOW SLAVE HOSTS / SHOW REPLICAS rows.

    >>> replicas_from(Table(("Server_id", "Host", "Port", "Master_id"), ((2, "localhost", 3392, 1),)))
    (('2', 'localhost:3392'),)
    """
    found = []
    for row in table.dicts():
        server_id = row.get("Server_id", row.get("Server_Id"))
        found.append((str(server_id), f"{row.get('Host') or '?'}:{row.get('Port') or '?'}"))
    return tuple(found)


def plain(value: object) -> object:
    """A status field as it can be recorded: numbers and text as they are, anything else as text."""
    return value if value is None or isinstance(value, (int, float, str)) else str(value)


class ReplicationStatus(OneServerCollector):
    """``mysql.replication.<server>``: a :class:`ReplicationReading` of one server."""

    prefix = "mysql.replication"

    def __init__(self, endpoint: Endpoint, clock=time.monotonic):
        super().__init__(endpoint, clock)
        self._lags: Dict[Tuple[str, str], Deque[Optional[int]]] = {}
        # (connection, read at, values): re-read on a new connection and every ROLE_EVERY seconds
        self._variables: Tuple[object, float, Dict[str, object]] = (None, 0.0, {})
        # (connection, read at, replicas, (denied or None), error or None)
        self._replicas: Tuple[object, float, Tuple[Tuple[str, str], ...], Optional[Tuple[str, str]],
                              Optional[str]] = (None, 0.0, (), None, None)

    def rare_variables(self, session: MySQLSession, now: float) -> Dict[str, object]:
        conn, read_at, values = self._variables
        if conn is not session.conn or now - read_at >= ROLE_EVERY:
            values = {str(name): value for name, value in session.query(VARIABLES_SQL).rows}
            self._variables = (session.conn, now, values)
        return values

    def collect(self, session: MySQLSession) -> ReplicationReading:
        now = self.clock()
        session.retry_denied(now)
        flavour = session.flavour
        variables = self.rare_variables(session, now)
        status = {str(name): counter(value) for name, value in session.query(STATUS_SQL).rows}
        denied, errors = [], []

        sql = replication_sql(flavour)
        table, refused, error = session.read_unless_denied(sql, sql, now)
        channels: Tuple[ChannelStatus, ...] = ()
        if table is not None:
            channels = self.channels(table)
        elif refused:
            denied.append(("the replication status", replication_privilege(flavour)))
        if error:
            errors.append(error)

        reading = dict(variables=variables, status=status)
        if str(variables.get("log_bin") or "").upper() in ("ON", "1"):
            sql = binlog_sql(flavour)
            table, refused, error = session.read_unless_denied(sql, sql, now)
            if table is not None and table.rows:
                row = table.dicts()[0]
                reading.update(binlog_file=str(row.get("File") or "") or None,
                               binlog_position=counter(row.get("Position")))
            elif refused:
                denied.append(("the binary log position", binlog_privilege(flavour)))
            errors += [error] if error else []
            replicas, refused_what, error = self.replicas(session, flavour, now)
            reading["replicas"] = replicas
            denied += [refused_what] if refused_what else []
            errors += [error] if error else []
        return ReplicationReading(channels=channels, denied=tuple(denied), errors=tuple(errors), **reading)

    def replicas(self, session: MySQLSession, flavour: Optional[Flavour], now: float):
        """(replicas connected, (what, privilege) when refused, error), asked on a new
        connection and then every ROLE_EVERY seconds (replicas come and go rarely)."""
        conn, read_at, replicas, refused_what, error = self._replicas
        if conn is session.conn and now - read_at < ROLE_EVERY:
            return replicas, refused_what, error
        sql = replicas_sql(flavour)
        table, refused, error = session.read_unless_denied(sql, sql, now)
        replicas = replicas_from(table) if table is not None else ()
        refused_what = ("the replicas connected", replicas_privilege(flavour)) if table is None and refused else None
        self._replicas = (session.conn, now, replicas, refused_what, error)
        return replicas, refused_what, error

    def channels(self, table: Table) -> Tuple[ChannelStatus, ...]:
        """Each channel with its full row and its lag history (kept here, bounded)."""
        made, seen = [], set()
        for channel, row in zip(channels_from(table), table.rows):
            key = (channel.name, channel.source)
            seen.add(key)
            lags = self._lags.setdefault(key, deque(maxlen=LAG_POINTS))
            lags.append(channel.lag)
            made.append(ChannelStatus(channel, tuple((str(name), plain(value)) for name, value in zip(table.columns, row)),
                                      tuple(lags)))
        for gone in set(self._lags) - seen:
            del self._lags[gone]  # a channel removed (RESET SLAVE ALL): its history with it
        return tuple(made)
