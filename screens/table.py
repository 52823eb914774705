"""One table model for every screen: declared columns, sorting, filtering, layout.

The same column declarations drive the curses screen and the non-interactive output. All
functions here are pure: rows in, rows (or text) out.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.metrics import units
from proxytop.metrics.rates import to_number
from proxytop.screens import filters

Row = Dict[str, Any]
# Special row keys: "_id" identifies a row across refreshes (the cursor follows it),
# "_kind" is "row" or "subtotal", "_group" groups rows for subtotals, "_style" styles the row,
# "_spill" names a column whose text may run left over the empty cells before it (a down
# server's reason where its numbers would be).


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int
    align: str = ">"  # ">" right, "<" left
    fmt: Callable[[Any], str] = units.plain
    style: Optional[Callable[[Mapping], Optional[str]]] = None  # a style name for the cell
    priority: int = 5  # when the terminal is narrow, higher numbers give way first
    numeric: bool = True
    summable: bool = False  # added up in subtotal rows
    flexible: bool = False  # takes the width left over (e.g. a query text)
    graphed: bool = True  # a figure over time (g); False for a number that names the row (a hostgroup, an id)
    help: str = ""
    # The unit of the row's value when it is a duration or a size (a rate: "B/s"), for the
    # filter to read "time>2s" in it (proxytop.metrics.quantities); "" for counts and text.
    unit: str = ""
    # What a bare figure in a filter means when it is not seconds or bytes (iostat's kB).
    bare_unit: str = ""

    def text(self, row: Mapping) -> str:
        value = row.get(self.key)
        if value is None and row.get("_kind") == "subtotal" and not self.summable:
            return ""
        try:
            return self.fmt(value)
        except (TypeError, ValueError, ArithmeticError):  # e.g. an infinite number: shown as it is
            return str(value)


@dataclass(frozen=True)
class TableState:
    """The user's view of one table: sort and filter. Immutable; handlers return new ones."""

    sort_key: str
    descending: bool = False
    filter: filters.Filter = filters.EMPTY

    def with_sort(self, key: str, descending: Optional[bool] = None) -> "TableState":
        return replace(self, sort_key=key, descending=self.descending if descending is None else descending)


TEXT_SORT_VALUES_KEPT = 4096
_text_sort_values: Dict[str, Tuple[int, Any]] = {}


def sort_value(value: Any) -> Tuple[int, Any]:
    """A None-safe sort key: numbers by value, text case-insensitively, missing values last."""
    kind = value.__class__
    if kind is int or kind is float:  # the usual case: a value the screen made a number
        return (0, value)
    if value is None:
        return (2, 0)
    if kind is str:  # host names, statuses, users: the same texts sorted every frame
        known = _text_sort_values.get(value)
        if known is None:
            number = to_number(value)
            known = (0, number) if number is not None else (1, value.lower())
            if len(_text_sort_values) >= TEXT_SORT_VALUES_KEPT:
                _text_sort_values.clear()
            _text_sort_values[value] = known
        return known
    number = to_number(value)
    if number is not None:
        return (0, number)
    return (1, str(value).lower())


def _sort_key(key: str) -> Callable[[Mapping], Tuple[int, Any]]:
    """sort_value() of a row's ``key``, numbers (what screens make) without a call more."""
    def value_of(row: Mapping) -> Tuple[int, Any]:
        value = row.get(key)
        kind = value.__class__
        if kind is int or kind is float:
            return (0, value)
        return sort_value(value)

    return value_of


def sort_rows(rows: Sequence[Row], key: str, descending: bool = False, tiebreak: Sequence[str] = ()) -> List[Row]:
    """Sort by one column, missing values always last whichever the direction."""
    rows = list(rows)
    if len(rows) < 2:
        return rows
    for extra in reversed(tuple(tiebreak)):
        rows.sort(key=_row_sort_key(rows, extra))
    present = [r for r in rows if r.get(key) is not None]
    missing = [r for r in rows if r.get(key) is None] if len(present) < len(rows) else []
    present.sort(key=_row_sort_key(present, key), reverse=descending)
    return present + missing


def _row_sort_key(rows: Sequence[Mapping], key: str) -> Callable[[Mapping], Any]:
    """The sort key of ``rows`` by ``key``: the value itself (taken in C) when every row's is
    an int or a float, the usual case of the column sorted on (numbers sort as their
    sort_value does); else :func:`_sort_key`."""
    take = itemgetter(key)
    try:
        if set(map(type, map(take, rows))) <= _NUMBER_TYPES:
            return take
    except (KeyError, TypeError):  # a row without the key: None to sort_value
        pass
    return _sort_key(key)


