"""The painter writes over a painted line only what differs (proxytop.ui.app): whatever the
old and the new line, the pad then holds exactly what painting the new line whole gives, and
a line that reads as before is not written at all."""
from __future__ import annotations

import random

from proxytop.ui.app import _changed_pieces, _runs, _shape

WIDTH = 40


class Grid:
    """A pad's line as characters and their styles."""

    def __init__(self):
        self.cells = [(" ", None)] * WIDTH
        self.written = 0

    def paint(self, line):
        self.cells = [(" ", None)] * WIDTH
        x = 0
        for text, style in _runs(line):
            for ch in text[:WIDTH - x]:
                self.cells[x] = (ch, style)
                x += 1
            self.written += len(text)

    def write(self, x, text, style):
        for ch in text:
            self.cells[x] = (ch, style)
            x += 1
        self.written += len(text)


def lines(pick):
    """Table-like lines: cells of fixed widths, a status cell with its own style."""
    status = pick.choice([("ONLINE ", "good"), ("SHUNNED", "danger"), ("ONLINE ", None)])
    rate = pick.choice(["1.0k", "1.2k", "  12", "   —"])
    age = pick.choice(["5m03s", "5m04s", "0.27s"])
    tail = pick.choice(["db1", "db2", "db10"])
    return [(" 10 ", None), status, (" " + rate + " ", None), (age, pick.choice([None, "dim"])), (" " + tail, None)]


def test_writing_the_difference_gives_the_new_line_painted_whole():
    pick = random.Random(3)
    for _ in range(2000):
        old, new = lines(pick), lines(pick)
        pad, whole = Grid(), Grid()
        pad.paint(old)
        whole.paint(new)
        runs = _runs(new)
        pieces = _changed_pieces(_shape(_runs(old)), _shape(runs), runs, WIDTH)
        if pieces is None:
            pad.paint(new)
        else:
            for x, text, style in pieces:
                pad.write(x, text, style)
        assert pad.cells == whole.cells, (old, new)


def test_only_the_changed_cell_is_written():
    row = [(" 10 ", None), ("ONLINE ", "good"), (" 1.0k ", None), ("5m03s", None), (" db1", None)]
    later = [(" 10 ", None), ("ONLINE ", "good"), (" 1.0k ", None), ("5m04s", None), (" db1", None)]
    runs = _runs(later)
    assert _changed_pieces(_shape(_runs(row)), _shape(runs), runs, WIDTH) == [(20, "4", None)]
    assert _changed_pieces(_shape(runs), _shape(runs), runs, WIDTH) == []


def test_a_line_of_other_runs_or_too_long_is_painted_whole():
    row = [(" 10 ", None), ("ONLINE ", "good")]
    shunned = [(" 10 ", None), ("SHUNNED", "danger")]
    assert _changed_pieces(_shape(_runs(row)), _shape(_runs(shunned)), _runs(shunned), WIDTH) is None
    assert _changed_pieces(_shape(_runs(row)), _shape(_runs(row)), _runs(row), 5) is None
