"""Events: what changed between two readings of the same thing. Pure, but for the log.

Each reading that tells something about a source's state is turned into *facets*: one source
(``proxysql`` or a MySQL server's ``host:port``), one kind of state (a backend's status, the
variables, the modules' load versions, the replica threads, the cluster's drift) and its values
by name. :func:`fold` compares a facet with the same facet's previous values and returns the
events; the first reading of a facet is its baseline and makes none. Uptime is not a facet: a
source's uptime that went back is one ``restarted`` event, whichever reading saw it, and the
facets of that source read before it are then forgotten (a restart makes no event per
variable or per backend). A source's connection (the engine's source states, not readings)
is folded apart by :func:`fold_reach`: unreachable with the error, then back with how long it was
out.

:class:`EventLog` keeps the fold's state and the last ``limit`` events; it is fed with every
new snapshot (live: the engine's observer, on the worker threads; a replay: the recording's
snapshots in time order) and read by the Events screen, --batch and the graphs' markers.
See docs/events.md.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from proxytop.core import is_secret_name, mysql_source_server
from proxytop.metrics import cluster, units
from proxytop.metrics.rates import to_number

LIMIT = 10_000  # events kept; the oldest go first

# kind -> (graph marker, what the kind means): the markers are one character on a graph
KINDS: Dict[str, Tuple[str, str]] = {
    "restart": ("R", "the server restarted (its uptime went back)"),
    "status": ("S", "a backend's status in ProxySQL's connection pool"),
    "variable": ("V", "a global variable"),
    "reload": ("L", "a ProxySQL module loaded to runtime (its version or checksum)"),
    "replica": ("X", "a replica's IO or SQL thread"),
    "drift": ("D", "ProxySQL Cluster: a module's checksum differs between nodes, or agrees again"),
    "node": ("N", "ProxySQL Cluster: a node restarted"),
    "reach": ("U", "proxytop could not reach the source (unreachable), or reached it again (back)"),
}
NONE = "(none)"  # the old or new value of something that was not there
REACHABLE, UNREACHABLE, BACK = "reachable", "unreachable", "back after"  # a source's connection
HIDDEN = "(hidden)"  # a password or credentials variable changed: its values are never shown
# Global variables that change by themselves (positions, not settings): never an event.
MOVING_VARIABLES = frozenset((
    "gtid_binlog_pos", "gtid_binlog_state", "gtid_current_pos", "gtid_slave_pos", "gtid_executed",
    "gtid_purged", "gtid_owned", "timestamp", "last_insert_id", "insert_id", "rand_seed1", "rand_seed2",
    "identity", "warning_count", "error_count",
))


@dataclass(frozen=True)
class Event:
    """One change: when it was seen (the wall time of the reading that saw it), where, what,
    and the values before and after."""

    wall_time: float
    source: str  # "proxysql", a MySQL server "127.0.0.1:3306", a cluster node "node 127.0.0.1:6052"
    kind: str  # a key of KINDS
    what: str  # the variable, the backend, the module, the thread
    old: str
    new: str
    severity: str = "info"  # info | warning | danger
    # the reading's engine time (monotonic; a replay's: its timeline): what a replay's position
    # is compared with (wall and monotonic clocks drift apart over a long recording)
    taken_at: Optional[float] = None

    @property
    def marker(self) -> str:
        """One character for a graph's marker."""
        return KINDS.get(self.kind, ("?", ""))[0]

    @property
    def label(self) -> str:
        """A short label for a graph's marker.

        >>> Event(0.0, "proxysql", "status", "hg 20 127.0.0.1:3313", "ONLINE", "SHUNNED").label
        'hg 20 127.0.0.1:3313 SHUNNED'
        >>> Event(0.0, "127.0.0.1:3306", "restart", "Uptime", "3600", "12").label
        '127.0.0.1:3306 restarted'
        """
        if self.kind in ("restart", "node"):
            return f"{self.what if self.kind == 'node' else self.source} restarted"
        if self.kind == "reach":
            return f"{self.source} {self.new.partition(':')[0]}"
        return f"{self.what} {self.new}"

    @property
    def change(self) -> str:
        """
        >>> Event(0.0, "proxysql", "variable", "mysql-max_connections", "2048", "4096").change
        '2048 \u2192 4096'
        >>> Event(0.0, "proxysql", "reload", "mysql_query_rules", "v1 0xAB", "v2 0xAB").change
        'v1 \u2192 v2 (same checksum)'
        """
        if self.kind == "reload" and self.old != NONE and self.new != NONE:
            (old_version, _, old_sum), (new_version, _, new_sum) = self.old.partition(" "), self.new.partition(" ")
            same = "same checksum" if old_sum == new_sum else f"checksum {new_sum}"
            return f"{old_version} \u2192 {new_version} ({same})"
        return f"{self.old} \u2192 {self.new}"

    def as_dict(self) -> Dict[str, Any]:
        return {"timestamp": round(self.wall_time, 3), "source": self.source, "kind": self.kind, "what": self.what,
                "old": self.old, "new": self.new, "severity": self.severity}


