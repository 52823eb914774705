"""The "all nodes" view of ConnPool and ComCount: every node's rates added up.

Behind a load balancer each ProxySQL node carries part of the traffic; the load a MySQL
server really gets is the sum over the nodes. This view reads stats_mysql_connection_pool or
stats_mysql_commands_counters from *every* node (over each node's own connection; the header
says so, since it multiplies the reads by the number of nodes) and adds the rates per backend
or per command. It is off until asked for (key ``a``).

Rows are computed per node by the screen's own pure functions and merged here: counters and
rates (summable columns) add up; other numbers show the highest node's value (the worst
latency, the fullest pool); text that differs between nodes shows the value that is not
``ONLINE`` (a backend shunned on one node is shunned somewhere).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from proxytop.collectors.nodes import commands_name, pool_name
from proxytop.collectors.proxysql import RuntimeServers
from proxytop.metrics import histogram
from proxytop.metrics.rates import to_number
from proxytop.polling.nodes import node_source_name, nodes_of
from proxytop.screens.table import Column, Row

OPTION = "all_nodes"
SCREENS = ("connpool", "comcount")


_NAMES = {"connpool": pool_name, "comcount": commands_name}


def on(screen) -> bool:
    return bool(screen.options.get(OPTION)) and _mysql_side(screen)


def _mysql_side(screen) -> bool:
    """The nodes' sums are of the MySQL side's tables (a screen without sides is MySQL)."""
    side = getattr(screen, "side", None)
    return side is None or side.key == "mysql"


def toggle(controller) -> str:
    """The ``a`` key: the all-nodes view on or off for the current screen."""
    screen = controller.screen
    if screen.key not in SCREENS:
        return "the all-nodes view is on the ConnPool and ComCount screens"
    nodes = nodes_of(controller.view)
    if nodes is None:
        return "a replay shows the node it recorded"
    if not _mysql_side(screen):
        return "the all-nodes view adds up the MySQL side (m switches sides)"
    if on(screen):
        screen.options.pop(OPTION, None)
        return f"watched node only: {nodes.title()}"
    if len(nodes) < 2:
        return "one ProxySQL node only: give several with -H a,b or use --cluster"
    screen.options[OPTION] = nodes
    return f"all nodes: adding up {len(nodes)} nodes (reads every node)"


def active_collectors(screen, names: List[str]) -> List[str]:
    """The screen's own collectors, or every node's twin of them in the all-nodes view."""
    nodes = screen.options.get(OPTION)
    if not nodes or not _mysql_side(screen):
        return names
    return [_NAMES[screen.key](node.label) for node in nodes.nodes]


def merge(per_node: Sequence[Sequence[Row]], columns: Sequence[Column]) -> List[Row]:
    """Rows of several nodes merged by ``_id``: summable columns added, other numbers the
    highest, differing text the value that is not ONLINE.

    >>> cols = (Column("q", "Q", 5, summable=True), Column("lat", "Lat", 5),
    ...         Column("status", "Status", 8, numeric=False))
    >>> one = [{"_id": "a", "q": 10.0, "lat": 2, "status": "ONLINE"}]
    >>> two = [{"_id": "a", "q": 5.5, "lat": 7, "status": "SHUNNED"}, {"_id": "b", "q": None}]
    >>> merge([one, two], cols)
    [{'_id': 'a', 'q': 15.5, 'lat': 7, 'status': 'SHUNNED', '_nodes': 2}, {'_id': 'b', 'q': None, '_nodes': 1}]
    """
    by_key = {c.key: c for c in columns}
    merged: Dict[object, Row] = {}
    for rows in per_node:
        for row in rows:
            key = row.get("_id")
            into = merged.get(key)
            if into is None:
                merged[key] = dict(row, _nodes=1)
                continue
            into["_nodes"] += 1
            for name, value in row.items():
                if name.startswith("_"):
                    continue
                into[name] = _combine(by_key.get(name), into.get(name), value)
    return list(merged.values())


def _combine(column: Optional[Column], old, new):
    if new is None:
        return old
    if old is None:
        return new
    if column is not None and column.numeric:
        a, b = to_number(old), to_number(new)
        if a is None or b is None:
            return old if a is not None else new
        return a + b if column.summable else max(a, b)
    if old != new and str(old).upper() == "ONLINE":
        return new
    return old


def pool_rows(screen, view, node_pool_rows) -> List[Row]:
    """ConnPool's rows for the whole cluster (configuration columns from the watched node),
    each node's made by ``node_pool_rows`` (ConnPool's own function)."""
    servers = view.latest(RuntimeServers.name)
    per_node = []
    for node in screen.options[OPTION].nodes:
        previous, current = view.pair(pool_name(node.label))
        per_node.append(node_pool_rows(previous, current, servers))
    return merge(per_node, screen.columns)


def command_rows(screen, view, node_command_rows, show_unused: bool = False) -> List[Row]:
    """ComCount's rows for the whole cluster, each node's made by ``node_command_rows``
    (ComCount's own function): counts and rates added; the interval's latency buckets added
    too, so the percentiles are the cluster's; averages weighted by each node's executions."""
    per_node = []
    for node in screen.options[OPTION].nodes:
        previous, current = view.pair(commands_name(node.label))
        per_node.append(node_command_rows(previous, current, show_unused))
    return merge_commands(per_node)


def merge_commands(per_node: Sequence[Sequence[Row]]) -> List[Row]:
    """Command rows of several nodes as one row per command.

    >>> a = [{"_id": "SELECT", "command": "SELECT", "total": 100, "rate": 10.0, "avg_us": 100.0,
    ...       "avg_all_us": 90.0, "_counts": (60, 40), "_delta": (6, 4)}]
    >>> b = [{"_id": "SELECT", "command": "SELECT", "total": 300, "rate": 30.0, "avg_us": 300.0,
    ...       "avg_all_us": 110.0, "_counts": (100, 200), "_delta": (10, 20)}]
    >>> row = merge_commands([a, b])[0]
    >>> row["total"], row["rate"], row["avg_us"], row["avg_all_us"], row["_delta"], row["_nodes"]
    (400, 40.0, 250.0, 105.0, (16, 24), 2)
    """
    by_command: Dict[object, List[Row]] = {}
    for rows in per_node:
        for row in rows:
            by_command.setdefault(row.get("_id"), []).append(row)
    merged: List[Row] = []
    for key, rows in by_command.items():
        rates = [r.get("rate") for r in rows]
        totals = [to_number(r.get("total")) for r in rows]
        out: Row = {
            "_id": key,
            "command": rows[0].get("command"),
            "total": sum(t for t in totals if t is not None) if any(t is not None for t in totals) else None,
            "rate": sum(r for r in rates if r is not None) if any(r is not None for r in rates) else None,
            "share": None,
            "avg_us": _weighted(rows, "avg_us", "rate"),
            "avg_all_us": _weighted(rows, "avg_all_us", "total"),
            "_counts": _add_buckets([r.get("_counts") for r in rows]),
            "_delta": _add_buckets([r.get("_delta") for r in rows]),
            "_nodes": len(rows),
        }
        for name, fraction in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99)):
            out[name] = histogram.percentile(out["_delta"], fraction)
        merged.append(out)
    return merged


def _weighted(rows: Sequence[Row], value_key: str, weight_key: str) -> Optional[float]:
    pairs = [(to_number(r.get(value_key)), to_number(r.get(weight_key))) for r in rows]
    pairs = [(v, w) for v, w in pairs if v is not None and w]
    weight = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / weight if weight else None


def _add_buckets(counts: Sequence[Optional[Sequence[int]]]) -> Optional[tuple]:
    present = [c for c in counts if c is not None]
    if not present:
        return None
    return tuple(sum(values) for values in zip(*present))


def notes(screen, view, table: str) -> list:
    """The line that says this view adds up nodes and reads every one of them, and which
    nodes are missing from the sum."""
    if not on(screen):
        return []
    nodes = screen.options[OPTION]
    missing = []
    for node in nodes.nodes:
        state = view.state(node_source_name(node.label))
        if state is not None and not state.connected and state.error:
            missing.append(f"{nodes.name(node.label)} ({state.error})")
    line = [("ALL NODES ", "warning_bold"),
            (f"sum of {len(nodes) - len(missing)}/{len(nodes)} ProxySQL nodes: reads {table} on every node "
             "(a: watched node only)", "label")]
    lines = [tuple(line)]
    if missing:
        lines.append((("not in the sum: " + ", ".join(missing), "danger"),))
    return lines
