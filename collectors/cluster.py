"""Collectors for the Cluster screen: ProxySQL Cluster's own view of its peers.

One admin connection shows the whole cluster: the watched node polls every peer itself
(every cluster_check_interval_ms) and keeps the results in these tables, so proxytop needs no
connection of its own to each peer to show their uptime, load and configuration checksums.
All four are cheap (a few rows per peer); the stats user may read the stats_* ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Tuple

from proxytop.core import Table
from proxytop.collectors.proxysql import TableCollector


class ClusterServers(TableCollector):
    """runtime_proxysql_servers: the core nodes this node syncs with (admin users only)."""

    name = "proxysql.cluster_servers"
    table = "runtime_proxysql_servers"
    needs_admin = True
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True
    history = 1


@dataclass(frozen=True)
class PeerReading:
    """An older reading of stats_proxysql_servers_metrics, as much as restarts and rates need:
    per peer (host, port, Uptime_s, Queries, Client_Connections_created), as sent."""

    peers: Tuple[Tuple[Any, Any, Any, Any, Any], ...]


class ClusterMetrics(TableCollector):
    """stats_proxysql_servers_metrics: per peer its response time, Uptime_s, the age of the
    last check, Queries and client connections, as the watched node last saw them.

    A peer's row is refreshed every cluster_check_status_frequency checks (10 s by default),
    so rates come from two refreshes (ΔQueries / ΔUptime_s) and a restart from an Uptime_s
    that went down: the history keeps ten minutes of compact readings for that."""

    name = "proxysql.cluster_metrics"
    table = "stats_proxysql_servers_metrics"
    default_interval = 1.0
    min_interval = 0.5
    history = 600

    def shrink(self, data: Any) -> Any:
        if not isinstance(data, Table):
            return data
        wanted = ("hostname", "port", "Uptime_s", "Queries", "Client_Connections_created")
        if not all(data.has(c) for c in wanted):
            return data
        at = [data.columns.index(c) for c in wanted]
        return PeerReading(tuple(tuple(row[i] for i in at) for row in data.rows))


class ClusterChecksums(TableCollector):
    """stats_proxysql_servers_checksums: per peer and module (mysql_query_rules, ...) the
    configuration checksum, version, epoch, when it changed and diff_check (checks that
    found it different from this node's own)."""

    name = "proxysql.cluster_checksums"
    table = "stats_proxysql_servers_checksums"
    default_interval = 1.0
    min_interval = 0.5
    history = 2


class ClusterClients(TableCollector):
    """stats_proxysql_servers_clients_status: the peers that poll this node, and when they
    last did (satellite nodes too)."""

    name = "proxysql.cluster_clients"
    table = "stats_proxysql_servers_clients_status"
    default_interval = 5.0
    min_interval = 2.0
    own_pace = True
    history = 1
