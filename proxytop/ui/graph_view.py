"""The graph of a row (g): each of the row's figures over time, one chart under the other.

Which figures a row has: the screen's numeric columns that proxytop has kept a history of for
that row (proxytop.metrics.history, fed by the controller each time the screen's rows are made
from a new reading). Pure: controller state and the history in, lines out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, List, Optional, Sequence, Tuple

from proxytop.metrics.history import FigureHistory
from proxytop.screens import chart
from proxytop.screens.figures import figure_key
from proxytop.screens.trends import event_legend
from proxytop.screens.table import Column

Segment = Tuple[str, Optional[str]]
Line = List[Segment]

WINDOWS = (("5 minutes", 300.0), ("1 hour", 3600.0), ("24 hours", 86400.0), ("all kept", None))
WHOLE = 3  # "all kept": in a replay, the whole recording (where a replay's graph starts)
CHART_LINES = 8  # a chart's least height: its title, five rows of dots, the time axis, markers
CURSOR_STEPS = 40  # ← / → move the time cursor by this share of the window


@dataclass(frozen=True)
class Graph:
    """What the graph view shows: a row of a screen, the window, the first figure shown, and
    the time cursor (None: none yet)."""

    screen: str
    row: Hashable  # the row's _id
    label: str
    window: int = 0
    first: int = 0
    cursor: Optional[float] = None
    # the rows that share the graphed row's first column (a hostgroup's backends), as
    # (row id, label); shown on the same charts when ``together``
    siblings: Tuple[Tuple[Hashable, str], ...] = ()
    together: bool = False


def siblings(columns: Sequence[Column], rows: Sequence[dict], row: dict, most: int = 6) -> Tuple[Tuple[Hashable, str], ...]:
    """The rows with the same value in the first column as ``row`` (itself first), at most
    ``most`` of them, each with a short label: the columns it does not share with the others.

    >>> from proxytop.screens.table import Column
    >>> cols = [Column("hg", "HG", 3, graphed=False), Column("server", "Server", 9, numeric=False)]
    >>> rows = [{"_id": 1, "hg": 20, "server": "a"}, {"_id": 2, "hg": 20, "server": "b"}, {"_id": 3, "hg": 10, "server": "c"}]
    >>> siblings(cols, rows, rows[1])
    ((2, 'b'), (1, 'a'))
    """
    if not columns:
        return ()
    key = columns[0].key
    same = [r for r in rows if r.get("_id") is not None and r.get("_kind") != "subtotal" and r.get(key) == row.get(key)]
    same = [row] + [r for r in same if r.get("_id") != row.get("_id")]
    rest = [c for c in columns[1:] if not (c.numeric and c.graphed)][:1]  # what tells them apart (a server)
    return tuple((r["_id"], (row_label(rest, r) or str(r["_id"]))[:30]) for r in same[:most])


def row_label(columns: Sequence[Column], row: dict) -> str:
    """A row's name for the graph's title: its text columns, as the table shows them."""
    parts = [c.text(row).strip() for c in columns if not (c.numeric and c.graphed)]
    return "  ".join(p for p in parts if p)[:80] or str(row.get("_id"))


def window_name(graph: Graph, recording: Optional[Tuple[float, float]]) -> str:
    return "the whole recording" if recording is not None and graph.window == WHOLE else WINDOWS[graph.window][0]


def span(graph: Graph, history: FigureHistory, keys: Sequence[tuple], now: float,
         recording: Optional[Tuple[float, float]] = None) -> Tuple[float, float]:
    """The window's start and end (wall seconds): the last minutes up to now; "all kept" from
    the oldest point, and in a replay the whole recording (its playing position marked)."""
    seconds = WINDOWS[graph.window][1]
    if seconds is None and recording is not None:
        return recording
    if seconds is not None:
        return now - seconds, now
    firsts = [s.first_time() for s in (history.series.get(k) for k in keys) if s is not None]
    first = min((t for t in firsts if t is not None), default=now - WINDOWS[0][1])
    return min(first, now - 60), now


def graph_lines(graph: Graph, columns: Sequence[Column], history: FigureHistory, now: float,
                width: int, room: int, markers: Sequence[chart.Marker] = (),
                recording: Optional[Tuple[float, float]] = None) -> Tuple[List[Line], int]:
    """The title line and as many charts as fit in ``room`` lines; also how many figures the
    row has (the controller stops scrolling at the last)."""
    shown = [c for c in columns if figure_key(graph.screen, graph.row, c.key) in history]
    keys = [figure_key(graph.screen, graph.row, c.key) for c in shown]
    start, end = span(graph, history, keys, now, recording)
    window = window_name(graph, recording)
    legend = event_legend(markers)
    if recording is not None:  # where the replay plays, under each chart
        markers = list(markers) + [chart.Marker(now, "\u25b2", "header")]
    title: Line = [(f"{graph.label}", "header_title"), (f"   {window}", "header")]
    if graph.cursor is not None:
        title.append((f"   cursor {chart.clock_label(graph.cursor, end - start)}", "warning_bold"))
    if legend:  # events under the charts: what their letters mean
        title.append((legend, "dim"))
    lines: List[Line] = [title]
    if not shown:
        lines.append([("No history of this row yet: its figures are kept from the first reading after its "
                       "screen was shown.", "dim")])
        return lines, 0
    room = max(1, room - 1)
    fit = max(1, room // CHART_LINES)
    chosen = shown[graph.first:graph.first + fit]
    height = max(4, room // len(chosen))
    rows = graph.siblings if graph.together and graph.siblings else ((graph.row, ""),)
    for column in chosen:
        plots = [chart.Plot(label, history.points(figure_key(graph.screen, row, column.key), start, end),
                            chart.SERIES_STYLES[i % len(chart.SERIES_STYLES)]) for i, (row, label) in enumerate(rows)]
        title: Line = [(column.title.strip(), "label")]
        for plot in plots:
            values = [v for t, v in plot.points if not math.isnan(v) and t <= now]  # (a replay's: at where it plays)
            latest = column.fmt(values[-1]).strip() if values else "no value"
            title += ([(f"  {chart.LEGEND_MARK} ", plot.style), (plot.label, None)] if len(plots) > 1 else []) + \
                [(f"  now {latest}" if len(plots) == 1 else f" {latest}", "header")]
        if len(plots) == 1 and column.help:
            title.append((f"  {column.help}", "dim"))
        lines.append(chart.clip(title, width))
        lines += chart.draw(plots, width, height - 1, start, end, fmt=lambda v, c=column: c.fmt(v).strip(),
                            markers=markers, cursor=graph.cursor, label_width=8)
    if len(shown) > len(chosen):
        lines.append([(f"figures {graph.first + 1}-{graph.first + len(chosen)} of {len(shown)}: "
                       "\u2191\u2193 for the others", "dim")])
    return lines, len(shown)
