"""Triggers of the recorder (``--on 'threads_running>50'``): a figure proxytop already reads,
compared with a number. The figures are pure functions of the latest snapshots:

- ``threads_running``: the highest Threads_running of the MySQL servers (the Servers screen's
  reading of each server);
- ``shunned``: how many ProxySQL backends are SHUNNED (any SHUNNED status: the ConnPool
  screen's reading of stats_mysql_connection_pool);
- ``lock_wait``: the longest InnoDB lock wait in seconds of any MySQL server (the header's
  Locks alarm reading).
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from proxytop.core import Snapshot, Table
from proxytop.collectors.mysql_locks import AlarmReading
from proxytop.collectors.mysql_server import ServerReading

# figure -> (the collectors it is read from, by name prefix; the screen that reads them)
FIGURES: Dict[str, Tuple[str, str]] = {
    "threads_running": ("mysql.server.", "servers"),
    "shunned": ("proxysql.connection_pool", "connpool"),
    "lock_wait": ("mysql.lockalarm.", ""),  # on every screen: the header's alarm
}
_OPERATORS: Dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "=": operator.eq,
}
_TRIGGER = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|>|<|=)\s*(\d+(?:\.\d+)?)\s*$")

Latest = Callable[[str], Optional[Snapshot]]


@dataclass(frozen=True)
class Trigger:
    figure: str
    op: str
    threshold: float

    @property
    def text(self) -> str:
        return f"{self.figure}{self.op}{self.threshold:g}"

    def __str__(self) -> str:  # as --print-defaults shows it
        return self.text

    def fires(self, value: Optional[float]) -> bool:
        return value is not None and _OPERATORS[self.op](value, self.threshold)


def parse_trigger(text: str) -> Trigger:
    """``--on`` text -> Trigger; ValueError with one plain line naming the vocabulary.

    >>> parse_trigger("threads_running>50"), parse_trigger(" shunned >= 1 ").text
    (Trigger(figure='threads_running', op='>', threshold=50.0), 'shunned>=1')
    >>> parse_trigger("qps>5")
    Traceback (most recent call last):
    ValueError: 'qps>5' is not a trigger: write FIGURE>NUMBER (or >=, <, <=, =) with FIGURE one of threads_running, shunned, lock_wait
    """
    match = _TRIGGER.match(text.lower())
    if not match or match.group(1) not in FIGURES:
        raise ValueError(f"'{text}' is not a trigger: write FIGURE>NUMBER (or >=, <, <=, =) with FIGURE one of "
                         + ", ".join(FIGURES))
    return Trigger(match.group(1), match.group(2), float(match.group(3)))


def _number(value: Any) -> Optional[float]:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def threads_running(snapshots: Iterable[Snapshot]) -> Optional[Tuple[float, str]]:
    """(the highest Threads_running, its server) of the servers' latest readings.

    >>> reading = lambda n: ServerReading(status={"Threads_running": str(n)}, variables={})
    >>> threads_running([Snapshot("mysql.server.a:1", reading(3), 0.0, 0.0),
    ...                  Snapshot("mysql.server.b:2", reading(60), 0.0, 0.0)])
    (60.0, 'b:2')
    """
    best: Optional[Tuple[float, str]] = None
    for snapshot in snapshots:
        data = snapshot.data
        value = _number(data.status.get("Threads_running")) if isinstance(data, ServerReading) else None
        if value is not None and (best is None or value > best[0]):
            best = (value, snapshot.collector[len("mysql.server."):])
    return best


def shunned(snapshots: Iterable[Snapshot]) -> Optional[Tuple[float, str]]:
    """(how many backends are SHUNNED, the first of them) in the connection pool.

    >>> pool = Table(("hostgroup", "srv_host", "srv_port", "status"),
    ...              (("10", "db1", "3306", "ONLINE"), ("20", "db2", "3306", "SHUNNED")))
    >>> shunned([Snapshot("proxysql.connection_pool", pool, 0.0, 0.0)])
    (1.0, 'db2:3306')
    """
    for snapshot in snapshots:
        if not isinstance(snapshot.data, Table) or not snapshot.data.has("status"):
            continue
        out = [row for row in snapshot.data.dicts() if str(row.get("status") or "").upper().startswith("SHUNNED")]
        first = f"{out[0].get('srv_host')}:{out[0].get('srv_port')}" if out else ""
        return float(len(out)), first
    return None


def lock_wait(snapshots: Iterable[Snapshot]) -> Optional[Tuple[float, str]]:
    """(the longest lock wait in seconds, its server); 0 when no session waits."""
    best: Optional[Tuple[float, str]] = None
    for snapshot in snapshots:
        if not isinstance(snapshot.data, AlarmReading):
            continue
        longest = snapshot.data.longest
        value = (longest.wait_s or 0.0) if longest is not None else 0.0
        if best is None or value > best[0]:
            best = (value, snapshot.collector[len("mysql.lockalarm."):])
    return best


_READERS = {"threads_running": threads_running, "shunned": shunned, "lock_wait": lock_wait}


def figure(name: str, collector_names: Iterable[str], latest: Latest) -> Optional[Tuple[float, str]]:
    """(value, where) of a figure from the latest readings; None while nothing was read."""
    prefix = FIGURES[name][0]
    snapshots = [s for s in map(latest, (n for n in collector_names if n.startswith(prefix)))
                 if s is not None and s.error is None]
    return _READERS[name](snapshots)


def fired(triggers: Iterable[Trigger], collector_names: Iterable[str], latest: Latest) -> Tuple[str, ...]:
    """One line for each trigger whose figure passes its threshold now.

    >>> pool = Table(("srv_host", "srv_port", "status"), (("db2", "3306", "SHUNNED"),))
    >>> latest = {"proxysql.connection_pool": Snapshot("proxysql.connection_pool", pool, 0.0, 0.0)}.get
    >>> fired([parse_trigger("shunned>0"), parse_trigger("threads_running>5")], list(FIGURES) + ["proxysql.connection_pool"], latest)
    ('shunned>0: shunned=1 (db2:3306)',)
    """
    names = list(collector_names)
    lines = []
    for trigger in triggers:
        found = figure(trigger.figure, names, latest)
        if found is not None and trigger.fires(found[0]):
            where = f" ({found[1]})" if found[1] else ""
            lines.append(f"{trigger.text}: {trigger.figure}={found[0]:g}{where}")
    return tuple(lines)
