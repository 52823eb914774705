"""Collectors for the Errors screen and the health view: backend errors, frontend users, idle
backend connections, replication hostgroups.

Table and column names are declared once here (the PostgreSQL twins, stats_pgsql_*, differ in a
few names). Never read stats_mysql_errors_reset: it zeroes the counters for everybody.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from proxytop.core import Table
from proxytop.collectors.proxysql import TableCollector
from proxytop.collectors.sides import tables_on_side
from proxytop.metrics.sides import PGSQL


@dataclass(frozen=True)
class ErrorsTable:
    """stats_mysql_errors: one row per (hostgroup, server, user, client, schema, errno)."""

    table: str = "stats_mysql_errors"
    hostgroup: str = "hostgroup"
    host: str = "hostname"
    port: str = "port"
    user: str = "username"
    client: str = "client_address"
    schema: str = "schemaname"
    errno: str = "errno"
    count: str = "count_star"
    first_seen: str = "first_seen"
    last_seen: str = "last_seen"
    last_error: str = "last_error"


@dataclass(frozen=True)
class UsersTable:
    table: str = "stats_mysql_users"
    user: str = "username"
    connections: str = "frontend_connections"
    limit: str = "frontend_max_connections"


@dataclass(frozen=True)
class FreeConnectionsTable:
    table: str = "stats_mysql_free_connections"
    hostgroup: str = "hostgroup"
    host: str = "srv_host"
    port: str = "srv_port"
    idle_ms: str = "idle_ms"
    user: str = "user"


MYSQL_ERRORS = ErrorsTable()
MYSQL_USERS = UsersTable()
MYSQL_FREE = FreeConnectionsTable()
# stats_pgsql_errors: database for schemaname, sqlstate (text: '08006') for errno
PGSQL_ERRORS = tables_on_side(MYSQL_ERRORS, PGSQL)


class BackendErrors(TableCollector):
    """stats_mysql_errors: cheap (an aggregate map), readable by the stats user."""

    name = "proxysql.errors"
    table = MYSQL_ERRORS.table
    default_interval = 1.0
    min_interval = 0.5


class FrontendUsers(TableCollector):
    """stats_mysql_users: frontend connections per user against its max_connections."""

    name = "proxysql.users"
    table = MYSQL_USERS.table
    default_interval = 2.0
    min_interval = 1.0
    own_pace = True


class FreeConnections(TableCollector):
    """stats_mysql_free_connections: the idle pooled connections. It takes the hostgroup
    manager's lock, so it is read only while a backend's health view is open, every 2 s."""

    name = "proxysql.free_connections"
    table = MYSQL_FREE.table
    default_interval = 2.0
    min_interval = 2.0
    own_pace = True

    def collect(self, session) -> Optional[Table]:
        # A small projection: statistics and mysql_info are JSON documents of ~1 KB per connection.
        f = MYSQL_FREE
        # self.table: the PostgreSQL twin reads stats_pgsql_free_connections (same columns)
        return session.query(f"select {f.hostgroup}, {f.host}, {f.port}, {f.user}, {f.idle_ms} from {self.table}")


class ReplicationHostgroups(TableCollector):
    """runtime_mysql_replication_hostgroups: writer/reader pairs (admin users only)."""

    name = "proxysql.replication_hostgroups"
    table = "runtime_mysql_replication_hostgroups"
    needs_admin = True
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True
    history = 1

    def collect(self, session) -> Optional[Table]:
        try:
            return super().collect(session)
        except Exception as exc:
            if "no such table" in str(exc).lower():
                return None  # a ProxySQL without replication hostgroups: nothing to show
            raise