@dataclass(frozen=True)
class Facet:
    """What one reading says about one kind of state of one source: values by name."""

    source: str
    kind: str
    values: Mapping[str, str]
    part: str = ""  # one of several facets of the same kind of a source (a ProxySQL 3.x's PostgreSQL pool)


@dataclass(frozen=True)
class VariablesReading:
    """A source's global variables (ProxySQL's runtime_global_variables, a MySQL server's SHOW
    GLOBAL VARIABLES) and its uptime when read (None when unknown)."""

    values: Mapping[str, str]
    uptime: Optional[float] = None


@dataclass(frozen=True)
class Reading:
    """What :func:`facets` finds in one snapshot: the facets, and uptimes by source."""

    facets: Tuple[Facet, ...] = ()
    uptimes: Tuple[Tuple[str, float], ...] = ()


# ----- from snapshots to facets -------------------------------------------------------------------

def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _rows(data: Any) -> List[Mapping[str, Any]]:
    return data.dicts() if data is not None and hasattr(data, "dicts") else []


def pool_statuses(data: Any) -> Dict[str, str]:
    """stats_mysql_connection_pool -> {"hg 10 127.0.0.1:3306": "ONLINE"}.

    >>> from proxytop.core import Table
    >>> pool_statuses(Table(("hostgroup", "srv_host", "srv_port", "status"), (("10", "h", "3306", "ONLINE"),)))
    {'hg 10 h:3306': 'ONLINE'}
    """
    return {f"hg {r.get('hostgroup')} {r.get('srv_host')}:{r.get('srv_port')}": _text(r.get("status"))
            for r in _rows(data) if "status" in r}


def module_versions(data: Any) -> Dict[str, str]:
    """runtime_checksums_values -> {"mysql_query_rules": "v3 0x1A2B..."}; modules never loaded
    (version 0 / empty checksum) are left out.

    >>> from proxytop.core import Table
    >>> module_versions(Table(("name", "version", "epoch", "checksum"),
    ...                       (("mysql_query_rules", "3", "1700000000", "0xAB12"), ("ldap_variables", "0", "0", ""))))
    {'mysql_query_rules': 'v3 0xAB12'}
    """
    found = {}
    for row in _rows(data):
        version = to_number(row.get("version"))
        if not version:
            continue
        found[_text(row.get("name"))] = f"v{version:g} {_text(row.get('checksum'))}"
    return found


def _version(value: str) -> Optional[float]:
    return to_number(value.split()[0][1:]) if value.startswith("v") else None


PROXYSQL_READINGS = ("proxysql.connection_pool", "proxysql.pgsql.connection_pool", "proxysql.header_status",
                     "proxysql.global", "proxysql.variables", "proxysql.checksums", "proxysql.cluster_checksums",
                     "proxysql.cluster_metrics")
MYSQL_READINGS = ("mysql.variables.", "mysql.server.")  # each server's, by prefix


