"""The current screen's rows, computed once per change: a new reading, a new sort or filter,
or a screen's own token. A screen that is left parks its rows, so that coming back to it
shows them at once.

A part of :class:`proxytop.ui.controller.Controller` (it reads ``engine``, ``view``, ``screen``
and ``state`` there and keeps ``total_rows`` for the renderer)."""
from __future__ import annotations

from typing import List


class RowCache:
    def rows(self) -> List[dict]:
        """The current screen's rows, arranged; recomputed only when data or state changed."""
        screen = self.screen
        names = screen.active_collectors()
        if tuple(names) != self._activated or self.alarm_plan() != self._alarm_plan:
            # The screen's set changed (e.g. servers discovered at runtime), or the alarm's (a
            # PostgreSQL side learnt on connecting, a pool read empty): poll the new set.
            self.activate()
        # What the rows are made of changed: the generation of the last change of the screen's
        # collectors (one number, however many), or, from an engine that doesn't number its
        # changes (a replay), the ids of their snapshots.
        changed_at = self.screen_changed_at()
        data = changed_at if changed_at is not None else tuple(id(self.engine.latest(n)) for n in names)
        token = (screen.key, self.state, tuple(sorted(screen.options.items())), data, screen.rows_token(self.view))
        if token != self._rows_token:
            parked = self._parked.pop(screen.key, None)
            if parked is not None and parked[0][:3] == token[:3]:
                # Back on a screen: its rows as they were when it was left, at once (5,000
                # rules take a while). If a reading arrived since (just before the switch),
                # the next frame recomputes them: the new screen shows first.
                _token, self.total_rows, self._rows, _held = parked
                if parked[0] != token:
                    token = None
            else:
                raw = screen.rows(self.view)
                self.total_rows = len(raw)
                self._rows = screen.arrange(raw, self.state)
            self._rows_token = token
            # the snapshots are held with a token of their ids, so that the ids can't be reused meanwhile
            self._rows_held = () if changed_at is not None else tuple(self.engine.latest(n) for n in names)
            self._follow_cursor()
        return self._rows

    def shown_rows(self) -> int:
        """How many of the arranged rows are rows (subtotals not counted), counted once per
        arrangement rather than on every frame (20,000 digests took 13-23 ms a frame)."""
        if self._shown_of is not self._rows:
            counted = getattr(self._rows, "rows_without_subtotals", None)  # rows filled when read
            self._shown = counted() if counted is not None else sum(1 for r in self._rows
                                                                     if r.get("_kind") != "subtotal")
            self._shown_of = self._rows
        return self._shown

    def _park_rows(self) -> None:
        """The screen is being left: keep its rows for when it comes back."""
        if self._rows_token is not None and self._rows_token[0] == self.screen.key:
            self._parked[self.screen.key] = (self._rows_token, self.total_rows, self._rows, self._rows_held)

    def forget_rows(self) -> None:
        """Another node is watched: no screen may show rows computed from the previous one."""
        self._parked.clear()
        self._rows_token = None
        if self.ui.mode == "detail":
            self.ui.mode = "table"
            self.ui.detail = None
