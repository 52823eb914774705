"""A table row drawn as runs straight from its values (proxytop.ui.table.CellTexts.line) is
exactly the row's cells joined (proxytop.ui.view._join), whatever the styles, empty cells,
the cursor and the values seen before."""
from __future__ import annotations

import itertools
import random

from proxytop.metrics import units
from proxytop.ui.table import CellTexts, Column, fit_columns, row_cells
from proxytop.ui.view import _join

STYLES = (None, "good", "danger", "")


def styled(key):
    return lambda row: row.get("_s_" + key)


COLUMNS = [
    Column("a", "A", 4, fmt=units.scaled),
    Column("b", "B", 6, "<", numeric=False, style=styled("b")),
    Column("c", "C", 5, fmt=units.human_bytes, style=styled("c")),
    Column("d", "D", 3, "<", numeric=False),
    Column("e", "E", 7, fmt=units.percent, style=styled("e")),
]


def rows(count: int, seed: int = 7):
    pick = random.Random(seed)
    for _ in range(count):
        row = {"a": pick.choice([None, 1, 2.5, 1234]), "b": pick.choice(["", "ONLINE", "x" * 9, None]),
               "c": pick.choice([None, 0, 2048.0]), "d": pick.choice(["", "y", None]),
               "e": pick.choice([None, 12.25, 100])}
        for key in "bce":
            row["_s_" + key] = pick.choice(STYLES)
        if pick.random() < 0.2:
            row["_style"] = pick.choice(("dim", "warning"))
        yield row


def test_row_lines_are_the_cells_joined():
    fitted = fit_columns(COLUMNS, 40)
    texts = CellTexts(fitted)
    for row, cursor in itertools.product(list(rows(400)), (False, True)):
        assert texts.line(row, cursor) == _join(row_cells(row, fitted), cursor=cursor), (row, cursor)


def test_a_changed_value_is_drawn_with_its_new_text():
    fitted = fit_columns(COLUMNS, 40)
    texts = CellTexts(fitted)
    before = texts.line({"a": 1, "b": "ONLINE", "c": 0, "d": "y", "e": 1})
    after = texts.line({"a": 1500, "b": "ONLINE", "c": 0, "d": "y", "e": 1})
    assert before != after and after[0][0].startswith("1.5k")


def test_one_column_with_nothing_to_show_is_no_run():
    texts = CellTexts([(Column("d", "D", 0, "<", numeric=False), 0)])
    assert texts.line({"d": ""}) == _join(row_cells({"d": ""}, texts.fitted)) == []
