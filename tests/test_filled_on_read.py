"""screens.base.FilledOnRead: rows built only when read, and counted without being built."""
from __future__ import annotations

from proxytop.ui.controller import count_data_rows
from proxytop.screens.base import FilledOnRead


class Frame:
    """A reading kept as columns: ids and a row per number, counting the rows it builds."""

    def __init__(self, size: int):
        self.ids = [f"id{n}" for n in range(size)]
        self.built = 0

    def row(self, n: int) -> dict:
        self.built += 1
        return {"n": n}


def test_rows_are_built_when_read_by_index_and_kept():
    frame = Frame(5)
    rows = FilledOnRead(frame, [4, 2, 0])
    assert rows[0] == {"_id": "id4", "n": 4} and frame.built == 1
    assert rows[0] is rows[0] and frame.built == 1  # kept
    assert [r["_id"] for r in rows] == ["id4", "id2", "id0"] and frame.built == 1  # iterating builds none
    assert rows.filled() == [{"_id": "id4", "n": 4}, {"_id": "id2", "n": 2}, {"_id": "id0", "n": 0}]


def test_the_status_line_counts_rows_filled_on_read_without_building_or_iterating_them():
    frame = Frame(20000)
    rows = FilledOnRead(frame, range(20000))
    iterated = []
    rows.__class__ = type("Watched", (FilledOnRead,), {"__iter__": lambda self: iterated.append(1) or iter(())})
    assert count_data_rows(rows) == 20000
    assert frame.built == 0 and not iterated
    plain = [{"a": 1}, {"_kind": "subtotal"}, {"a": 2}]  # other screens' rows: subtotals not counted
    assert count_data_rows(plain) == 2
