"""What proxytop reads from each ProxySQL node over the node's own connection: whether it can
be reached (the Cluster screen), and its pool and command counters (the "all nodes" view of
ConnPool and ComCount). Registered for every node, polled only while a view needs them."""
from __future__ import annotations

import time
from typing import List

from proxytop.collectors.proxysql import ConnectionPool
from proxytop.collectors.proxysql_stats import CommandCounters
from proxytop.core import Collector
from proxytop.polling.nodes import PROXYSQL, Node, NodeSet, NodeSource, WatchedProxySQLSource, node_source_name


def pool_name(label: str) -> str:
    return f"node:{label}.connection_pool"


def commands_name(label: str) -> str:
    return f"node:{label}.commands_counters"


class NodeConnectionPool(ConnectionPool):
    """stats_mysql_connection_pool of one node, over that node's own connection."""

    def __init__(self, label: str):
        self.name = pool_name(label)
        self.source = f"node:{label}"


class NodeCommandCounters(CommandCounters):
    """stats_mysql_commands_counters of one node, over that node's own connection."""

    def __init__(self, label: str):
        self.name = commands_name(label)
        self.source = f"node:{label}"


class NodeReach(Collector):
    """Can proxytop reach this node? A COM_PING on its idle connection, timed (ms). The
    connection itself failing is what the Cluster screen shows as "refused" or "down"."""

    history = 1
    default_interval = 2.0
    min_interval = 1.0
    own_pace = True

    def __init__(self, label: str):
        self.label = label
        self.name = node_source_name(label) + ".reach"
        self.source = node_source_name(label)

    def collect(self, session) -> float:
        started = time.monotonic()
        session.conn.ping(reconnect=False)
        return (time.monotonic() - started) * 1000.0


def reach_name(label: str) -> str:
    return node_source_name(label) + ".reach"


def node_collectors(node: Node) -> List[Collector]:
    """Everything proxytop may read from a node over its own connection (polled only while a
    view needs it)."""
    return [NodeReach(node.label), NodeConnectionPool(node.label), NodeCommandCounters(node.label)]


def attach_nodes(engine, nodes: NodeSet, source: WatchedProxySQLSource) -> None:
    """Register every node's own source and collectors now and as nodes are discovered.
    Adding a source only starts its thread, which stays idle until a view activates it."""

    def register(node: Node) -> None:
        engine.add_source(NodeSource(node))
        for collector in node_collectors(node):
            engine.add_collector(collector)

    source.forget = lambda: engine.forget(engine.collector_names_of(PROXYSQL))
    nodes.on_added(register)
