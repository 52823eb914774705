"""The footer's key hints and the tab line (proxytop.ui.view) follow what they show: the
screen's keys, the mode, a message, a tab."""
from __future__ import annotations

from proxytop.polling.engine import Engine
from proxytop.screens.base import Screen
from proxytop.ui import view
from proxytop.ui.controller import Controller
from proxytop.screens.keys import Binding


class Plain(Screen):
    key, title = "plain", "Plain"


class WithKeys(Screen):
    key, title = "keyed", "Keyed"
    bindings = (Binding(("x",), "explode", "explode the thing", "x explode"),)


def controller():
    return Controller(Engine(), [Plain(), WithKeys()], None)


def test_the_footer_follows_the_screen_the_mode_and_messages():
    ctl = controller()
    first = view.footer_line(ctl, 100)
    assert view.footer_line(ctl, 100) == first
    assert "x explode" not in first[0][0] and "q quit" in first[0][0]
    ctl.switch(1)
    assert "x explode" in view.footer_line(ctl, 100)[0][0]
    ctl.say("saved")
    assert view.footer_line(ctl, 100) == [("saved", "message")]
    ctl.ui.message = None
    assert "x explode" in view.footer_line(ctl, 100)[0][0]
    ctl.ui.mode = "detail"
    assert view.footer_line(ctl, 100)[0][0].startswith("Esc back")
    ctl.ui.mode = "table"
    assert view.footer_line(ctl, 20)[0][0] == view.footer_line(ctl, 100)[0][0][:20]


def test_the_tab_line_follows_the_current_screen_and_the_titles():
    ctl = controller()
    first = view.tab_line(ctl, 100)
    assert view.tab_line(ctl, 100) == first
    assert first[0] == ("1:Plain", "tab_active") and first[2] == ("2:Keyed", "tab")
    ctl.switch(1)
    assert view.tab_line(ctl, 100)[2] == ("2:Keyed", "tab_active")
    ctl.screens[0].title = "Renamed"
    assert view.tab_line(ctl, 100)[0] == ("1:Renamed", "tab")
