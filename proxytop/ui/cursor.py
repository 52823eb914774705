"""The cursor of the table screens: which row is selected, kept on the same row (by its
``_id``) when rows move, and the moves the arrow and page keys make.

A part of :class:`proxytop.ui.controller.Controller` (it reads ``cursor``, ``cursor_id``,
``page_rows``, ``screen`` and ``rows()`` there)."""
from __future__ import annotations

from typing import Optional


class CursorMoves:
    def selected_row(self) -> Optional[dict]:
        rows = self.rows()
        index = self.ui.cursor[self.screen.key]
        return rows[index] if 0 <= index < len(rows) else None

    def _follow_cursor(self) -> None:
        """Keep the cursor on the same row (by id) when rows move after a refresh or a sort."""
        key = self.screen.key
        wanted = self.ui.cursor_id.get(key)
        if wanted is not None:
            for i, row in enumerate(self._rows):
                if row.get("_id") == wanted:
                    self.ui.cursor[key] = i
                    return
        self.ui.cursor[key] = min(self.ui.cursor[key], max(0, len(self._rows) - 1))
        self._remember_cursor()

    def _remember_cursor(self) -> None:
        key = self.screen.key
        if self._rows and 0 <= self.ui.cursor[key] < len(self._rows):
            self.ui.cursor_id[key] = self._rows[self.ui.cursor[key]].get("_id")

    def _move(self, delta: int) -> None:
        rows = self.rows()
        key = self.screen.key
        if not rows:
            return
        self.ui.cursor[key] = max(0, min(len(rows) - 1, self.ui.cursor[key] + delta))
        self._remember_cursor()

    def do_up(self):
        self._move(-1)

    def do_down(self):
        self._move(+1)

    def do_page_up(self):
        self._move(-self.page_rows)

    def do_page_down(self):
        self._move(+self.page_rows)

    def do_top(self):
        self._move(-10**9)

    def do_bottom(self):
        self._move(+10**9)
