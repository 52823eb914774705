"""A ProxySQL collector's PostgreSQL-side twin: the same collector reading the pgsql table.

Every ProxySQL collector is written for the MySQL side (``table = "stats_mysql_X"``, settings
``mysql-*``). ``for_side(collector, PGSQL)`` returns its twin: a copy named
``proxysql.pgsql.<name>`` that reads ``stats_pgsql_X`` (and asks for ``pgsql-*`` settings),
or the collector itself when its table serves both sides (stats_memory_metrics). Twins have
names of their own, so the engine keeps their readings apart and recordings, replay and
batch output carry both sides without knowing of them.

A twin never sends a query to a ProxySQL without a PostgreSQL side: it says so instead.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Dict

from proxytop.core import Collector
from proxytop.errors import NotInThisVersion
from proxytop.metrics.sides import MYSQL, NO_PGSQL, PGSQL, Side, column, has_pgsql_tables

PGSQL_PREFIX = "proxysql.pgsql."


def twin_name(name: str, side: Side) -> str:
    """A MySQL-side collector's name on ``side``.

    >>> twin_name("proxysql.connection_pool", PGSQL), twin_name("proxysql.connection_pool", MYSQL)
    ('proxysql.pgsql.connection_pool', 'proxysql.connection_pool')
    """
    if side is MYSQL:
        return name
    return PGSQL_PREFIX + (name[len("proxysql."):] if name.startswith("proxysql.") else name)


def name_on_side(name: str, side: Side) -> str:
    """A MySQL-side table, setting or column name as ``side`` names it.

    >>> [name_on_side(n, PGSQL) for n in ("runtime_mysql_users", "mysql-query_digests", "schemaname", "digest")]
    ['runtime_pgsql_users', 'pgsql-query_digests', 'database', 'digest']
    """
    table = side.table(name)
    if table is not None:
        return table
    return side.variable(name) if name.startswith("mysql-") else column(side, name)


def tables_on_side(tables: Any, side: Side) -> Any:
    """A frozen declaration of table, column and setting names (collectors.digest.DigestTables),
    with each name as ``side`` has it: one declaration serves both sides."""
    names = {f.name: getattr(tables, f.name) for f in dataclasses.fields(tables)}
    return dataclasses.replace(tables, **{key: name_on_side(value, side) for key, value in names.items()
                                          if isinstance(value, str)})


def _changes(collector: Collector, side: Side) -> Dict[str, Any]:
    """The attributes that differ on ``side``: its table (or its declaration of table and
    column names, ``tables``, or of several tables, ``logs``), its ``mysql-*`` settings."""
    changes: Dict[str, Any] = {}
    table = getattr(collector, "table", "")
    if table and side.table(table) not in (None, table):
        changes["table"] = side.table(table)
    tables = getattr(collector, "tables", None)
    if dataclasses.is_dataclass(tables) and not isinstance(tables, type):
        renamed = tables_on_side(tables, side)
        if renamed != tables:
            changes["tables"] = renamed
    logs = getattr(collector, "logs", None)
    if logs:  # declared tables of one kind each (collectors.monitor.MonitorLog), of the sides that keep them
        renamed = tuple(tables_on_side(log, side) for log in logs if side.key in getattr(log, "sides", (side.key,)))
        if renamed != tuple(logs):
            changes["logs"] = renamed
    wanted = getattr(collector, "wanted", None)
    if wanted:
        renamed = tuple(side.variable(name) for name in wanted)
        if renamed != tuple(wanted):
            changes["wanted"] = renamed
    return changes


def for_side(collector: Collector, side: Side) -> Collector:
    """The collector that reads ``side``'s version of what ``collector`` reads: made once and
    kept on the collector (a twin has state of its own, and the engine knows it by that object)."""
    if side is MYSQL:
        return collector
    twin = collector.__dict__.get("_pgsql_twin")
    if twin is None:
        twin = _twin(collector, side)
        collector._pgsql_twin = twin  # type: ignore[attr-defined]
        twin._pgsql_twin = twin  # type: ignore[attr-defined]
    return twin


def _twin(collector: Collector, side: Side) -> Collector:
    changes = _changes(collector, side)
    if not changes:
        return collector  # one table for both sides
    twin = copy.copy(collector)
    twin.__dict__.update(changes)
    twin.name = twin_name(collector.name, side)
    if callable(getattr(twin, "reset", None)):
        twin.reset()  # state of its own: a copy would share the original's (monitor logs: where each stopped)
    original = type(collector).collect

    def collect(handle, _collector=twin, _collect=original):
        # Asked of a 2.x ProxySQL (``--side pgsql``, a replay's option): one plain line, no query.
        if handle is not None and hasattr(handle, "tables") and getattr(handle, "version", None) is not None \
                and not has_pgsql_tables(handle.version, handle.tables):
            raise NotInThisVersion(NO_PGSQL)
        return _collect(_collector, handle)

    twin.collect = collect  # type: ignore[method-assign]
    return twin


def pgsql_twins(collectors):
    """The PostgreSQL-side collectors among (and for) ``collectors``, shared ones left out."""
    return [twin for twin in (for_side(c, PGSQL) for c in collectors) if all(twin is not c for c in collectors)]
