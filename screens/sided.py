"""ProxySQL screens with a MySQL and a PostgreSQL side (``m`` switches, ``--side`` starts).

A screen becomes two-sided by listing :class:`SidedScreen` before ``Screen`` in its bases and
using ``self.on_side(Collector.name)`` where it reads a snapshot. Its ``collectors()`` stay
the MySQL-side ones; the PostgreSQL twins (collectors.sides) are registered with them and
only the current side's poll. What differs is declared, not coded twice:

- ``pgsql_titles``: {column key: (title, help)} for the columns named differently there
  (``Schema`` is ``Database``); keys stay the same, so sort, filter and batch output work
  unchanged.
- ``pgsql_columns``: extra columns only the PostgreSQL side has, shown when a reading
  has them.
- raw columns named differently (``database`` for ``schemaname``, ``sqlstate`` for
  ``errno``): ``proxytop.metrics.sides.column(side, "schemaname")`` / ``pick(row, side, ...)``.
- messages: notes, drill-downs and status lines name MySQL-side tables and settings
  (``runtime_mysql_servers``, ``mysql-max_connections``); on the PostgreSQL side they are
  said of its own (``runtime_pgsql_servers``) without each screen repeating them.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.core import Collector
from proxytop.core import Snapshot
from proxytop.collectors.proxysql import GlobalStatus, HeaderStatus
from proxytop.collectors.sides import for_side, twin_name
from proxytop.metrics.sides import MYSQL, PGSQL, Side, pgsql_problem, side_of
from proxytop.screens.base import Detail
from proxytop.screens.table import Column

HEADER = GlobalStatus.name  # the whole global status (GloStat reads it)
HEADER_NARROW = HeaderStatus.name  # its few rows the header shows, when nothing on view reads the whole


def _segment(side: Side, text: str, style: Optional[str]) -> Tuple[str, Optional[str]]:
    # Unstyled segments are data (a session's query, a rule's pattern): never rewritten.
    return (side.text(text), style) if style is not None else (text, style)


def _text_of_side(side: Side, value):
    """Notes (lines of segments), a Detail or a status line, said of ``side``: the styled
    segments (labels, messages), not the data."""
    if side is MYSQL or value is None:
        return value
    if isinstance(value, str):
        return side.text(value)
    if isinstance(value, Detail):
        return dataclasses.replace(value, lines=tuple(tuple(_segment(side, t, s) for t, s in line)
                                                      for line in value.lines))
    return [tuple(_segment(side, t, s) for t, s in line) for line in value]


def _said_of_side(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        return _text_of_side(self.side, method(self, *args, **kwargs))

    return wrapper


class SidedScreen:
    """Mixin: the current side is ``self.side``; ``set_side`` changes it."""

    sided = True
    pgsql_titles: Mapping[str, Tuple[str, str]] = {}
    pgsql_columns: Sequence[Column] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Messages are written once, of the MySQL side: each screen's own notes, detail and
        # status are said of the current side when they are shown.
        for name in ("notes", "detail", "status"):
            if name in cls.__dict__:
                setattr(cls, name, _said_of_side(cls.__dict__[name]))

    def __init__(self, config=None):
        super().__init__(config)
        # A screen whose columns are a property (QueryRules: fewer for the stats user) asks
        # columns_for() itself; the others get theirs set here, per side.
        self._columns_property = isinstance(inspect.getattr_static(type(self), "columns", None), property)
        self._mysql_columns = () if self._columns_property else tuple(type(self).columns)
        self._columns_of: Dict[Tuple[str, Tuple[str, ...]], Tuple[Column, ...]] = {}
        args = getattr(config, "args", None)
        self.set_side(side_of(getattr(args, "side", None)))

    @property
    def side(self) -> Side:
        return side_of(self.options.get("side"))

    def set_side(self, side: Side) -> None:
        """Show ``side`` from now on (the controller re-activates the collectors)."""
        self.options["side"] = side.key  # part of the rows' token: rows are made again
        if not self._columns_property:
            self.columns = self.columns_for(side)

    def columns_for(self, side: Side, present: Sequence[str] = (),
                    base: Optional[Sequence[Column]] = None) -> Tuple[Column, ...]:
        """The columns of ``side`` (from ``base``, the MySQL-side ones): PostgreSQL titles, and
        the extra PostgreSQL columns whose key is in ``present`` (those the latest reading has).
        Made once per combination: the same tuple each time, as the renderer's cache wants."""
        base = self._mysql_columns if base is None else base
        token = (side.key, tuple(c.key for c in self.pgsql_columns if c.key in present), tuple(base))
        found = self._columns_of.get(token)
        if found is None:
            found = tuple(base)
            if side is PGSQL:
                found = tuple(dataclasses.replace(c, title=self.pgsql_titles[c.key][0], help=self.pgsql_titles[c.key][1])
                              if c.key in self.pgsql_titles else c for c in found)
                found += tuple(c for c in self.pgsql_columns if c.key in token[1])
            self._columns_of[token] = found
        return found

    # --- collectors: both sides registered, the current side's polled -------------------------
    def _collector_cache(self) -> List[Collector]:
        if not hasattr(self, "_collectors_made"):
            mysql = list(self.collectors())
            self._mysql_collectors = mysql
            twins = [for_side(c, PGSQL) for c in mysql]
            header = for_side(GlobalStatus(), PGSQL)  # the header's reading on the PostgreSQL side
            narrow = for_side(HeaderStatus(), PGSQL)
            self._collectors_made = mysql + [t for t, c in zip(twins, mysql) if t is not c] + [header, narrow]
        return self._collectors_made

    def on_side(self, name: str) -> str:
        """The current side's collector for the MySQL-side collector ``name``."""
        return self.name_on(self.side, name)

    def name_on(self, side: Side, name: str) -> str:
        """``side``'s collector for the MySQL-side collector ``name`` (the header alarm reads
        both sides whichever is shown)."""
        if side is MYSQL:
            return name
        names = self.__dict__.setdefault("_pgsql_names", {})  # asked on every frame drawn
        found = names.get(name)
        if found is None:
            self._collector_cache()
            found = next((for_side(c, PGSQL).name for c in self._mysql_collectors if c.name == name),
                         twin_name(name, PGSQL))
            names[name] = found
        return found

    def active_collectors(self) -> List[str]:
        self._collector_cache()
        return [for_side(c, self.side).name for c in self._mysql_collectors]

    def status(self, view) -> Optional[str]:
        for name in self.active_collectors():
            message = view.error(name)
            if message:
                return message
        return None


