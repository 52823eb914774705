"""Which screen is shown, and which node and side it reads: the tab keys, the node keys of a
ProxySQL cluster and the MySQL/PostgreSQL side switch.

A part of :class:`proxytop.ui.controller.Controller` (it reads ``screens``, ``index`` and
``tables`` there)."""
from __future__ import annotations

from proxytop.screens.base import Screen
from proxytop.screens.sided import switch_side
from proxytop.ui import table


class ScreenSwitching:
    def _screen_index(self, key: str) -> int:
        for i, screen in enumerate(self.screens):
            if screen.key == key:
                return i
        return 0

    @property
    def screen(self) -> Screen:
        return self.screens[self.ui.index]

    @property
    def state(self) -> table.TableState:
        return self.ui.tables[self.screen.key]

    def do_next_screen(self):
        self.switch((self.ui.index + 1) % len(self.screens))

    def do_previous_screen(self):
        self.switch((self.ui.index - 1) % len(self.screens))

    def do_goto_screen(self, index: int):
        if 0 <= index < len(self.screens):
            self.switch(index)

    def switch(self, index: int) -> None:
        if index != self.ui.index:
            self._park_rows()
            self.ui.index = index
            self.visible_keys = []
            self.ui.mode = "table"
            self.activate()

    def do_next_node(self):
        from proxytop.polling import nodes

        self.say(nodes.step(self, +1))

    def do_previous_node(self):
        from proxytop.polling import nodes

        self.say(nodes.step(self, -1))

    def do_all_nodes(self):
        from proxytop.ui import allnodes

        self.say(allnodes.toggle(self))
        self.activate()

    def do_switch_side(self):
        switch_side(self)
