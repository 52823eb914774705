"""ProxySQL Cluster arithmetic: configuration drift, restarts and per-peer rates. Pure.

Inputs are the watched node's cluster tables (see collectors.cluster), as text the way
ProxySQL sends them; outputs are plain values the Cluster screen lays out.

Drift: every node reports, for every peer and module (mysql_query_rules, mysql_servers, ...),
the peer's checksum. The checksum most nodes hold is the reference; a node holding another one
"differs". With no majority (two nodes, each its own), every node differs. How long: the
watched node's clock, from the differing checksums' ``changed_at`` to the newest
``updated_at`` (both from ProxySQL, so proxytop's own clock doesn't matter).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from proxytop.metrics import units
from proxytop.metrics.rates import to_number

Sample = Tuple[float, float, float]  # (Uptime_s, Queries, Client_Connections_created)
EMPTY_CHECKSUMS = ("", "0x0000000000000000")


def label_of(row: Mapping) -> str:
    return f"{row.get('hostname')}:{row.get('port')}"


# ----- restarts and rates from stats_proxysql_servers_metrics ------------------------------------

def peer_samples(readings: Iterable[Any]) -> Dict[str, List[Sample]]:
    """Per peer, its distinct (Uptime_s, Queries, Client_Connections_created) in time order.
    ``readings`` are the history's data: Tables (dict rows) or compact PeerReadings.

    >>> from proxytop.core import Table
    >>> cols = ("hostname", "port", "Uptime_s", "Queries", "Client_Connections_created")
    >>> t1 = Table(cols, (("h", "1", "62", "0", "0"),))
    >>> t2 = Table(cols, (("h", "1", "62", "0", "0"),))
    >>> t3 = Table(cols, (("h", "1", "72", "500", "3"),))
    >>> peer_samples([t1, t2, t3])
    {'h:1': [(62, 0, 0), (72, 500, 3)]}
    """
    samples: Dict[str, List[Sample]] = {}
    for data in readings:
        for host, port, uptime, queries, created in _peer_tuples(data):
            sample = (to_number(uptime), to_number(queries), to_number(created))
            if sample[0] is None:
                continue
            series = samples.setdefault(f"{host}:{port}", [])
            if not series or series[-1] != sample:
                series.append(sample)
    return samples


class PeerTracker:
    """:func:`peer_samples` over the metrics history as it grows: each reading is read once
    (the Cluster screen refreshes every second over up to 600 readings). Samples older than
    the history's oldest reading are dropped, except each peer's latest; a history that was
    replaced (another node watched) starts over.

    >>> from proxytop.core import Snapshot, Table
    >>> cols = ("hostname", "port", "Uptime_s", "Queries", "Client_Connections_created")
    >>> snap = lambda at, up, q: Snapshot("m", Table(cols, (("h", "1", up, q, "0"),)), at, 0.0)
    >>> tracker = PeerTracker()
    >>> tracker.update((snap(1, "10", "0"),))
    {'h:1': [(10, 0, 0)]}
    >>> tracker.update((snap(1, "10", "0"), snap(2, "20", "100")))["h:1"]
    [(10, 0, 0), (20, 100, 0)]
    >>> tracker.update((snap(50, "5", "3"),))["h:1"]
    [(5, 3, 0)]
    """

    def __init__(self):
        self._series: Dict[str, List[Tuple[float, Sample]]] = {}
        self._last: Optional[float] = None

    def update(self, snapshots: Sequence[Any]) -> Dict[str, List[Sample]]:
        if not snapshots or (self._last is not None and all(s.taken_at != self._last for s in snapshots)):
            self._series, self._last = {}, None  # forgotten or replaced: start over
        fresh = [s for s in snapshots if self._last is None or s.taken_at > self._last]
        for snapshot in fresh:
            for label, samples in peer_samples([snapshot.data]).items():
                series = self._series.setdefault(label, [])
                if not series or series[-1][1] != samples[-1]:
                    series.append((snapshot.taken_at, samples[-1]))
        if fresh:
            self._last = fresh[-1].taken_at
            oldest = snapshots[0].taken_at
            for series in self._series.values():
                while len(series) > 1 and series[1][0] <= oldest:
                    series.pop(0)
        return {label: [sample for _, sample in series] for label, series in self._series.items()}


def _peer_tuples(data: Any):
    peers = getattr(data, "peers", None)
    if peers is not None:
        return peers
    columns = getattr(data, "columns", None)
    if not columns:
        return ()
    try:
        at = [columns.index(c) for c in ("hostname", "port", "Uptime_s", "Queries", "Client_Connections_created")]
    except ValueError:
        return ()
    return [tuple(row[i] for i in at) for row in data.rows]


def peer_rates(samples: Sequence[Sample]) -> Tuple[Optional[float], Optional[float]]:
    """(Queries/s, connections created/s) between a peer's last two refreshes, on the peer's
    own clock: ΔQueries / ΔUptime_s. None before two refreshes, or across a restart.

    >>> peer_rates([(62, 0, 0), (72, 500, 3)])
    (50.0, 0.3)
    >>> peer_rates([(72, 500, 3)]), peer_rates([(300, 9000, 40), (5, 10, 1)])
    ((None, None), (None, None))
    """
    if len(samples) < 2:
        return None, None
    (u0, q0, c0), (u1, q1, c1) = samples[-2], samples[-1]
    elapsed = u1 - u0
    if elapsed <= 0:
        return None, None

    def per_second(before, after):
        if before is None or after is None or after < before:
            return None
        return (after - before) / elapsed

    return per_second(q0, q1), per_second(c0, c1)


def restarted(samples: Sequence[Sample]) -> bool:
    """Did the peer's Uptime_s go down (a restart) within the readings?

    >>> restarted([(100, 0, 0), (110, 0, 0)]), restarted([(100, 0, 0), (4, 0, 0), (14, 0, 0)])
    (False, True)
    """
    return any(later[0] < earlier[0] for earlier, later in zip(samples, samples[1:]))


# ----- configuration drift from stats_proxysql_servers_checksums ---------------------------------

@dataclass(frozen=True)
class Cell:
    """One peer's checksum of one module, as the watched node sees it."""

    checksum: str
    version: Optional[float]
    epoch: Optional[float]
    changed_at: Optional[float]
    updated_at: Optional[float]
    diff_check: Optional[float]
    climbing: bool = False  # diff_check went up since the previous reading

    @property
    def short(self) -> str:
        """'0xE2185D39626FD399' v2 -> 'E2185D39 v2'."""
        text = self.checksum[2:] if self.checksum.lower().startswith("0x") else self.checksum
        version = units.plain(self.version) if self.version is not None else "?"
        return f"{text[:8] or '-'} v{version}"