def _header_side(screen) -> Side:
    return PGSQL if getattr(screen, "sided", False) and screen.side is PGSQL else MYSQL


def header_collector(screen, active: Optional[Sequence[str]] = None) -> str:
    """The global-status reading the header polls: the current side's (the PostgreSQL side's
    connections and transactions are in stats_pgsql_global), the whole table when the screen
    (or ``active``, the names polling) reads it anyway, else only the rows the header shows."""
    side = _header_side(screen)
    whole = twin_name(HEADER, side)
    if whole in (screen.active_collectors() if active is None else active):
        return whole
    return twin_name(HEADER_NARROW, side)


def header_readings(pair_of, screen) -> Tuple[Optional[Snapshot], Optional[Snapshot]]:
    """(previous, current): the two newest readings of the current side's global status,
    whole or narrow, ``pair_of(name)`` giving each collector's last two (an engine's
    ``last_two``, a DataView's ``pair``). Both carry the header's variables, so the rates
    span a switch between them (to GloStat and back) and a recording made before the narrow
    reading existed replays with its header."""
    side = _header_side(screen)
    readings = [s for name in (twin_name(HEADER_NARROW, side), twin_name(HEADER, side))
                for s in pair_of(name) if s is not None]
    if not readings:
        return None, None
    readings.sort(key=lambda s: s.taken_at)
    return (readings[-2] if len(readings) > 1 else None), readings[-1]


def header_label(screen, session) -> Optional[str]:
    """"MySQL" / "PgSQL" for the header, when the screen is two-sided and this ProxySQL has
    (or is asked for) a PostgreSQL side; None otherwise (2.x: nothing to tell apart)."""
    if not getattr(screen, "sided", False):
        return None
    if screen.side is PGSQL or (session is not None and pgsql_problem(session) is None):
        return screen.side.label
    return None


def switch_side(controller) -> None:
    """``m``: every two-sided screen to the other side, if this ProxySQL has one."""
    current = next((s.side for s in controller.screens if getattr(s, "sided", False)), MYSQL)
    target = MYSQL if current is PGSQL else PGSQL
    if target is PGSQL:
        source = controller.view.source("proxysql")
        session = getattr(source, "session", None)
        if session is None:
            controller.say("not connected to ProxySQL yet: its PostgreSQL side is not known", "error")
            return
        problem = pgsql_problem(session)
        if problem:
            controller.say(problem, "error")
            return
    set_all(controller.screens, target)
    controller.activate()
    if target is PGSQL:
        controller.say("PostgreSQL side: the stats_pgsql_* tables (m: back to MySQL)")
    else:
        controller.say("MySQL side: the stats_mysql_* tables")


def set_all(screens, side: Side) -> None:
    for screen in screens:
        if getattr(screen, "sided", False):
            screen.set_side(side)
