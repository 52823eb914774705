"""Cluster: every ProxySQL node of a ProxySQL Cluster, as the watched node sees them.

One row per node (from runtime_proxysql_servers, stats_proxysql_servers_metrics and
stats_proxysql_servers_clients_status, plus the nodes given with -H), and above the table the
configuration checksums of every module on every node, mismatches highlighted, with a summary
line: "configuration in sync" or "mysql_query_rules differs on node-3 for 4m00s".

Only the watched node's cluster tables are read (plus a COM_PING on each node's own connection
to say whether proxytop can reach it): ProxySQL Cluster already polls every peer. Enter (or
n / N anywhere) watches another node: every screen then shows that node.
"""
from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence, Tuple

from proxytop.collectors.cluster import ClusterChecksums, ClusterClients, ClusterMetrics, ClusterServers
from proxytop.metrics import cluster, units
from proxytop.metrics.rates import to_number
from proxytop.collectors.nodes import reach_name
from proxytop.polling import nodes
from proxytop.screens.base import Cells, DataView, Screen
from proxytop.screens.keys import Binding
from proxytop.screens.table import Column, Row

Segment = Tuple[str, Optional[str]]
CELL_WIDTH = 17  # "E2185D39 v2 \u2191296": checksum, version, climbing diff_check
MODULE_WIDTH = 18


def reach_text(state, reach_ms: Optional[float], now: float) -> Tuple[str, Optional[str]]:
    """Can proxytop reach the node: (text, style) from its connection's state and last ping.

    >>> from proxytop.polling.engine import SourceState
    >>> reach_text(SourceState("n", connected=True, connecting=False), 1.25, 0)
    ('ok 1.25ms', 'good')
    >>> reach_text(SourceState("n", connected=False, connecting=False, error="Access denied for user 'x'"), None, 0)
    ("refused: Access denied for user 'x'", 'danger')
    >>> reach_text(SourceState("n", connected=False, connecting=False, error="connection refused"), None, 0)
    ('down: connection refused', 'danger')
    """
    if state is None:
        return units.MISSING, "dim"
    if state.connected:
        return (f"ok {units.milliseconds(reach_ms)}" if reach_ms is not None else "ok"), "good"
    if state.error:
        refused = "denied" in state.error.lower() or "not a proxysql" in state.error.lower()
        return (f"{'refused' if refused else 'down'}: {state.error}"), "danger"
    return "connecting\u2026", "warning"


def age(seconds) -> str:
    """Whole seconds for ages reported in whole seconds or coarser.

    >>> age(0.0), age(6.99), age(125), age(None)
    ('0s', '7s', '2m05s', '—')
    """
    return units.age(seconds)


def restart_style(row) -> Optional[str]:
    return "danger" if row.get("restarted") else None


def config_style(row) -> Optional[str]:
    text = row.get("config") or ""
    return "danger" if text.startswith("differs") else ("good" if text == "in sync" else None)


def reach_style(row) -> Optional[str]:
    return row.get("_reach_style")


def seen_style(row) -> Optional[str]:
    seen = to_number(row.get("seen_s"))
    return "warning" if seen is not None and seen > 30 else None


