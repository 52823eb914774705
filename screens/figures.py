"""What the graphs draw is kept from: the numbers of a screen's rows, each under
``(screen key, row id, column key)`` in a FigureHistory (proxytop.metrics.history). Used by
the controller as rows are made, and by a replay's scan of a whole recording."""
from __future__ import annotations

from typing import Callable, Hashable, Iterable, List, Optional, Sequence

from proxytop.core import Snapshot
from proxytop.metrics.history import FigureHistory
from proxytop.screens.table import Column

# The rows whose figures are kept: the first of the screen's order (its busiest, as sorted),
# so 10,000 digests keep a bounded history (docs/graphs.md).
GRAPHED_ROWS = 100


def figure_key(screen: str, row: Hashable, column: str) -> tuple:
    return (screen, row, column)


def graphed_columns(columns: Sequence[Column], row: dict) -> List[Column]:
    """The row's columns that hold numbers (the figures a graph can show)."""
    return [c for c in columns if c.numeric and c.graphed and isinstance(row.get(c.key), (int, float))
            and not isinstance(row.get(c.key), bool)]


def newest_reading(latest: Callable[[str], Optional[Snapshot]], names: Iterable[str]) -> Optional[Snapshot]:
    """The newest of the latest readings of ``names`` (None before the first)."""
    readings = [s for s in map(latest, names) if s is not None]
    return max(readings, key=lambda s: s.taken_at, default=None)


def keep_rows(figures: FigureHistory, screen, rows: Sequence[dict], at: float, view) -> None:
    """The numbers of the first GRAPHED_ROWS rows (of those with an ``_id``), at wall time ``at``.
    Rows a screen fills in only when shown (Queries' digests) are filled in first."""
    rows = [row for row in rows if row.get("_id") is not None][:GRAPHED_ROWS]
    screen.complete_rows(rows, view)
    for row in rows:
        for column in graphed_columns(screen.columns, row):
            figures.add(figure_key(screen.key, row["_id"], column.key), at, row[column.key])
