"""Every key the footer, the help or a message names works where it is named: pausing inside a
detail view, the help's scrolling, the filter's errors; and what they say is said once and
not after its moment. The real program in a pseudo-terminal (tests/terminal.py), and the
renderer (proxytop.ui.view) for what a frame holds."""
from __future__ import annotations

import re

from proxytop.polling.engine import Engine
from proxytop.screens.base import Confirm, Screen
from proxytop.screens.connpool import ConnPoolScreen
from proxytop.ui import view
from proxytop.ui.controller import MESSAGE_SECONDS, Controller
from tests.terminal import DOWN, ENTER, ESC

PGDN = "\x1b[6~"


def header(screen: str) -> str:
    return "\n".join(screen.splitlines()[:2])


def footer(screen: str) -> str:
    return screen.splitlines()[-1]


def live(proxytop_term, double, *args, cols=120, rows=30):
    term = proxytop_term("-P", str(double.port), "--no-discover", *args, cols=cols, rows=rows)
    term.wait_for("127.0.0.1:3313")
    return term


def test_p_pauses_and_resumes_inside_a_detail_view_and_the_footer_says_so(proxytop_term, proxysql_double):
    term = live(proxytop_term, proxysql_double)
    term.send("p")
    term.wait_until(lambda s: "PAUSED" in header(s) and "press p to resume" in footer(s), what="paused")
    term.send(ENTER)
    term.wait_until(lambda s: "Esc back" in s and "PAUSED" in header(s), what="the detail view, paused")
    term.send("p")  # named by the message: works here
    term.wait_until(lambda s: "PAUSED" not in header(s) and "resumed" in footer(s), what="resumed in the detail")
    term.send(" ")  # Space as well
    term.wait_until(lambda s: "PAUSED" in header(s), what="paused again with Space")
    term.wait_until(lambda s: re.search(r"Esc back.*p/Space resume|Esc back.*p resume", footer(s)) is not None,
                    timeout=MESSAGE_SECONDS + 5, what="the detail's footer naming p")
    term.send(ESC, pause=0.4)
    term.wait_until(lambda s: "PAUSED" in header(s) and "p resume" in footer(s), what="the table's footer naming p")
    term.send("p")
    term.wait_until(lambda s: "PAUSED" not in header(s), what="resumed on the table")


def test_p_pauses_the_demo_inside_a_detail_view(proxytop_term):
    term = proxytop_term("--demo", "--screen", "proclist", cols=140, rows=40)
    term.wait_until(lambda s: "playing 1x" in header(s) and "SLEEP(" in s, timeout=20, what="the demo's sessions")
    term.send(ENTER)
    term.wait_for(r"Session \d+\s+Esc back")
    term.send("p")
    term.wait_until(lambda s: "paused" in header(s) and "Esc back" in s, what="the demo paused in the detail")
    term.send("p")
    term.wait_until(lambda s: "playing 1x" in header(s) and "Esc back" in s, what="the demo playing in the detail")


