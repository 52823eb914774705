"""The notes line that says what a screen asks of ProxySQL: which stats tables its readings
name and how often. ProxySQL rebuilds a stats table whole before answering any query that names
it (ProxySQL_Admin::GenericRefreshStatistics; see docs/proxysql-load.md), so what a reading
costs ProxySQL is that table's rows, whatever the query selects.

Each screen declares the collectors whose tables it reads (``asks``); the line is made from
them and from what the engine does now: the interval in force, the rows of the latest reading.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from proxytop.collectors.sides import name_on_side
from proxytop.core import Table
from proxytop.metrics import units
from proxytop.screens.sided import header_collector

Segment = Tuple[str, Optional[str]]


def rows_text(data: Any, declared: str = "") -> str:
    """How many rows a reading's table had: what ProxySQL rebuilt for it.

    >>> rows_text(Table(("a",), (("1",), ("2",)))), rows_text({"x": "1"}), rows_text(None, "54 rows")
    ('2 rows', '1 row', '54 rows')
    """
    if isinstance(data, (Table, dict)):
        count = len(data.rows) if isinstance(data, Table) else len(data)
        return f"{count:,} row{'' if count == 1 else 's'}"
    return declared


def asks_line(screen, view, asks: Sequence[Any]) -> Tuple[Segment, ...]:
    """'asks ProxySQL: stats_mysql_commands_counters (54 rows) every 1s, stats_mysql_global
    (header) every 1s' for the collectors ``asks`` (the MySQL-side classes or instances) on the
    side ``screen`` (a SidedScreen) shows: the tables ProxySQL rebuilds for each read, their rows
    and how often."""
    side = screen.side
    header = header_collector(screen)
    pace = view.interval_in_force(header)
    parts = []
    for collector in asks:
        name = screen.on_side(collector.name)
        every = view.interval_in_force(name)
        latest = view.latest(name)
        rows = rows_text(latest.data if latest is not None else None, getattr(collector, "rebuilt", ""))
        text = name_on_side(collector.table, side) + (f" ({rows})" if rows else "") + f" every {units.interval(every)}"
        slower = getattr(collector, "slower_while", "")
        if slower and every and pace and every > pace:
            text += f" {slower}"
        parts.append(text)
    if not any(screen.on_side(c.name) == header for c in asks):
        parts.append(f"{name_on_side('stats_mysql_global', side)} (header) every {units.interval(pace)}")
    return (("asks ProxySQL: " + ", ".join(parts), "dim"),)