def watches(name: str) -> bool:
    """Whether the readings of collector ``name`` can make events.

    >>> watches("proxysql.connection_pool"), watches("mysql.server.127.0.0.1:3306"), watches("proxysql.digest")
    (True, True, False)
    """
    return name in PROXYSQL_READINGS or name.startswith(MYSQL_READINGS)


def facets(name: str, data: Any, proxysql: str = "proxysql") -> Reading:
    """The facets and uptimes of one snapshot of collector ``name`` (an empty Reading for a
    collector that tells nothing of what events watch); ``proxysql`` names the ProxySQL read
    (with several nodes, the watched one: each node's readings are then compared with its own)."""
    if data is None:
        return Reading()
    if name in ("proxysql.connection_pool", "proxysql.pgsql.connection_pool"):
        if not hasattr(data, "dicts"):
            return Reading()
        if name == "proxysql.pgsql.connection_pool":  # the PostgreSQL side's backends, compared apart
            return Reading((Facet(proxysql, "status", {f"pgsql {k}": v for k, v in pool_statuses(data).items()}, "pgsql"),))
        return Reading((Facet(proxysql, "status", pool_statuses(data)),))
    if name in ("proxysql.header_status", "proxysql.global") and isinstance(data, Mapping):
        uptime = to_number(data.get("ProxySQL_Uptime"))
        return Reading(uptimes=((proxysql, uptime),) if uptime is not None else ())
    if name == "proxysql.variables" and isinstance(data, VariablesReading):
        uptimes = ((proxysql, data.uptime),) if data.uptime is not None else ()
        return Reading((Facet(proxysql, "variable", data.values),), uptimes)
    if name == "proxysql.checksums":
        return Reading((Facet(proxysql, "reload", module_versions(data)),))
    if name == "proxysql.cluster_checksums":
        drift = {}
        for module in cluster.modules(None, data):
            drift[module.name] = ("differs on " + ", ".join(module.differing)) if module.differing else "in sync"
        return Reading((Facet("cluster", "drift", drift),))
    if name == "proxysql.cluster_metrics":
        return Reading(uptimes=tuple((f"node {label}", samples[-1][0])
                                     for label, samples in cluster.peer_samples([data]).items()))
    if name.startswith("mysql.variables.") and isinstance(data, VariablesReading):
        server = name[len("mysql.variables."):]
        uptimes = ((server, data.uptime),) if data.uptime is not None else ()
        return Reading((Facet(server, "variable", data.values),), uptimes)
    if name.startswith("mysql.server."):
        server = name[len("mysql.server."):]
        status = getattr(data, "status", None)
        uptime = to_number(status.get("Uptime")) if isinstance(status, Mapping) else None
        found: Tuple[Facet, ...] = ()
        if getattr(data, "replication_error", None) is None and getattr(data, "replication_denied", None) is None:
            threads = {}
            for channel in getattr(data, "channels", ()):
                where = f"channel '{channel.name}' " if channel.name else ""
                threads[f"{where}IO thread"] = channel.io_running or NONE
                threads[f"{where}SQL thread"] = channel.sql_running or NONE
            found = (Facet(server, "replica", threads),)
        return Reading(found, ((server, uptime),) if uptime is not None else ())
    return Reading()


# ----- the fold -------------------------------------------------------------------------------------

def severity(kind: str, what: str, new: str) -> str:
    """
    >>> severity("status", "hg 20 h:1", "SHUNNED"), severity("status", "hg 20 h:1", "ONLINE")
    ('warning', 'info')
    >>> severity("replica", "IO thread", "No"), severity("restart", "Uptime", "3")
    ('danger', 'warning')
    """
    if kind == "status":
        return "info" if new == "ONLINE" else ("danger" if new == "OFFLINE_HARD" else "warning")
    if kind == "replica":
        return "info" if new == "Yes" else "danger"
    if kind in ("restart", "node"):
        return "warning"
    if kind == "reach":
        return "info" if new.startswith(BACK) else "warning"
    if kind == "drift":
        return "info" if new == "in sync" else "warning"
    return "info"


