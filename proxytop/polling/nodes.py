"""Several ProxySQL admin endpoints: the set of nodes, the one being watched, and switching.

proxytop watches one node at a time: every screen's tables are read from the *watched* node
only, so watching a cluster of N nodes puts no more load on ProxySQL than watching one. The
other nodes get one idle admin connection each, opened only while a view needs them (the
Cluster screen pings them to say whether proxytop can reach them; the "all nodes" view of
ConnPool and ComCount reads their pool and command counters).

The node list comes from ``-H`` (repeated or comma-separated) and, with ``--cluster``, from
the first node's own view of the cluster (runtime_proxysql_servers): ProxySQL Cluster already
knows every peer, so no home-made discovery is needed.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from proxytop.core import Table
from proxytop.polling.connection import AdminSession, Endpoint, ProxySQLSource, close_quietly

log = logging.getLogger(__name__)

PROXYSQL = "proxysql"
NODE_SOURCE_PREFIX = "node:"


def node_source_name(label: str) -> str:
    """The engine source of a node's own connection (not the watched one).

    >>> node_source_name("10.0.0.2:6032")
    'node:10.0.0.2:6032'
    """
    return NODE_SOURCE_PREFIX + label


@dataclass(frozen=True)
class Node:
    """One ProxySQL admin endpoint proxytop knows."""

    endpoint: Endpoint
    given: bool = True  # given on the command line (else discovered from the cluster tables)

    @property
    def label(self) -> str:
        return self.endpoint.label


def address_label(host: str, port) -> str:
    """The label a cluster table's (hostname, port) has as a node (as Endpoint.label).

    >>> address_label("10.0.0.2", "6032")
    '10.0.0.2:6032'
    """
    return f"{host}:{port}"


class NodeSet:
    """The nodes, in order, and which one is watched. The UI thread changes the watched node;
    discovery may add nodes from a worker thread, hence the lock."""

    def __init__(self, endpoints: Sequence[Endpoint], discover: bool = False):
        if not endpoints:
            raise ValueError("at least one endpoint")
        self._lock = threading.Lock()
        self._nodes: List[Node] = []
        for endpoint in endpoints:
            if all(n.label != endpoint.label for n in self._nodes):
                self._nodes.append(Node(endpoint))
        self._watched = 0
        self.discover = discover
        self.comments: Dict[str, str] = {}  # label -> comment in proxysql_servers
        self._listeners: List[Callable[[Node], None]] = []

    # ----- reading -----------------------------------------------------------------------------
    @property
    def nodes(self) -> Tuple[Node, ...]:
        with self._lock:
            return tuple(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    @property
    def watched(self) -> Node:
        with self._lock:
            return self._nodes[self._watched]

    @property
    def watched_index(self) -> int:
        return self._watched

    def index_of(self, label: str) -> Optional[int]:
        with self._lock:
            for i, node in enumerate(self._nodes):
                if node.label == label:
                    return i
        return None

    def name(self, label: str) -> str:
        """A node's comment (its name in proxysql_servers), else its address."""
        return self.comments.get(label) or label

    def title(self) -> str:
        """The header's name of the watched node: its address alone when it is the only one,
        else "node 2/3 10.0.0.2:6032 node-2"."""
        with self._lock:
            node, index, count = self._nodes[self._watched], self._watched, len(self._nodes)
        comment = self.comments.get(node.label)
        if count == 1 and not self.discover:
            return node.label
        return f"node {index + 1}/{count} {node.label}" + (f" {comment}" if comment else "")

    @property
    def several(self) -> bool:
        return len(self._nodes) > 1 or self.discover

    # ----- changing ------------------------------------------------------------------------------
    def watch(self, index: int) -> Node:
        with self._lock:
            self._watched = index % len(self._nodes)
            return self._nodes[self._watched]

    def step(self, delta: int) -> Node:
        return self.watch(self._watched + delta)

    def on_added(self, listener: Callable[[Node], None]) -> None:
        """``listener(node)`` is called for every node known now and added later."""
        self._listeners.append(listener)
        for node in self.nodes:
            listener(node)

    def learn(self, table: Optional[Table]) -> List[Node]:
        """Comments (and, with discovery on, new nodes) from a table with hostname, port and
        comment columns: runtime_proxysql_servers or stats_proxysql_servers_metrics. New
        nodes get the credentials of the first one. Returns the nodes added."""
        if table is None or not (table.has("hostname") and table.has("port")):
            return []
        added: List[Node] = []
        template = self._nodes[0].endpoint
        with self._lock:
            known = {n.label for n in self._nodes}
            for row in table.dicts():
                label = address_label(row.get("hostname"), row.get("port"))
                if row.get("comment"):
                    self.comments[label] = str(row.get("comment"))
                if self.discover and label not in known:
                    try:
                        port = int(row.get("port"))
                    except (TypeError, ValueError):
                        continue
                    node = Node(replace(template, host=str(row.get("hostname")), port=port, socket=None),
                                given=False)
                    self._nodes.append(node)
                    known.add(label)
                    added.append(node)
        for node in added:
            log.info("discovered ProxySQL node %s", node.label)
            for listener in list(self._listeners):
                listener(node)
        return added