_NUMBER_TYPES = frozenset((int, float))


def cell_text(columns_by_key: Mapping[str, Column]) -> Callable[[Mapping, str], str]:
    def text(row: Mapping, key: str) -> str:
        column = columns_by_key.get(key)
        return column.text(row) if column else ("" if row.get(key) is None else str(row.get(key)))

    return text


def filter_rows(rows: Sequence[Row], columns: Sequence[Column], flt: filters.Filter) -> List[Row]:
    if flt.empty:
        return list(rows)
    by_key = {c.key: c for c in columns}
    text = cell_text(by_key)
    keys = [c.key for c in columns]
    return [r for r in rows if filters.matches(flt, r, text, keys)]


def subtotal(group: Any, rows: Sequence[Row], columns: Sequence[Column], label_key: str, label: str) -> Row:
    total: Row = {"_kind": "subtotal", "_group": group, "_id": ("subtotal", group), label_key: label}
    for column in columns:
        if column.summable:
            key = column.key
            added = None
            for row in rows:
                value = row.get(key)
                kind = value.__class__
                if kind is not int and kind is not float:  # numbers are what screens make
                    value = to_number(value)
                    if value is None:
                        continue
                added = value if added is None else added + value
            total[key] = added
    return total


def arrange(
    rows: Sequence[Row],
    columns: Sequence[Column],
    state: TableState,
    group_key: Optional[str] = None,
    subtotal_label: Optional[Callable[[Any], Tuple[str, str]]] = None,
    tiebreak: Sequence[str] = (),
) -> List[Row]:
    """Filter, then sort; with ``group_key`` rows stay in groups (sorted by the same column)
    and a group of two or more visible rows is followed by its subtotal row."""
    visible = filter_rows(rows, columns, state.filter)
    if group_key is None:
        return sort_rows(visible, state.sort_key, state.descending, tiebreak)
    groups: Dict[Any, List[Row]] = {}
    for row in visible:
        groups.setdefault(row.get(group_key), []).append(row)
    blocks = []
    for group, members in groups.items():
        ordered = sort_rows(members, state.sort_key, state.descending, tiebreak)
        total = None
        if len(members) > 1 and subtotal_label is not None:
            label_key, label = subtotal_label(group)
            total = subtotal(group, members, columns, label_key, label)
        head = total if total is not None else ordered[0]
        blocks.append((head, group, ordered, total))
    # Groups follow the sort column too (by their subtotal, or their single row).
    present = [b for b in blocks if b[0].get(state.sort_key) is not None]
    missing = [b for b in blocks if b[0].get(state.sort_key) is None]
    present.sort(key=lambda b: (sort_value(b[0].get(state.sort_key)), sort_value(b[1])), reverse=state.descending)
    missing.sort(key=lambda b: sort_value(b[1]))
    arranged: List[Row] = []
    for _head, _group, ordered, total in present + missing:
        arranged.extend(ordered)
        if total is not None:
            arranged.append(total)
    return arranged


def fit_columns(columns: Sequence[Column], width: int, gap: int = 1, keep: Optional[str] = None) -> List[Tuple[Column, int]]:
    """Which columns fit in ``width``, in declared order, with their widths.

    Columns give way by priority (highest number first) instead of wrapping; the column
    ``keep`` (the sort column) stays; a flexible column takes what is left over.
    """
    chosen = list(enumerate(columns))  # (declared position, column): the later gives way first

    def needed(cols):
        return sum(c.width for _, c in cols) + gap * max(0, len(cols) - 1)

    while len(chosen) > 1 and needed(chosen) > width:
        candidates = [pc for pc in chosen if pc[1].key != keep] or chosen
        victim = max(candidates, key=lambda pc: (pc[1].priority, pc[0]))
        chosen = [pc for pc in chosen if pc is not victim]
    spare = max(0, width - needed(chosen))
    result = []
    for _, column in chosen:
        extra = spare if column.flexible else 0
        if column.flexible:
            spare = 0
        result.append((column, min(column.width + extra, max(1, width))))
    return result