def changes(facet: Facet, before: Mapping[str, str], wall_time: float,
            taken_at: Optional[float] = None) -> List[Event]:
    """The events between a facet's previous values and its new ones.

    >>> old = {"mysql-max_connections": "2048", "mysql-threads": "4"}
    >>> new = Facet("proxysql", "variable", {"mysql-max_connections": "4096", "mysql-threads": "4"})
    >>> [(e.what, e.change) for e in changes(new, old, 10.0)]
    [('mysql-max_connections', '2048 \u2192 4096')]
    >>> gone = Facet("proxysql", "status", {})
    >>> [(e.what, e.old, e.new, e.severity) for e in changes(gone, {"hg 10 h:1": "ONLINE"}, 10.0)]
    [('hg 10 h:1', 'ONLINE', '(none)', 'warning')]
    >>> secret = Facet("proxysql", "variable", {"admin-admin_credentials": "admin:n3w"})
    >>> [e.change for e in changes(secret, {"admin-admin_credentials": "admin:admin"}, 10.0)]
    ['(hidden) → (hidden)']
    """
    events = []
    for what in list(before) + [k for k in facet.values if k not in before]:
        old, new = before.get(what, NONE), facet.values.get(what, NONE)
        if old == new or (facet.kind == "variable" and what.lower() in MOVING_VARIABLES):
            continue
        if facet.kind == "reload":
            old_version, new_version = _version(old), _version(new)
            if old_version is not None and new_version is not None and new_version < old_version:
                continue  # versions only go back when ProxySQL restarted: its restart event says so
        if facet.kind == "variable" and is_secret_name(what):
            old, new = (HIDDEN if old != NONE else NONE), (HIDDEN if new != NONE else NONE)
        events.append(Event(wall_time, facet.source, facet.kind, what, old, new, severity(facet.kind, what, new),
                            taken_at))
    return events


@dataclass(frozen=True)
class FoldState:
    """What the fold remembers: each facet's last values and when they were read, and each
    source's last uptime and when it last restarted (wall times)."""

    seen: Mapping[Tuple[str, str, str], Tuple[float, Mapping[str, str]]]  # (source, kind, part) ->
    uptimes: Mapping[str, Tuple[float, float]]  # source -> (wall time, uptime)
    restarts: Mapping[str, float]  # source -> wall time of the reading that saw its restart
    # source -> None while reachable, or (wall time it was first seen unreachable, whether it
    # had been reached before) while it is not; a source not in it has said nothing yet
    reach: Mapping[str, Optional[Tuple[float, bool]]] = field(default_factory=dict)


EMPTY = FoldState({}, {}, {}, {})


SECOND_HAND_SECONDS = 60.0  # how far behind a cluster peer's uptime may be, as another node saw it