# ----- the watched node's connection -------------------------------------------------------------

class WatchedSession:
    """The handle every ProxySQL collector gets: the watched node's AdminSession, which is
    replaced (on the source's worker thread) when another node is watched."""

    def __init__(self, session: AdminSession, node: Node):
        self.session = session
        self.node = node

    def __getattr__(self, name):
        # query, execute, is_admin, tables, version, conn... of the current session
        return getattr(self.__dict__["session"], name)


class WatchedProxySQLSource(ProxySQLSource):
    """The one "proxysql" source of the screens, connected to the watched node.

    Switching node runs :meth:`follow` on this source's worker (as a task): the readings of
    the previous node are forgotten first (a rate across two nodes would be meaningless),
    then the connection is replaced. If the new node can't be reached, the worker's usual
    reconnect-with-backoff takes over and the header says why.
    """

    name = PROXYSQL

    def __init__(self, nodes: NodeSet):
        super().__init__(nodes.watched.endpoint)  # endpoint and description follow the watched node
        self._nodes = nodes  # private: a recording keeps the public attributes only
        self.forget: Callable[[], None] = lambda: None  # set by attach_nodes: drops old readings
        self._last_node: Optional[str] = None

    @property
    def nodes(self) -> NodeSet:
        return self._nodes

    def watched_title(self) -> str:
        return self.nodes.title()

    def _arrive(self, node: Node) -> None:
        if self._last_node is not None and self._last_node != node.label:
            self.forget()
        self._last_node = node.label
        self.endpoint = node.endpoint
        self.description = f"ProxySQL {node.label}"

    def connect(self) -> WatchedSession:
        node = self.nodes.watched
        self._arrive(node)
        session = self.open(node.endpoint)
        self.opened(session)
        log.info("connected to %s as %s, version %s", node.label, node.endpoint.user, session.version_text)
        self._learn(session)
        return WatchedSession(session, node)

    def _learn(self, session: AdminSession) -> None:
        """Several nodes: their names (and with --cluster, the nodes themselves) from the
        peers this node knows; one cheap query per connection."""
        if self.nodes.several:
            self.nodes.learn(discovery_table(session))

    def follow(self, handle: WatchedSession) -> None:
        """A task on this source's worker: move the handle to the watched node."""
        node = self.nodes.watched
        if handle.node.label == node.label:
            return
        self._arrive(node)
        close_quietly(handle.session.conn)  # the old node may be gone already
        handle.node = node
        handle.session = self.open(node.endpoint)  # a failure is a lost connection: retried
        self.opened(handle.session)
        self._learn(handle.session)
        log.info("now watching %s", node.label)


def discovery_table(session: AdminSession) -> Optional[Table]:
    """The peers as this node knows them: runtime_proxysql_servers for an admin user, the
    cluster metrics (which the stats user may read) otherwise."""
    try:
        if session.is_admin:
            return session.query("select * from runtime_proxysql_servers")
        if session.has_table("stats_proxysql_servers_metrics") or not session.tables:
            return session.query("select * from stats_proxysql_servers_metrics")
    except Exception as exc:  # no cluster tables (an old ProxySQL): nothing to discover
        log.info("cluster discovery failed: %s", exc)
    return None


# ----- the other nodes' own connections ------------------------------------------------------------

class NodeSource(ProxySQLSource):
    """A node's own admin connection (for the reachability check and the "all nodes" view)."""

    def __init__(self, node: Node):
        super().__init__(node.endpoint)
        self.name = node_source_name(node.label)
        self.label = node.label


def switch(controller, index: int) -> Optional[str]:
    """Watch node ``index``: every screen shows it from now on. Returns what to tell the user."""
    source = controller.engine.source(PROXYSQL)
    nodes = getattr(source, "nodes", None)
    if nodes is None:
        return "a replay shows the node it recorded"
    if len(nodes) < 2:
        return "one ProxySQL node only: give several with -H a,b or use --cluster"
    nodes.watch(index)
    # The previous node's readings go now (the worker forgets them again when it moves, in
    # case a reading was in flight): no screen shows them under the new node's name.
    source.forget()
    controller.engine.submit(PROXYSQL, source.follow, lambda error: None)
    controller.forget_rows()
    return f"watching {nodes.title()}"


def step(controller, delta: int) -> Optional[str]:
    source = controller.engine.source(PROXYSQL)
    nodes = getattr(source, "nodes", None)
    if nodes is None or len(nodes) < 2:
        return switch(controller, 0)
    return switch(controller, nodes.watched_index + delta)


def nodes_of(view) -> Optional[NodeSet]:
    """The NodeSet behind a DataView (None in a replay)."""
    return getattr(view.source(PROXYSQL), "nodes", None)


def make_source(config) -> Tuple[WatchedProxySQLSource, NodeSet]:
    endpoints = tuple(getattr(config, "endpoints", ()) or ()) or (config.endpoint,)
    nodes = NodeSet(endpoints, discover=bool(getattr(config, "cluster", False)))
    return WatchedProxySQLSource(nodes), nodes

