"""The MySQL servers proxytop watches (its fleet): those given with --mysql / --mysql-socket
and those ProxySQL's runtime_mysql_servers lists, each with its own source and collectors
registered with the engine, and how often a large fleet is read. The screens of the MySQL
servers (Servers, Sessions, Locks, Statements, Status, Commands, Replication, Galera, InnoDB,
IOstat) share one fleet; the InnoDB screen registers it.
"""
from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, replace
from typing import Dict, List, Optional

from proxytop.collectors.innodb import (DISCOVERY, DiscoveredServer, Discovery, MySQLDiscovery, MySQLSource,
                                        server_collectors, server_label, source_name)
from proxytop.collectors.mysql_locks import alarm_pace, lock_collectors
from proxytop.collectors.changes import MySQLVariables, variables_name
from proxytop.collectors.galera import GaleraStatus
from proxytop.collectors.mysql_server import ServerStatus, StatusVariables
from proxytop.collectors.mysql_sessions import Sessions
from proxytop.collectors.mysql_space import ServerSpace, space_name
from proxytop.collectors.mysql_statements import MySQLStatements, statements_name
from proxytop.collectors.replication import ReplicationStatus
from proxytop.config.endpoints import DEFAULT_TIMEOUT
from proxytop.config.mysql_options import DEFAULT_PORT, Credentials, login_name, resolve_credentials
from proxytop.errors import OptionError
from proxytop.polling.connection import Endpoint


def fleet_collectors(endpoint: Endpoint):
    """Every collector of one server: its InnoDB readings, its own state (Servers), its
    sessions (Sessions), its locks (Locks, the header's lock-wait alarm), its statement digest
    (Statements), its whole global status (Status, Commands), its replication (Replication) and
    its wsrep state (Galera), what it says of its space (IOstat's space view) and its global
    variables (Events, every 30 s)."""
    return (server_collectors(endpoint) + [ServerStatus(endpoint), Sessions(endpoint)] + lock_collectors(endpoint)
            + [MySQLStatements(endpoint), StatusVariables(endpoint), ReplicationStatus(endpoint),
               GaleraStatus(endpoint), ServerSpace(endpoint), MySQLVariables(endpoint)])


@dataclass
class Server:
    """One watched server: where it is, why it is watched, and its engine names."""

    key: str
    endpoint: Endpoint
    explicit: bool = False
    discovered: Optional[DiscoveredServer] = None
    monitor_user: bool = False  # read with ProxySQL's monitor credentials
    listed: bool = True  # still in runtime_mysql_servers (or given on the command line)

    def __post_init__(self) -> None:
        # a new endpoint for the same key changes only the credentials, never these names
        self.source = source_name(self.endpoint)
        self.status_name = f"innodb.status.{self.key}"
        self.vars_name = f"innodb.vars.{self.key}"
        self.engine_name = f"innodb.engine.{self.key}"
        self.names = (self.status_name, self.vars_name, self.engine_name)  # the InnoDB screen's
        self.server_name = f"mysql.server.{self.key}"  # the Servers screen's
        self.sessions_name = f"mysql.sessions.{self.key}"  # the Sessions screen's
        self.global_status_name = f"mysql.global_status.{self.key}"  # the Status and Commands screens'
        self.statements_name = statements_name(self.key)  # the Statements screen's
        self.locks_name = f"mysql.locks.{self.key}"  # the Locks screen's
        self.mdl_name = f"mysql.mdl.{self.key}"
        self.deadlock_name = f"mysql.deadlock.{self.key}"
        self.lockalarm_name = f"mysql.lockalarm.{self.key}"  # the header's lock-wait alarm
        self.galera_name = f"mysql.galera.{self.key}"  # the Galera screen's
        self.replication_name = f"mysql.replication.{self.key}"  # the Replication screen's
        self.space_name = space_name(self.key)  # IOstat's space view: binary logs, the largest table
        self.variables_name = variables_name(self.key)  # the Events screen's watch

    @property
    def proxysql_label(self) -> str:
        """'10,20 ONLINE' (hostgroups, then the distinct statuses); '' for a server ProxySQL
        does not list."""
        if not self.discovered:
            return ""
        hostgroups = ",".join(str(h) for h in self.discovered.hostgroups)
        return f"{hostgroups} {','.join(dict.fromkeys(self.discovered.statuses))}"


def fleet_min_interval(servers: int) -> float:
    """The shortest interval for a fleet of servers. Each server's reading costs about 0.4 ms of
    CPU (its statement decoded, its snapshots kept, its row assessed): past 50 servers the
    interval grows with the fleet, so reading it stays within a few hundredths of a core and the
    keys keep answering (500 servers: every 5 s).

    >>> fleet_min_interval(1), fleet_min_interval(50), fleet_min_interval(100), fleet_min_interval(500)
    (0.5, 0.5, 1.0, 5.0)
    """
    return max(0.5, servers / 100.0)