def fold(state: FoldState, name: str, data: Any, wall_time: float, taken_at: Optional[float] = None,
         proxysql: str = "proxysql") -> Tuple[FoldState, List[Event]]:
    """(the new state, the events) after a snapshot of collector ``name`` taken at
    ``wall_time`` (and ``taken_at`` on the engine's clock). Pure.

    >>> from proxytop.core import Table
    >>> cols = ("hostgroup", "srv_host", "srv_port", "status")
    >>> pool = lambda status: Table(cols, (("20", "h", "3313", status),))
    >>> state, first = fold(EMPTY, "proxysql.connection_pool", pool("ONLINE"), 100.0)
    >>> state, second = fold(state, "proxysql.connection_pool", pool("SHUNNED"), 102.0)
    >>> first, [(e.wall_time, e.what, e.change) for e in second]
    ([], [(102.0, 'hg 20 h:3313', 'ONLINE \u2192 SHUNNED')])
    >>> state, _ = fold(state, "proxysql.header_status", {"ProxySQL_Uptime": "5000"}, 103.0)
    >>> state, restart = fold(state, "proxysql.header_status", {"ProxySQL_Uptime": "2"}, 104.0)
    >>> [(e.kind, e.source, e.change) for e in restart]
    [('restart', 'proxysql', '1h23m \u2192 2s')]
    >>> state, after = fold(state, "proxysql.connection_pool", pool("ONLINE"), 105.0)
    >>> after  # read before the restart: a new baseline, no event
    []
    """
    reading = facets(name, data, proxysql)
    if not reading.facets and not reading.uptimes:
        return state, []
    events: List[Event] = []
    uptimes, restarts = dict(state.uptimes), dict(state.restarts)
    for source, uptime in reading.uptimes:
        last = uptimes.get(source)
        # A restart after the last reading leaves an uptime shorter than the time since it
        # (and a minute for a figure seen second-hand: a cluster peer's, as the watched node
        # last saw it). An uptime a little behind, from another node after a switch, is none.
        if last is not None and uptime < last[1] and last[0] <= wall_time \
                and uptime <= wall_time - last[0] + SECOND_HAND_SECONDS:
            restarts[source] = wall_time
            kind = "node" if source.startswith("node ") else "restart"
            what = source[len("node "):] if kind == "node" else ("ProxySQL_Uptime" if source == proxysql else "Uptime")
            events.append(Event(wall_time, "cluster" if kind == "node" else source, kind, what,
                                units.duration(last[1]), units.duration(uptime), "warning", taken_at))
        uptimes[source] = (wall_time, uptime)
    seen = dict(state.seen)
    for facet in reading.facets:
        key = (facet.source, facet.kind, facet.part)
        before = seen.get(key)
        restarted = restarts.get(facet.source)
        if before is not None and not (restarted is not None and before[0] < restarted):
            events += changes(facet, before[1], wall_time, taken_at)
        seen[key] = (wall_time, facet.values)
    return replace(state, seen=seen, uptimes=uptimes, restarts=restarts), events


def reach_source(name: str, proxysql: str = "proxysql") -> Optional[str]:
    """The events' source of an engine source whose connection is watched: ProxySQL's admin
    and each MySQL server (None for the others: this host, a cluster peer).

    >>> reach_source("proxysql"), reach_source("mysql:127.0.0.1:3306"), reach_source("host")
    ('proxysql', '127.0.0.1:3306', None)
    """
    return proxysql if name == "proxysql" else mysql_source_server(name)


def fold_reach(state: FoldState, source: str, connected: bool, error: Optional[str], wall_time: float,
               taken_at: Optional[float] = None) -> Tuple[FoldState, List[Event]]:
    """(the new state, the events) after a source's connection state: ``connected``, or not
    with the one-line ``error`` (the header's); a state with neither (an attempt under way)
    says nothing. Pure.

    Reachable again after being unreachable is one ``back after`` event with how long it was
    out (from the first failure seen to the connection, whole seconds). A source that keeps
    failing is one ``unreachable`` event, not one per retry. The first state is a baseline:
    reachable says nothing; unreachable is one event, and its first connection no ``back``
    (it was never reached: there is no outage to measure).

    >>> state, first = fold_reach(EMPTY, "127.0.0.1:3306", True, None, 100.0)
    >>> state, down = fold_reach(state, "127.0.0.1:3306", False, "connection refused", 110.0)
    >>> state, again = fold_reach(state, "127.0.0.1:3306", False, "connection refused", 112.0)
    >>> state, up = fold_reach(state, "127.0.0.1:3306", True, None, 131.4)
    >>> first, again, [(e.what, e.change, e.severity) for e in down]
    ([], [], [('connection', 'reachable → unreachable: connection refused', 'warning')])
    >>> [(e.what, e.change, e.severity) for e in up]
    [('connection', 'unreachable → back after 21s', 'info')]
    """
    if not connected and not error:
        return state, []
    known, before = source in state.reach, state.reach.get(source)
    reach = dict(state.reach)
    events: List[Event] = []
    if connected:
        reach[source] = None
        if before is not None and before[1]:
            out = units.duration(max(1, round(wall_time - before[0])))
            events.append(Event(wall_time, source, "reach", "connection", UNREACHABLE, f"{BACK} {out}",
                                severity("reach", "connection", BACK), taken_at))
    elif before is None:  # reachable (or nothing known) until now: one event per outage
        reach[source] = (wall_time, known)
        new = f"{UNREACHABLE}: {error}"
        events.append(Event(wall_time, source, "reach", "connection", REACHABLE if known else NONE, new,
                            severity("reach", "connection", new), taken_at))
    else:
        return state, []  # still unreachable: the retries say nothing new
    return replace(state, reach=reach), events


