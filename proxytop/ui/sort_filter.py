"""Sorting and filtering the current screen's table: the keys that change its
:class:`proxytop.ui.table.TableState` (the filter's text is typed in :mod:`proxytop.ui.key_modes`).

A part of :class:`proxytop.ui.controller.Controller` (it reads ``tables``, ``screen``, ``state``
and ``visible_keys`` there)."""
from __future__ import annotations

from dataclasses import replace

from proxytop.ui import filters, table


class SortAndFilter:
    def _set_state(self, state: table.TableState) -> None:
        self.ui.tables[self.screen.key] = state
        self._rows_token = None

    def _sortable(self):
        """The columns on screen (all of them before the first render)."""
        shown = [c for c in self.screen.columns if c.key in self.visible_keys]
        return shown or list(self.screen.columns)

    def do_sort_next(self):
        self._sort_step(+1)

    def do_sort_previous(self):
        self._sort_step(-1)

    def _sort_step(self, step: int) -> None:
        columns = self._sortable()
        if columns:
            key = table.next_sort_key(columns, self.state.sort_key, step)
            # Numbers read best largest first; text columns A to Z.
            descending = next(c.numeric for c in columns if c.key == key)
            self._set_state(self.state.with_sort(key, descending))
            self.say(f"sorted by {self.column_title(key)}")

    def do_sort_reverse(self):
        self._set_state(self.state.with_sort(self.state.sort_key, not self.state.descending))

    def column_title(self, key: str) -> str:
        for column in self.screen.columns:
            if column.key == key:
                return column.title
        return key

    def do_filter(self):
        self.ui.mode = "filter"
        self.ui.input = self.state.filter.text

    def do_clear_filter(self):
        self._set_state(replace(self.state, filter=filters.EMPTY))
        self.say("filter cleared")
