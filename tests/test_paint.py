"""proxytop.ui.app.paint: painting only the lines that changed leaves the pad as painting everything would.

The pad here is a grid of (character, attribute) cells with the curses window calls paint()
makes; frames are made by proxytop.ui.view._join (table rows) and plain segment lists (header
lines), as render() makes them.
"""
from __future__ import annotations

import curses

from hypothesis import given, settings, strategies as st

from proxytop.ui import app, view

WIDTH, HEIGHT = 24, 5
STYLES = [None, "dim", "danger", "header"]


class GridPad:
    """The window calls paint() makes, on a grid of (character, attribute) cells."""

    def __init__(self, height: int, width: int):
        self.height, self.width = height, width
        self.cells = [[(" ", 0)] * width for _ in range(height)]
        self.cursor = (0, 0)
        self.calls = 0

    def erase(self):
        self.cells = [[(" ", 0)] * self.width for _ in range(self.height)]

    def move(self, y, x):
        self.cursor = (y, x)

    def clrtoeol(self):
        y, x = self.cursor
        self.cells[y][x:] = [(" ", 0)] * (self.width - x)

    def addstr(self, y, x, text, attr):
        self.calls += 1
        if x + len(text) > self.width:
            raise curses.error("past the right edge")
        for i, ch in enumerate(text):
            self.cells[y][x + i] = (ch, attr)


def attribute(style):
    return STYLES.index(style) + 1 if style in STYLES else 99


# Few texts and styles: consecutive frames often have lines of the same layout (the case of
# painting some runs only), differing in a text or a style.
cell = st.tuples(st.sampled_from(["", "1", "2", "ab", "ONLINE"]), st.sampled_from(STYLES))
table_row = st.lists(cell, max_size=6).map(view._join)
header_line = st.lists(cell, max_size=5)
frame = st.lists(st.one_of(table_row, header_line), min_size=HEIGHT, max_size=HEIGHT)


def painted_afresh(lines, height=HEIGHT, width=WIDTH):
    pad = GridPad(height, width)
    app.paint(pad, lines, None, width, height, attribute)
    return pad.cells


@settings(max_examples=300, deadline=None)
@given(st.lists(frame, min_size=1, max_size=6))
def test_painting_what_changed_shows_what_painting_everything_shows(frames):
    pad = GridPad(HEIGHT, WIDTH)
    shown = None
    for lines in frames:
        app.paint(pad, lines, shown, WIDTH, HEIGHT, attribute)
        assert pad.cells == painted_afresh(lines)
        shown = lines


def test_a_run_whose_style_changed_is_painted_again():
    before = view._join([("db1", None), ("12", "dim")])
    after = view._join([("db1", None), ("12", "danger")])
    pad = GridPad(2, 40)
    app.paint(pad, [before, []], None, 40, 2, attribute)
    app.paint(pad, [after, []], [before, []], 40, 2, attribute)
    assert pad.cells == painted_afresh([after, []], 2, 40)
