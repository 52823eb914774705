"""Cell texts kept by value from frame to frame (proxytop.ui.table.CellTexts) give exactly the
cells that formatting every row again gives."""
from __future__ import annotations

from dataclasses import dataclass

from proxytop.metrics import units
from proxytop.ui.table import CellTexts, Column, fit_columns, row_cells


@dataclass(frozen=True)
class UnitColumn(Column):
    """Like GloStat's: the text depends on another key of the row."""

    def text(self, row):
        return f"{row.get(self.key)} {row.get('_unit', '')}".strip()


COLUMNS = [
    Column("name", "Name", 10, "<", numeric=False),
    Column("n", "N", 6),
    Column("rate", "Rate", 8, fmt=units.number, style=lambda r: "danger" if (r.get("rate") or 0) > 100 else None),
    UnitColumn("size", "Size", 8),
    Column("note", "Note", 12, "<", numeric=False),
]
ROWS = [
    {"name": "a", "n": 1, "rate": 12.5, "size": 3, "_unit": "MB"},
    {"name": "b", "n": 1.0, "rate": 150.0, "size": 3, "_unit": "GB"},  # same size value, other unit
    {"name": "c", "n": True, "rate": None, "size": 3},
    {"name": "a very long name", "n": None, "rate": 0.4, "size": None, "_style": "dim"},
    {"name": "down", "n": None, "rate": None, "size": None, "note": "timeout, retrying", "_spill": "note"},
    {"_kind": "subtotal", "name": "total", "n": 3, "rate": 163.3, "size": None},
    {"name": "a", "n": 1, "rate": 12.5, "size": 3, "_unit": "MB"},  # seen before: from the kept texts
]


def test_kept_texts_equal_formatting_every_row_again():
    fitted = fit_columns(COLUMNS, 60)
    texts = CellTexts(fitted)
    for _ in range(2):  # the second pass is served from what the first kept
        for row in ROWS:
            assert row_cells(row, fitted, texts) == row_cells(row, fitted), row


def test_a_column_reading_the_whole_row_is_formatted_each_time():
    fitted = fit_columns(COLUMNS, 60)
    texts = CellTexts(fitted)
    sizes = [row_cells(row, fitted, texts)[3][0].strip() for row in ROWS[:3]]
    assert sizes == ["3 MB", "3 GB", "3"]


def test_equal_numbers_of_other_types_keep_their_own_texts():
    fitted = [(Column("n", "N", 5), 5)]
    texts = CellTexts(fitted)
    assert [texts.cells({"n": v})[0][0].strip() for v in (1, 1.0, True, 1)] == ["1", "1", "True", "1"]
    assert [texts.cells({"n": v})[0][0].strip() for v in (2.5, 2, 2.5)] == ["2.5", "2", "2.5"]


def test_fits_only_the_same_columns_at_the_same_widths():
    fitted = fit_columns(COLUMNS, 60)
    texts = CellTexts(fitted)
    assert texts.fits(fit_columns(COLUMNS, 60))
    assert not texts.fits(fit_columns(COLUMNS, 30))
    assert not texts.fits(fit_columns(list(reversed(COLUMNS)), 60))