class Fleet:
    """The watched servers by key, and their sources and collectors in the engine. Adding a
    source only starts its thread, which connects on its own: nothing here does I/O."""

    def __init__(self, credentials: Credentials, timeout: float, discover: bool = True):
        self.credentials = credentials
        self.timeout = timeout
        self.discover = discover
        self.servers: Dict[str, Server] = {}
        self._engine = None
        self._discovery_seen = None

    @classmethod
    def from_config(cls, config, prompt=getpass.getpass) -> "Fleet":
        """The fleet the options describe, with the MySQL credentials resolved (a password
        prompted for when the options ask for one)."""
        args = getattr(config, "args", None) if config is not None else None
        endpoint = getattr(config, "endpoint", None)
        try:
            credentials = resolve_credentials(args, os.environ, prompt)
        except (KeyboardInterrupt, EOFError):
            raise SystemExit(130) from None
        except OptionError:
            # Only a replay gets here (live options were checked when parsed): it connects
            # to no MySQL server, so the login path or certificate it names doesn't matter.
            credentials = Credentials(user=login_name())
        fleet = cls.from_options(args, credentials, getattr(endpoint, "timeout", DEFAULT_TIMEOUT))
        fleet.discover = fleet.discover and getattr(config, "proxysql", True)  # no ProxySQL: none to ask
        return fleet

    @classmethod
    def from_options(cls, args, credentials: Credentials, timeout: float) -> "Fleet":
        """The servers named by --mysql and --mysql-socket; discovery unless --no-discover."""
        fleet = cls(credentials, timeout, discover=not getattr(args, "no_discover", False))
        for host, port in (getattr(args, "mysql", None) or []):
            fleet.add_explicit(Endpoint(host=host, port=port, socket=None, **fleet.auth()))
        for path in (getattr(args, "mysql_socket", None) or []):
            fleet.add_explicit(Endpoint(host="localhost", port=DEFAULT_PORT, socket=path, **fleet.auth()))
        return fleet

    def auth(self, user: Optional[str] = None, password: Optional[str] = None) -> dict:
        return dict(user=user if user is not None else self.credentials.user,
                    password=password if password is not None else self.credentials.password,
                    timeout=self.timeout, tls=self.credentials.tls)

    def add_explicit(self, endpoint: Endpoint) -> None:
        key = server_label(endpoint)
        if key not in self.servers:
            self.servers[key] = Server(key, endpoint, explicit=True)

    def watch(self, endpoint: Endpoint) -> None:
        """Watch ``endpoint`` from now on as if it had been given with --mysql (the address
        given for ProxySQL turned out to be a MySQL server): no ProxySQL to discover through.
        No I/O: its source's thread connects on its own."""
        self.discover = False
        key = server_label(endpoint)
        if key in self.servers:
            return
        self.add_explicit(endpoint)
        if self._engine is not None:
            self._engine.add_source(MySQLSource(endpoint))
            for collector in fleet_collectors(endpoint):
                self._engine.add_collector(collector)
            self._pace()

    def listed(self) -> List[Server]:
        return [server for server in self.servers.values() if server.listed]

    def sources(self):
        return [MySQLSource(s.endpoint) for s in self.servers.values()]

    def collectors(self):
        made = [MySQLDiscovery(monitor_credentials=not self.credentials.given)] if self.discover else []
        for server in self.servers.values():
            made += fleet_collectors(server.endpoint)
        return made

    def attach(self, engine) -> None:
        self._engine = engine
        self._pace()

    def active_collectors(self) -> List[str]:
        self.sync_discovered()
        names = [DISCOVERY] if self.discover else []
        for server in self.listed():
            names += server.names
        return names

    def _pace(self) -> None:
        """A large fleet is read less often (see fleet_min_interval)."""
        listed = self.listed()
        floor = fleet_min_interval(len(listed))
        for server in listed:
            for name in (server.status_name, server.engine_name, server.server_name, server.galera_name,
                         server.replication_name):
                collector = self._engine.collector(name)
                if collector is not None:
                    collector.min_interval = max(type(collector).min_interval, floor)
            alarm = self._engine.collector(server.lockalarm_name)
            if alarm is not None:
                alarm.min_interval = alarm.default_interval = alarm_pace(len(listed))

    def sync_discovered(self) -> None:
        """Register newly discovered backends with the engine. No I/O: adding a source only
        starts its thread, which connects on its own."""
        engine = self._engine
        if engine is None or not self.discover:
            return
        snapshot = engine.latest(DISCOVERY)
        if snapshot is None or snapshot is self._discovery_seen:
            return
        self._discovery_seen = snapshot
        discovery = snapshot.data
        if not isinstance(discovery, Discovery) or not discovery.admin:
            return
        use_monitor = not self.credentials.given and discovery.monitor_user is not None
        listed = set()
        for found in discovery.servers:
            key = found.label
            listed.add(key)
            server = self.servers.get(key)
            if server is None:
                auth = self.auth(discovery.monitor_user, discovery.monitor_password or "") if use_monitor \
                    else self.auth()
                server = Server(key, Endpoint(host=found.host, port=found.port, socket=None, **auth),
                                discovered=found, monitor_user=use_monitor)
                self.servers[key] = server
                engine.add_source(MySQLSource(server.endpoint, description=f"MySQL {key} (from ProxySQL)"))
                for collector in fleet_collectors(server.endpoint):
                    engine.add_collector(collector)
            else:
                server.discovered = found
                server.listed = True
                if server.monitor_user and use_monitor and (
                        server.endpoint.user != discovery.monitor_user
                        or server.endpoint.password != (discovery.monitor_password or "")):
                    # ProxySQL's monitor credentials changed: the next connection uses the new ones.
                    server.endpoint = replace(server.endpoint, user=discovery.monitor_user,
                                              password=discovery.monitor_password or "")
                    source = engine.source(server.source)
                    if isinstance(source, MySQLSource):
                        source.endpoint = server.endpoint
        for key, server in self.servers.items():
            if not server.explicit and key not in listed:
                server.listed = False  # gone from runtime_mysql_servers: no longer polled
        self._pace()