def node_rows(servers, latest, samples, found, current_checksums, clients, node_set, reach,
              now_wall: float) -> List[Row]:
    """Pure: the cluster tables (+ the NodeSet and reachability) -> one row per node.

    ``latest``: the newest metrics reading; ``samples``: cluster.peer_samples of the metrics
    history; ``found``: cluster.modules of the checksums; ``reach``: {label: (text, style)}."""
    current = current_checksums
    clock = cluster.server_clock(current) or now_wall
    seen = cluster.clients_seen(clients)
    metrics: Dict[str, dict] = {}
    if latest is not None and getattr(latest, "columns", None):
        metrics = {cluster.label_of(r): r for r in latest.dicts()}
    core: Dict[str, dict] = {}
    if servers is not None and getattr(servers, "columns", None):
        core = {cluster.label_of(r): r for r in servers.dicts()}
    labels: List[str] = list(core) + [l for l in metrics if l not in core]
    given = [n.label for n in node_set.nodes] if node_set is not None else list(reach)
    labels += [l for l in given if l not in labels]
    watched = node_set.watched.label if node_set is not None else None
    rows: List[Row] = []
    for label in labels:
        m = metrics.get(label, {})
        config = core.get(label, {})
        series = samples.get(label, [])
        queries_s, created_s = cluster.peer_rates(series)
        restarted = cluster.restarted(series)
        last_check = to_number(m.get("last_check_ms"))
        uptime = to_number(m.get("Uptime_s"))
        differs = cluster.differs_on(found, label)
        in_checksums = any(label in mod.cells for mod in found)
        seen_at = seen.get(label)
        text, style = reach.get(label, (units.MISSING, "dim"))
        comment = config.get("comment") or m.get("comment") or (node_set.comments.get(label) if node_set else None)
        rows.append({
            "_id": label,
            "_reach_style": style,
            "_style": "header" if label == watched else None,
            "watched": "\u25b6" if label == watched else "",
            "node": label,
            "name": comment or "",
            "role": "core" if (label in core or label in metrics) else "given",
            "response_ms": to_number(m.get("response_time_ms")),
            "check_age_s": last_check / 1000.0 if last_check is not None else None,
            "uptime_s": uptime,
            "restarted": f"{units.duration(uptime)} ago" if restarted and uptime is not None else "",
            "queries_s": queries_s,
            "conn": to_number(m.get("Client_Connections_connected")),
            "conn_created_s": created_s,
            "reach": text,
            "seen_s": max(0.0, clock - seen_at) if seen_at is not None else None,
            "config": ("differs: " + ", ".join(differs)) if differs else ("in sync" if in_checksums else ""),
        })
    return rows


def matrix_lines(found: Sequence[cluster.Module], order: Sequence[str], name_of) -> List[Sequence[Segment]]:
    """Modules against nodes: each cell the short checksum and version, a differing one
    highlighted, diff_check shown (with an arrow) where it climbs; the explanation of the
    arrow below them when one shows."""
    if not found:
        return []
    head: List[Segment] = [(f"{'module':<{MODULE_WIDTH}}", "label")]
    for label in order:
        head.append((f"{name_of(label)[:CELL_WIDTH - 1]:<{CELL_WIDTH}}", "label"))
    lines: List[Sequence[Segment]] = [Cells(head)]
    for module in found:
        line: List[Segment] = [(f"{module.name[:MODULE_WIDTH - 1]:<{MODULE_WIDTH}}", "danger" if module.differing else None)]
        for label in order:
            cell = module.cells.get(label)
            if cell is None:
                line.append((f"{units.MISSING:<{CELL_WIDTH}}", "dim"))
                continue
            text = cell.short
            if cell.climbing and cell.diff_check:
                text += f" \u2191{units.number(cell.diff_check)}"
            style = "danger" if label in module.differing else ("dim" if not module.differing else "good")
            line.append((f"{text[:CELL_WIDTH - 1]:<{CELL_WIDTH}}", style))
        lines.append(Cells(line))
    if any(cell.climbing and cell.diff_check for module in found for cell in module.cells.values()):
        lines.append([("\u2191N: diff_check, how many checks in a row this node's checksum has differed from "
                       "the watched node's (ProxySQL syncs after cluster_<module>_diffs_before_sync)", "dim")])
    return lines