def test_the_help_scrolls_says_how_and_where(proxytop_term, proxysql_double):
    term = live(proxytop_term, proxysql_double, cols=60, rows=15)
    term.send("?")
    first = term.wait_until(lambda s: re.search(r"proxytop keys   lines 1-\d+ of \d+", s) is not None
                            and "PgUp PgDn scroll  q quit  any other key closes" in footer(s), what="the help")
    shown, total = map(int, re.search(r"lines 1-(\d+) of (\d+)", first).groups())
    assert total > shown and "0-9go" not in first
    term.send(DOWN)
    term.wait_for(rf"2-{shown + 1} of {total}")
    for _ in range(total // shown + 1):
        term.send(PGDN)
    term.wait_until(lambda s: f"of {total}" in s and "Weight" in s, what="the end of the help, the last columns")
    term.send("x")  # any other key closes
    term.wait_until(lambda s: "proxytop keys" not in s and "q quit" in footer(s), what="the table again")
    term.send("?")
    term.wait_for("proxytop keys")
    term.send("p")  # closes the help, and only that: nothing is paused
    screen = term.wait_until(lambda s: "proxytop keys" not in s, what="the help closed by p")
    assert "PAUSED" not in screen, screen


def test_the_help_aligns_its_keys_and_lists_every_column_of_the_screen():
    ctl = Controller(Engine(), [ConnPoolScreen()], None)
    lines = [view.screen_text([line]) for line in view.help_lines(ctl, 200)]
    goto = next(line for line in lines if "go to screen" in line)
    assert re.match(r"  0-9\s{2,}go to screen", goto), goto
    quits = next(line for line in lines if "quit proxytop" in line)
    assert goto.index("go to") == quits.index("quit proxytop")  # one column for every key
    listed = lines[lines.index("columns of this screen") + 1:]
    assert [line.split()[0] for line in listed] == [c.title.split()[0] for c in ctl.screen.columns]
    assert any(line.split()[0] == "Queries/s" for line in listed) and any(line.startswith("  Weight") for line in listed)


def test_the_help_wraps_a_long_text_under_its_column_at_80_columns():
    ctl = Controller(Engine(), [ConnPoolScreen()], None)
    wide = " ".join(view.screen_text([line]) for line in view.help_lines(ctl, 400)).split()
    lines = [view.screen_text([line]) for line in view.help_lines(ctl, 80)]
    assert all(len(line) <= 80 and "\u2026" not in line for line in lines)
    assert " ".join(lines).split() == wide  # every word of every text, in order
    switch = next(n for n, line in enumerate(lines) if "the MySQL servers' screens" in line)
    text_column = lines[switch].index("the MySQL")
    assert lines[switch + 1].startswith(" " * text_column) and lines[switch + 1].strip()  # its next line, under it


def test_a_filter_that_cant_be_parsed_is_refused_and_the_previous_one_stays(proxytop_term, proxysql_double):
    term = live(proxytop_term, proxysql_double)
    term.send("/")
    term.send("queries/s>abc" + ENTER)
    term.wait_until(lambda s: "'abc' is not a number" in footer(s), what="the number refused")
    term.send(ESC, pause=0.4)
    term.wait_until(lambda s: re.search(r"^sort \S+ .  \d+ rows", s, re.M) is not None, what="no filter")
    term.send("/")
    term.send("queries/s>=0" + ENTER)
    term.wait_until(lambda s: re.search(r"filter queries/s>=0  (\d+)/\1 rows", s) is not None, what="the filter")
    term.send("/")
    term.wait_until(lambda s: "filter: queries/s>=0 _" in footer(s), what="the filter typed again, a space after it")
    term.send("status:[" + ENTER)  # one more term, a bad regular expression
    term.wait_until(lambda s: "bad regular expression '['" in footer(s) and "filter queries/s>=0  " in s,
                    what="refused, the filter before still applied")


class Plain(Screen):
    key, title = "plain", "Plain"


class Other(Screen):
    key, title = "other", "Other"


def test_a_message_goes_on_a_screen_switch_and_after_a_few_seconds():
    now = [100.0]
    ctl = Controller(Engine(), [Plain(), Other()], None, clock=lambda: now[0])
    ctl.say("12:03:45")
    assert view.footer_line(ctl, 80) == [("12:03:45", "message")]
    ctl.switch(1)
    assert ctl.current_message() is None and "q quit" in view.footer_line(ctl, 80)[0][0]
    ctl.say("sorted by Used")
    now[0] += MESSAGE_SECONDS - 0.1
    assert ctl.current_message() is not None
    now[0] += 0.2
    assert ctl.current_message() is None


def test_the_confirmation_is_asked_once():
    ctl = Controller(Engine(), [Plain()], None)
    ctl.ui.mode = "confirm"
    ctl.ui.confirm = Confirm(("Kill ProxySQL session 7?",), "proxysql", lambda handle: None)
    frame = view.screen_text(view.render(ctl, 80, 20))
    assert frame.count("any other key") == 1 and "y = yes, any other key = no" in frame
