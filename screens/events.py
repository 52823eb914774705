"""Events (key E): what changed, newest first — a backend's status, a variable, a module
loaded to runtime, a replica thread, the cluster's drift, a restart, a source unreachable and
back — each with its time and old → new. See docs/events.md.

The events come from an :class:`EventLog` fed with every reading the engine takes (live: its
observer; a replay: the recording's readings up to the position), whichever screen is shown.
What only events need (the variables, the modules' versions) is read on every screen at a
slow pace, as the header's alarms are (``alarm_readings``).
"""
from __future__ import annotations

import time
from typing import List, Optional, Tuple

from proxytop.collectors.changes import CHECKSUMS_EVERY, VARIABLES_EVERY, ProxySQLChecksums, ProxySQLVariables
from proxytop.collectors.cluster import ClusterChecksums, ClusterMetrics
from proxytop.collectors.innodb_fleet import Fleet
from proxytop.core import Collector
from proxytop.metrics.events import KINDS, PULL_BUDGET, Event, EventLog, watches
from proxytop.screens.base import DataView, Detail, Screen
from proxytop.screens.connpool import ALARM_INTERVAL
from proxytop.screens.replication import ALARM_PACE
from proxytop.screens.table import Column, Row

CLUSTER_EVERY = 30.0  # the cluster's checksums and peers, for drift and node restarts, off the Cluster screen


def clock(at) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) if isinstance(at, (int, float)) else ""


def severity_style(row) -> Optional[str]:
    return {"danger": "danger", "warning": "warning"}.get(row.get("severity"))


def event_row(event: Event) -> Row:
    return {"_id": (event.wall_time, event.source, event.kind, event.what), "time": event.wall_time,
            "source": event.source, "kind": event.kind, "what": event.what, "change": event.change,
            "severity": event.severity, "_event": event}


def proxysql_name(source) -> str:
    """The events' name of the ProxySQL read: "proxysql", or with several nodes (-H a,b,
    --cluster) "proxysql <the watched node>" (asked on the source's worker thread, which moves
    the source to another node before reading it)."""
    node_set = getattr(source, "nodes", None)
    endpoint = getattr(source, "endpoint", None)
    if node_set is not None and node_set.several and endpoint is not None:
        return f"proxysql {endpoint.label}"
    return "proxysql"


class EventsScreen(Screen):
    key = "events"
    title = "Events"
    uses_fleet = True
    default_sort = ("time", True)
    tiebreak = ("source", "what")
    columns = (
        Column("time", "Time", 8, "<", fmt=clock, priority=0, graphed=False, help="when the reading that saw the change was taken"),
        Column("source", "Source", 15, "<", numeric=False, priority=1,
               help="proxysql, a MySQL server (host:port), or cluster"),
        Column("kind", "Kind", 8, "<", numeric=False, style=severity_style, priority=1,
               help="restart, status, variable, reload, replica, drift, node, reach (docs/events.md)"),
        Column("what", "What", 24, "<", numeric=False, priority=0,
               help="the backend (hostgroup host:port), variable, module or thread that changed"),
        Column("change", "Old \u2192 New", 20, "<", numeric=False, style=severity_style, priority=0, flexible=True,
               help="the value before and after"),
    )

    def __init__(self, config=None, fleet: Optional[Fleet] = None):
        super().__init__(config)
        self.fleet = fleet if fleet is not None else Fleet.from_config(config)
        self.with_proxysql = getattr(config, "proxysql", True)
        self.log = EventLog()

    # --- what is read ----------------------------------------------------------------------------
    def collectors(self) -> List[Collector]:
        return [ProxySQLVariables(), ProxySQLChecksums()] if self.with_proxysql else []

    def attach(self, engine) -> None:
        engine.follow(self.log.observe, watches)
        self.log.pull = engine.deliver  # a replay tells the recorded readings up to its position
        self.log.proxysql_name = lambda: proxysql_name(engine.source("proxysql"))

    def active_collectors(self) -> List[str]:
        names = [c.name for c in self._collector_cache()]
        return names + [server.variables_name for server in self.fleet.listed()]

    def alarm_readings(self, view: DataView) -> Tuple[Tuple[str, float], ...]:
        """Taken on every screen: ProxySQL's runtime variables and module versions, the cluster's
        checksums and peers, each MySQL server's variables. (The pools, the uptimes and the
        replica threads are read for the header and its alarms anyway.)"""
        plan: List[Tuple[str, float]] = []
        if self.with_proxysql:
            plan += [(ProxySQLVariables.name, VARIABLES_EVERY), (ProxySQLChecksums.name, CHECKSUMS_EVERY),
                     (ClusterChecksums.name, CLUSTER_EVERY), (ClusterMetrics.name, CLUSTER_EVERY)]
        return tuple(plan + [(server.variables_name, VARIABLES_EVERY) for server in self.fleet.listed()])

    # --- rows -------------------------------------------------------------------------------------
    def shown(self, view: DataView) -> List[Event]:
        """The events up to now (a replay's position)."""
        return self.log.events(until=view.now(), budget=PULL_BUDGET)  # (a frame's worth of a replay's catching up)

    def rows_token(self, view: DataView):
        events = self.shown(view)
        return (len(events), events[-1] if events else None)

    def rows(self, view: DataView) -> List[Row]:
        return [event_row(event) for event in self.shown(view)]

    def notes(self, view: DataView):
        shown = self.shown(view)
        if not self.log.caught_up:  # a replay's jump across hours: folded over the next frames
            return [(("reading the recording's events up to the position\u2026", "dim"),)]
        if shown:
            return []
        watched = []
        if self.with_proxysql:
            session = getattr(view.source("proxysql"), "session", None)
            admin = getattr(session, "is_admin", True)
            watched += [f"ProxySQL: backend statuses every {ALARM_INTERVAL:g} s, restarts (uptime) every refresh",
                        f"ProxySQL: runtime variables every {VARIABLES_EVERY:g} s, module loads every "
                        f"{CHECKSUMS_EVERY:g} s" + ("" if admin else " (these need an admin user)"),
                        f"ProxySQL Cluster: drift and node restarts every {CLUSTER_EVERY:g} s"]
        if self.fleet.listed():
            watched += [f"MySQL servers ({len(self.fleet.listed())}): global variables every {VARIABLES_EVERY:g} s, "
                        f"restarts and replica threads every {ALARM_PACE:g} s"]
        watched.append("connections: a source unreachable, and back again, as it happens")
        lines = [(("Nothing has changed yet. Watched:", "dim"),)]
        lines += [((f"  {text}", "dim"),) for text in watched]
        return lines

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        event: Event = row["_event"]
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.wall_time))
        style = {"danger": "danger", "warning": "warning"}.get(event.severity)
        lines = (
            (("time   ", "label"), (f"{when}.{int(event.wall_time * 1000) % 1000:03d}", None)),
            (("source ", "label"), (event.source, "header")),
            (("kind   ", "label"), (event.kind, style), (f"  {KINDS.get(event.kind, ('', ''))[1]}", "dim")),
            (("what   ", "label"), (event.what, "header")),
            (("old    ", "label"), (event.old, None)),
            (("new    ", "label"), (event.new, style)),
        )
        return Detail(f"{event.kind}: {event.what}", lines)


SCREEN = EventsScreen