def rows_word(count: int) -> str:
    """'row' or 'rows' after a count.

    >>> f"1 {rows_word(1)}, 0 {rows_word(0)}"
    '1 row, 0 rows'
    """
    return "row" if count == 1 else "rows"


def clip(text: str, width: int, align: str = "<") -> str:
    """Fit text in a cell: cut with '…' when too long, pad by alignment."""
    if width <= 0:
        return ""
    if len(text) > width:
        text = text[: max(0, width - 1)] + "\u2026" if width > 1 else text[:1]
    return text.rjust(width) if align == ">" else text.ljust(width)


def header_cells(fitted: Sequence[Tuple[Column, int]], state: TableState) -> List[Tuple[str, str]]:
    """Column titles, the sort column marked with an arrow."""
    cells = []
    for column, width in fitted:
        title = column.title
        if column.key == state.sort_key:
            title = title[: max(1, width - 1)] + ("\u2193" if state.descending else "\u2191")
        cells.append((clip(title, width, column.align), "sorted" if column.key == state.sort_key else "title"))
    return cells


class Runs(list):
    """A line whose neighbouring segments differ in style and none is empty (made by
    :meth:`joined`): the painter sends it as it is, without joining runs again
    (proxytop.ui.app.join_runs)."""

    @classmethod
    def joined(cls, cells: Sequence[Tuple[str, Optional[str]]], cursor: bool = False) -> "Runs":
        """Cells with a space between them, as runs of one style: what the painter's runs of
        the cells and gaps would be (proxytop.ui.app.join_runs), made at once. A row is some forty
        segments but a few runs, and the painter makes one curses call per run. On the
        cursor's row every style is drawn reversed, the gaps too.

        >>> Runs.joined([("a", None), ("b", None), ("c", "dim"), ("d", "dim")])
        [('a b ', None), ('c', 'dim'), (' ', None), ('d', 'dim')]
        >>> Runs.joined([("a", None), ("b", "dim")], cursor=True)
        [('a ', 'cursor'), ('b', 'dim+cursor')]
        """
        gap = "cursor" if cursor else None
        line = cls()
        texts: List[str] = []  # the run being made, of style ``current``
        current = gap
        first = True
        for text, style in cells:
            if first:
                first = False
            elif current == gap:
                texts.append(" ")
            else:
                line.append(("".join(texts), current))
                texts, current = [" "], gap
            if not text:
                continue
            if cursor:
                style = (style + "+cursor") if style else "cursor"
            if style == current:
                texts.append(text)
            else:
                if texts:
                    line.append(("".join(texts), current))
                texts, current = [text], style
        if texts:
            line.append(("".join(texts), current))
        return line


def row_cells(row: Row, fitted: Sequence[Tuple[Column, int]]) -> List[Tuple[str, Optional[str]]]:
    """The cells of one row as (text, style name)."""
    subtotal = row.get("_kind") == "subtotal"
    cells = []
    row_style = row.get("_style") or ("subtotal" if subtotal else None)
    for column, width in fitted:
        style = column.style(row) if column.style and not subtotal else None
        cells.append((clip(column.text(row), width, column.align), style or row_style))
    spill = row.get("_spill")
    if spill is not None:
        cells = _spilled(row, fitted, cells, spill)
    return cells


def _spilled(row: Row, fitted, cells, key: str, gap: int = 1):
    """Merge the cell of column ``key`` with the run of empty (None) cells just before it.

    >>> cols = [(Column("a", "A", 3), 3), (Column("b", "B", 4), 4), (Column("n", "N", 5, "<"), 5)]
    >>> [text for text, _ in row_cells({"a": 1, "n": "timeout, retrying", "_spill": "n"}, cols)]
    ['  1', 'timeout, …']
    """
    keys = [column.key for column, _ in fitted]
    if key not in keys:
        return cells
    end = keys.index(key)
    start = end
    while start > 0 and row.get(keys[start - 1]) is None:
        start -= 1
    if start == end:
        return cells
    column = fitted[end][0]
    width = sum(w for _, w in fitted[start:end + 1]) + gap * (end - start)
    merged = (clip(column.text(row), width, column.align), cells[end][1])
    return cells[:start] + [merged] + cells[end + 1:]


def next_sort_key(columns: Sequence[Column], current: str, step: int = 1) -> str:
    keys = [c.key for c in columns]
    if current not in keys:
        return keys[0]
    return keys[(keys.index(current) + step) % len(keys)]