@dataclass(frozen=True)
class Module:
    name: str
    cells: Mapping[str, Cell]  # node label -> cell
    reference: Optional[str]  # the checksum most nodes hold (None: no majority)
    differing: Tuple[str, ...]  # labels of the nodes that differ
    since: Optional[float]  # seconds the difference has lasted (watched node's clock)

    @property
    def in_sync(self) -> bool:
        return not self.differing


def modules(previous: Optional[Any], current: Optional[Any]) -> List[Module]:
    """Checksum readings (Tables) -> one Module per module name, in the order ProxySQL lists.

    >>> from proxytop.core import Table
    >>> cols = ("hostname", "port", "name", "version", "epoch", "checksum", "changed_at", "updated_at", "diff_check")
    >>> def t(dc): return Table(cols, (
    ...     ("n", "1", "mysql_query_rules", "2", "50", "0xAA", "40", "100", "0"),
    ...     ("n", "2", "mysql_query_rules", "2", "50", "0xAA", "40", "100", "0"),
    ...     ("n", "3", "mysql_query_rules", "2", "49", "0xBB", "60", "100", dc)))
    >>> [m] = modules(t("57"), t("58"))
    >>> m.reference, m.differing, m.since, m.cells["n:3"].climbing, m.cells["n:3"].short
    ('0xAA', ('n:3',), 40, True, 'BB v2')
    """
    if current is None or not getattr(current, "columns", None):
        return []
    before: Dict[Tuple[str, str], Mapping] = {}
    if previous is not None and getattr(previous, "columns", None):
        before = {(label_of(r), str(r.get("name"))): r for r in previous.dicts()}
    grouped: Dict[str, Dict[str, Cell]] = {}
    for row in current.dicts():
        label, name = label_of(row), str(row.get("name"))
        diff = to_number(row.get("diff_check"))
        old = before.get((label, name))
        old_diff = to_number(old.get("diff_check")) if old else None
        grouped.setdefault(name, {})[label] = Cell(
            checksum=str(row.get("checksum") or ""),
            version=to_number(row.get("version")),
            epoch=to_number(row.get("epoch")),
            changed_at=to_number(row.get("changed_at")),
            updated_at=to_number(row.get("updated_at")),
            diff_check=diff,
            climbing=bool(diff is not None and old_diff is not None and diff > old_diff),
        )
    return [_module(name, cells) for name, cells in grouped.items()]


