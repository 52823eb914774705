"""The footer's key hints and the tab line (proxytop.ui.view) follow what they show: the
screen's keys, the mode, a message, a tab."""
from __future__ import annotations

from proxytop.polling.engine import Engine
from proxytop.screens.base import Screen
from proxytop.ui import view
from proxytop.ui.controller import Controller
from proxytop.screens.keys import Binding
from proxytop.screens import table
from proxytop.screens.table import Column


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
    # narrow: whole hints only, the later ones giving way first; quitting and the help stay
    narrow = view.footer_line(ctl, 30)[0][0]
    assert narrow == "x explode  q quit  ? help", narrow
    assert view.footer_line(ctl, 16)[0][0] == "q quit  ? help"


def test_a_narrow_tab_line_keeps_every_number():
    ctl = Controller(Engine(), [Plain(), WithKeys(), Plain(), WithKeys()], None)
    for screen, short in zip(ctl.screens, ("P", "K", "P", "K")):
        screen.short_title = short
    assert view.screen_text([view.tab_line(ctl, 40)]) == "1:Plain 2:Keyed 3:Plain 4:Keyed"
    assert view.screen_text([view.tab_line(ctl, 25)]) == "1:Plain 2:K 3:P 4:K"
    assert view.screen_text([view.tab_line(ctl, 15)]) == "1:Plain 2 3 4"


def test_a_narrow_header_drops_whole_fields_and_wraps_a_disconnection():
    line = view.fit_fields([(0, [("proxytop ", None)]), (1, [("127.0.0.1:6032", None)]),
                            (4, [("  up 3m", None)]), (1, [("  Q/s 1,234", None)]), (2, [("  conn 11", None)]),
                            (3, [("  trx 2", None)])], 50)
    assert view.screen_text([line]) == "proxytop 127.0.0.1:6032  Q/s 1,234  conn 11  trx 2"
    cut = view.fit_fields([(0, [("proxytop ", None)]), (0, [("a-very-long-host-name:6032", None)])], 20)
    assert view.screen_text([cut]) == "proxytop a-very-lon\u2026"
    wrapped = view.wrap([("retrying in 4s: connection refused (is ProxySQL running?)", "danger")], 30)
    assert [view.screen_text([l]) for l in wrapped] == ["retrying in 4s: connection", "  refused (is ProxySQL", "  running?)"]


def test_the_tab_line_follows_the_current_screen_and_the_titles():
    ctl = controller()
    first = view.tab_line(ctl, 100)
    assert view.tab_line(ctl, 100) == first
    assert first[0] == ("1:Plain", "tab_active") and first[2] == ("2:Keyed", "tab")
    ctl.switch(1)
    assert view.tab_line(ctl, 100)[2] == ("2:Keyed", "tab_active")
    ctl.screens[0].title = "Renamed"
    assert view.tab_line(ctl, 100)[0] == ("1:Renamed", "tab")


class Wide(Screen):
    key, title = "wide", "Wide"
    columns = tuple(Column(f"c{n}", f"Column{n}", 10, priority=n) for n in range(8))


def test_the_status_line_says_how_many_columns_the_width_hides_and_how_to_reach_them():
    ctl = Controller(Engine(), [Wide()], None)
    wide = view.screen_text([view.status_line(ctl, 0, 0, 200)])
    assert "hidden" not in wide
    narrow = view.screen_text([view.status_line(ctl, 0, 0, 60)])
    assert "+3 columns hidden" in narrow and "s/</>" in narrow, narrow
    ctl.do_sort_previous()  # < from the first column: the last one, hidden at 60 columns
    assert ctl.state.sort_key == "c7"
    shown = [c.key for c, _ in table.fit_columns(Wide.columns, 60, keep=ctl.state.sort_key)]
    assert "c7" in shown  # the sort column always shows


def test_the_demo_cluster_screen_shows_every_node_at_60x15(proxytop_term):
    term = proxytop_term("--demo", cols=60, rows=15)
    term.wait_for("playing 1x")
    term.send("0")
    screen = term.wait_until(lambda s: all(f"node-{n}" in s for n in (1, 2, 3)) and "Node" in s, timeout=15,
                             what="the three nodes at 60x15")
    assert all(len(line) <= 60 for line in screen.splitlines())
