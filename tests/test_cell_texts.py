"""Cell texts kept by value from frame to frame (proxytop.screens.table.CellTexts) give exactly the
cells that formatting every row again gives."""
from __future__ import annotations

from dataclasses import dataclass

from proxytop.metrics import units
from hypothesis import given, settings, strategies as st

from proxytop.screens.table import CellTexts, Column, Runs, fit_columns, row_cells


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
            if "_spill" not in row:
                assert texts.line(row) == Runs.joined(row_cells(row, fitted)), row


def test_a_column_reading_the_whole_row_is_formatted_each_time():
    fitted = fit_columns(COLUMNS, 60)
    texts = CellTexts(fitted)
    lines = ["".join(text for text, _ in texts.line(row)) for row in ROWS[:3]]
    start = sum(width + 1 for _, width in fitted[:3])  # the Size cell, after three cells and their gaps
    assert [line[start:start + fitted[3][1]].strip() for line in lines] == ["3 MB", "3 GB", "3"]


def test_equal_numbers_of_other_types_keep_their_own_texts():
    fitted = [(Column("n", "N", 5), 5)]
    texts = CellTexts(fitted)
    assert [texts.line({"n": v})[0][0].strip() for v in (1, 1.0, True, 1)] == ["1", "1", "True", "1"]
    assert [texts.line({"n": v})[0][0].strip() for v in (2.5, 2, 2.5)] == ["2.5", "2", "2.5"]


def test_fits_only_the_same_columns_at_the_same_widths():
    fitted = fit_columns(COLUMNS, 60)
    texts = CellTexts(fitted)
    assert texts.fits(fit_columns(COLUMNS, 60))
    assert not texts.fits(fit_columns(COLUMNS, 30))
    assert not texts.fits(fit_columns(list(reversed(COLUMNS)), 60))


# A row's line made in one pass (CellTexts.line) against its cells formatted afresh and joined
# (row_cells, then Runs.joined): the same runs for any row the table draws, kept texts or not.
STYLE_OF = lambda r: "danger" if r.get("rate") == 150.0 else None  # noqa: E731
LINE_COLUMNS = [
    Column("name", "Name", 6, "<", numeric=False, style=lambda r: "dim" if r.get("name") == "" else None),
    Column("n", "N", 4, summable=True),
    Column("rate", "Rate", 6, fmt=units.number, style=STYLE_OF),
    UnitColumn("size", "Size", 6),
    Column("note", "Note", 5, "<", numeric=False),
]
value = st.one_of(st.none(), st.sampled_from(["", "a", "a very long name", "7", "1.5"]),
                  st.sampled_from([0, 1, 1.0, True, 150.0, 12.5, 99999999]), st.lists(st.integers(), max_size=1))
line_row = st.fixed_dictionaries(
    {key: value for key in ("name", "n", "rate", "size", "note")},
    optional={"_kind": st.sampled_from(["row", "subtotal"]), "_style": st.sampled_from([None, "dim", "subtotal"]),
              "_unit": st.sampled_from(["MB", ""])})


@settings(max_examples=400, deadline=None)
@given(rows=st.lists(line_row, min_size=1, max_size=6), width=st.sampled_from([12, 20, 40]),
       cursor=st.booleans())
def test_a_line_made_in_one_pass_is_the_cells_joined(rows, width, cursor):
    fitted = fit_columns(LINE_COLUMNS, width)
    texts = CellTexts(fitted)
    for _ in range(2):  # the second pass from the texts kept by the first
        for row in rows:
            line = texts.line(row, cursor=cursor)
            assert line == Runs.joined(row_cells(row, fitted), cursor), row
            assert isinstance(line, Runs)


def test_a_spilling_row_has_no_line_of_its_own():
    fitted = fit_columns(COLUMNS, 60)
    assert CellTexts(fitted).line(ROWS[4]) is None  # row_cells merges its empty cells