class ClusterScreen(Screen):
    key = "cluster"
    title = "Cluster"
    short_title = "Clu"
    default_sort = ("node", False)
    tiebreak = ("node",)
    columns = (
        Column("watched", "", 1, "<", numeric=False, priority=0),
        Column("node", "Node", 21, "<", numeric=False, priority=0, help="admin interface host:port"),
        Column("name", "Name", 10, "<", numeric=False, priority=1, help="comment in proxysql_servers"),
        Column("response_ms", "Resp", 7, unit="ms", fmt=units.milliseconds, priority=4,
               help="response_time_ms: how fast the node answered the watched node's last check"),
        Column("check_age_s", "Checked", 7, unit="s", fmt=age, priority=5,
               help="last_check_ms: how long ago the watched node last checked it"),
        Column("uptime_s", "Uptime", 7, unit="s", fmt=units.duration, style=restart_style, priority=1,
               help="Uptime_s as last reported to the watched node"),
        Column("restarted", "Restarted", 10, "<", numeric=False, style=restart_style, priority=2,
               help="Uptime_s went down within the last 10 minutes: the node restarted"),
        Column("queries_s", "Queries/s", 9, fmt=units.number, summable=True, priority=1,
               help="\u0394Queries / \u0394Uptime_s between the node's last two reports (every ~10 s)"),
        Column("conn", "Conn", 6, fmt=units.number, summable=True, priority=2,
               help="Client_Connections_connected"),
        Column("conn_created_s", "Conn/s", 7, fmt=units.number, summable=True, priority=3,
               help="client connections created per second (\u0394Client_Connections_created / \u0394Uptime_s)"),
        Column("reach", "proxytop", 12, "<", numeric=False, style=reach_style, priority=2,
               help="can proxytop itself connect to the node (ping time, or why not)"),
        Column("seen_s", "Polls me", 8, unit="s", fmt=age, style=seen_style, priority=6,
               help="seconds since the node last polled the watched node (stats_proxysql_servers_clients_status)"),
        Column("config", "Config", 16, "<", numeric=False, style=config_style, priority=1, flexible=True,
               help="in sync, or the modules whose checksum differs from most nodes'"),
    )
    bindings = (
        Binding(("ENTER",), "watch", "watch the selected node: every screen shows it", "Enter watch"),
    )

    def __init__(self, config=None):
        super().__init__(config)
        self._engine = None
        self._learnt = None
        self._notes_of = None
        self._peers = cluster.PeerTracker()
        self._modules_of: Tuple = (None, None, [])
        self._restarts: List[Tuple[str, str]] = []

    def collectors(self):
        return [ClusterServers(), ClusterMetrics(), ClusterChecksums(), ClusterClients()]

    def attach(self, engine) -> None:
        self._engine = engine

    def _nodes(self) -> Optional[nodes.NodeSet]:
        return getattr(self._engine.source(nodes.PROXYSQL), "nodes", None) if self._engine is not None else None

    def active_collectors(self) -> List[str]:
        names = super().active_collectors()
        node_set = self._nodes()
        if node_set is None:
            return names
        self._learn(node_set)
        return names + [reach_name(n.label) for n in node_set.nodes]

    def _learn(self, node_set) -> None:
        """Comments (and with --cluster, nodes added later) from the cluster tables. No I/O:
        a new node's source only starts its thread."""
        engine = self._engine
        snapshots = (engine.latest(ClusterServers.name), engine.latest(ClusterMetrics.name))
        if snapshots == self._learnt:
            return
        self._learnt = snapshots
        servers, metrics = snapshots
        if metrics is not None:
            node_set.learn(metrics.data if hasattr(metrics.data, "columns") else None)
        if servers is not None:
            node_set.learn(servers.data)

    def _reach(self, view: DataView, node_set) -> Dict[str, Tuple[str, Optional[str]]]:
        if node_set is None:  # a replay: the node it recorded, as it was then
            source = view.source(nodes.PROXYSQL)
            endpoint = getattr(source, "endpoint", None)
            label = getattr(endpoint, "label", None)
            return {label: reach_text(view.state(nodes.PROXYSQL), None, view.now())} if label else {}
        now = view.now()
        reach = {}
        for node in node_set.nodes:
            snapshot = view.latest(reach_name(node.label))
            reach[node.label] = reach_text(view.state(nodes.node_source_name(node.label)),
                                           snapshot.data if snapshot is not None else None, now)
        return reach

    def rows_token(self, view: DataView):
        node_set = nodes.nodes_of(view)
        if node_set is None:
            return None
        states = tuple((s.connected, s.error) if s is not None else None
                       for s in (view.state(nodes.node_source_name(n.label)) for n in node_set.nodes))
        return (node_set.watched_index, len(node_set), states)

    def rows(self, view: DataView) -> List[Row]:
        node_set = nodes.nodes_of(view)
        servers = view.latest(ClusterServers.name)
        clients = view.latest(ClusterClients.name)
        history = view.history(ClusterMetrics.name)
        pair = view.pair(ClusterChecksums.name)
        rows = node_rows(servers.data if servers is not None else None, history[-1].data if history else None,
                         self._peers.update(history), self._modules(pair),
                         pair[1].data if pair[1] is not None else None, clients.data if clients is not None else None, node_set,
                         self._reach(view, node_set), time.time())
        # for the summary line (notes are drawn right after the rows, from the same readings)
        self._restarts = [(r["name"] or r["node"], r["restarted"]) for r in rows if r["restarted"]]
        return rows

    def notes(self, view: DataView):
        pair = view.pair(ClusterChecksums.name)
        metrics = view.latest(ClusterMetrics.name)
        servers = view.latest(ClusterServers.name)
        node_set = nodes.nodes_of(view)
        # Drawn ten times a second; computed once per reading (snapshots compared by identity).
        key = (pair[0], pair[1], metrics, servers, node_set.watched_index if node_set else None, len(node_set or ()))
        cached = self._notes_of
        if cached is None or any(a is not b for a, b in zip(cached[0][:4], key[:4])) or cached[0][4:] != key[4:]:
            self._notes_of = (key, self._summary(view, pair, metrics, servers, node_set))
        return self._notes_of[1]

    def _summary(self, view, pair, metrics, servers, node_set):
        checksums = pair[1].data if pair[1] is not None else None
        metrics_data = metrics.data if metrics is not None else None
        servers_data = servers.data if servers is not None else None
        comments = {}
        if metrics_data is not None and getattr(metrics_data, "columns", None) and metrics_data.has("comment"):
            comments = {cluster.label_of(r): r.get("comment") for r in metrics_data.dicts()}

        def name_of(label: str) -> str:  # "node-3": its comment in proxysql_servers, else its address
            return comments.get(label) or (node_set.name(label) if node_set is not None else label)

        endpoint = getattr(view.source(nodes.PROXYSQL), "endpoint", None)
        watched = node_set.watched.label if node_set is not None else getattr(endpoint, "label", "ProxySQL")
        empty = lambda t: t is not None and not getattr(t, "rows", ())  # noqa: E731 - read, answered, no rows
        if metrics is not None and empty(metrics_data) and (servers is None or empty(servers_data) or servers_data is None):
            return [((f"No ProxySQL Cluster on {watched}: its proxysql_servers table is empty "
                      "(rows below: the nodes given with -H).", "warning"),)]
        if checksums is None and node_set is None and metrics is None:
            return [(("This recording has no cluster tables (stats_proxysql_servers_*).", "warning"),)]
        if checksums is None:
            return [(("waiting for the cluster tables\u2026", "dim"),)]
        found = self._modules(pair)
        text, differs = cluster.drift_summary(found, name_of)
        count = len({label for m in found for label in m.cells})
        first: List[Segment] = [(f"{count} nodes as {name_of(watched)} sees them  ", "label"),
                                (text, "danger" if differs else "good")]
        for name, ago in self._restarts:
            first.append((f"  {name} restarted {ago}", "danger"))
        # the nodes in the node list's order (-H, then discovered), then any other peer
        seen = {label for module in found for label in module.cells}
        order = [n.label for n in node_set.nodes if n.label in seen] if node_set is not None else []
        order += sorted(seen - set(order))
        lines = [tuple(first)] + matrix_lines(found, order, name_of)
        return lines

    def _modules(self, pair) -> List[cluster.Module]:
        """cluster.modules of the latest two checksum readings, once per reading."""
        previous, current = pair
        if self._modules_of[0] is not previous or self._modules_of[1] is not current:
            found = cluster.modules(previous.data if previous is not None else None,
                                    current.data if current is not None else None)
            self._modules_of = (previous, current, found)
        return self._modules_of[2]

    def action_watch(self, controller) -> None:
        row = controller.selected_row()
        node_set = nodes.nodes_of(controller.view)
        if row is None:
            controller.say("no node selected")
            return
        if node_set is None:  # a replay: its readings are the recorded node's, no other
            controller.say(f"{row.get('name') or row['_id']} not watched: a replay shows the node it recorded")
            return
        index = node_set.index_of(row["_id"])
        if index is None:
            controller.say(f"{row.get('name') or row['_id']} was not given with -H: --cluster watches every node")
            return
        controller.say(nodes.switch(controller, index))


SCREEN = ClusterScreen