def _module(name: str, cells: Dict[str, Cell]) -> Module:
    used = {label: cell for label, cell in cells.items() if cell.checksum not in EMPTY_CHECKSUMS}
    if not used or len(set(c.checksum for c in used.values())) == 1 and len(used) == len(cells):
        return Module(name, cells, next(iter(used.values())).checksum if used else None, (), None)
    counts = Counter(cell.checksum for cell in cells.values()).most_common()
    majority = counts[0][0] if len(counts) == 1 or counts[0][1] > counts[1][1] else None
    differing = tuple(label for label, cell in cells.items() if majority is None or cell.checksum != majority)
    now = max((c.updated_at for c in cells.values() if c.updated_at is not None), default=None)
    changes = [cells[label].changed_at for label in differing if cells[label].changed_at is not None]
    since = (now - max(changes)) if (now is not None and changes) else None
    return Module(name, cells, majority, differing, max(0, since) if since is not None else None)


def drift_summary(found: Sequence[Module], name_of: Callable[[str], str]) -> Tuple[str, bool]:
    """One line: "in sync", or what differs where and for how long; and whether it differs.

    >>> m = Module("mysql_query_rules", {}, "0xAA", ("n:3",), 240)
    >>> drift_summary([m], lambda label: "node-3")
    ('mysql_query_rules differs on node-3 for 4m00s', True)
    >>> drift_summary([Module("mysql_users", {}, None, ("a", "b"), None)], str)
    ('mysql_users differs between a and b', True)
    >>> drift_summary([Module("mysql_users", {"a": None, "b": None}, "0x1", (), None)], str)
    ('configuration in sync: 1 module on 2 nodes', False)
    """
    if not found:
        return "no checksums yet", False
    parts = []
    for module in found:
        if module.in_sync:
            continue
        names = [name_of(label) for label in module.differing]
        where = f"on {', '.join(names)}" if module.reference is not None else f"between {' and '.join(names)}"
        when = f" for {units.duration(module.since)}" if module.since is not None else ""
        parts.append(f"{module.name} differs {where}{when}")
    if parts:
        return "; ".join(parts), True
    nodes = max(len(m.cells) for m in found)
    return (f"configuration in sync: {len(found)} module{'s' if len(found) != 1 else ''} "
            f"on {nodes} node{'s' if nodes != 1 else ''}"), False


def differs_on(found: Sequence[Module], label: str) -> List[str]:
    """The modules in which node ``label`` differs."""
    return [m.name for m in found if label in m.differing]


def server_clock(checksums: Optional[Any]) -> Optional[float]:
    """The watched node's latest ``updated_at`` (epoch s): "now" on ProxySQL's clock."""
    if checksums is None or not getattr(checksums, "columns", None) or not checksums.has("updated_at"):
        return None
    at = checksums.columns.index("updated_at")
    values = [to_number(row[at]) for row in checksums.rows]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def clients_seen(clients: Optional[Any]) -> Dict[str, float]:
    """stats_proxysql_servers_clients_status -> {admin interface "host:port": last_seen_at};
    a peer listening on several interfaces (``a:6032;b:6032``) is listed under each.

    >>> from proxytop.core import Table
    >>> t = Table(("uuid", "hostname", "port", "admin_mysql_ifaces", "last_seen_at"),
    ...           (("u1", "10.0.0.2", "40420", "0.0.0.0:6032", "1000"),))
    >>> clients_seen(t)
    {'0.0.0.0:6032': 1000, '10.0.0.2:6032': 1000}
    """
    seen: Dict[str, float] = {}
    if clients is None or not getattr(clients, "columns", None):
        return seen
    for row in clients.dicts():
        when = to_number(row.get("last_seen_at"))
        if when is None:
            continue
        for iface in str(row.get("admin_mysql_ifaces") or "").split(";"):
            iface = iface.strip()
            if not iface:
                continue
            keys = [iface]
            host, _, port = iface.rpartition(":")
            if host in ("0.0.0.0", "::", "*"):  # listening everywhere: the peer is known by its address
                keys.append(f"{row.get('hostname')}:{port}")
            for key in keys:
                seen[key] = max(when, seen.get(key, when))
    return seen