# ----- the log --------------------------------------------------------------------------------------

def seen_at(event: Event) -> float:
    """The engine time of the reading that saw an event (its wall time when not given)."""
    return event.taken_at if event.taken_at is not None else event.wall_time


PULL_BUDGET = 0.05  # seconds a frame may spend folding a replay's readings after a jump


class EventLog:
    """The fold's state and the last ``limit`` events, oldest first. ``feed`` may be called
    from the engine's worker threads while the UI reads: a lock guards both."""

    def __init__(self, limit: int = LIMIT):
        self._lock = threading.Lock()
        self._state = EMPTY
        self._events: deque = deque(maxlen=limit)
        self.added = 0  # events ever added: --batch prints those added since its last report
        # Called before every read: a replay delivers the recording's readings up to its
        # position here (a live engine's workers feed the log as they read), within a budget
        # of seconds (None: all); False while some are still to come.
        self.pull: Callable[[Optional[float]], bool] = lambda budget: True
        self.caught_up = True  # (a replay's: every reading up to its position folded)
        # The name of the ProxySQL read, asked with each reading (several nodes: the watched one)
        self.proxysql_name: Callable[[], str] = lambda: "proxysql"

    def feed(self, name: str, data: Any, wall_time: float, taken_at: Optional[float] = None) -> List[Event]:
        with self._lock:
            self._state, found = fold(self._state, name, data, wall_time, taken_at, self.proxysql_name())
            self._events.extend(found)
            self.added += len(found)
        return found

    def feed_reach(self, name: str, connected: bool, error: Optional[str], wall_time: float,
                   taken_at: Optional[float] = None) -> List[Event]:
        """Engine source ``name``'s connection state (ignored for a source not watched)."""
        with self._lock:
            source = reach_source(name, self.proxysql_name())
            if source is None:
                return []
            self._state, found = fold_reach(self._state, source, connected, error, wall_time, taken_at)
            self._events.extend(found)
            self.added += len(found)
        return found

    def observe(self, kind: str, value: Any) -> None:
        """An engine observer (proxytop.polling.engine.Engine.follow): every snapshot, and every
        source state (proxytop.polling.engine.SourceState, with the times it changed)."""
        if kind == "snapshot" and value.ok:
            self.feed(value.collector, value.data, value.wall_time, value.taken_at)
        elif kind == "state":
            self.feed_reach(value.name, value.connected, value.error, value.wall_time, value.changed_at)

    def events(self, until: Optional[float] = None, budget: Optional[float] = None) -> List[Event]:
        """The events kept, oldest first; with ``until`` (the engine's time, ``now()``) those
        of readings taken at or before it (a replay moved back hides what comes later, and
        shows it again going forward). A replay folds its readings up to there for at most
        ``budget`` seconds a call (the UI's frames): ``caught_up`` says whether it got there."""
        self.caught_up = self.pull(budget)
        with self._lock:
            found = list(self._events)
        return found if until is None else [e for e in found if seen_at(e) <= until + 1e-6]

    def since(self, added: int) -> Tuple[List[Event], int]:
        """The events added after the log had ``added`` of them (those still kept), and the
        count to ask with next time (every reading up to a replay's position folded first)."""
        self.caught_up = self.pull(None)
        with self._lock:
            count, kept = self.added, list(self._events)
        new = count - added
        return (kept[-new:] if new > 0 else []), count

    def between(self, start: float, end: float) -> List[Tuple[float, str, str]]:
        """For a graph's markers: (wall time, one-character marker, short label) of each event
        seen between two wall times (both included), oldest first."""
        return [(e.wall_time, e.marker, e.label) for e in self.events(budget=PULL_BUDGET) if start <= e.wall_time <= end]
