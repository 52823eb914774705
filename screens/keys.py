"""Key bindings are data: one table drives the handlers, the footer hints and the help screen."""
from __future__ import annotations

import curses
from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Sequence, Tuple, Union

Key = Union[str, int]


@dataclass(frozen=True)
class Binding:
    keys: Tuple[str, ...]  # key names as produced by key_name()
    action: str  # controller method do_<action>, or screen method action_<action>
    help: str  # one line in the help screen
    hint: str = ""  # short label in the footer ("" = not in the footer)


# Names for keys that are not printable characters.
_SPECIAL = {9: "TAB", 10: "ENTER", 13: "ENTER", 27: "ESC", 3: "^C", 12: "^L", 127: "BACKSPACE", 8: "BACKSPACE"}


def key_name(ch: Key) -> str:
    """A curses key code (or character) as a binding name: 'q', 'TAB', 'KEY_UP', '^C'."""
    if isinstance(ch, str):
        return _SPECIAL.get(ord(ch), ch) if len(ch) == 1 else ch
    if ch in _SPECIAL:
        return _SPECIAL[ch]
    if ch == getattr(curses, "KEY_ENTER", 343):
        return "ENTER"
    if ch in (getattr(curses, "KEY_BACKSPACE", 263),):
        return "BACKSPACE"
    if 32 <= ch < 127:
        return chr(ch)
    if 0 <= ch < 32:
        return "^" + chr(ch + 64)
    try:
        name = curses.keyname(ch).decode("ascii", "replace")
    except (ValueError, curses.error):
        return f"KEY_{ch}"
    return name


def lookup(bindings: Iterable[Binding], name: str) -> Optional[Binding]:
    for binding in bindings:
        if name in binding.keys:
            return binding
    return None


def display(name: str) -> str:
    pretty = {"KEY_UP": "\u2191", "KEY_DOWN": "\u2193", "KEY_PPAGE": "PgUp", "KEY_NPAGE": "PgDn",
              "KEY_HOME": "Home", "KEY_END": "End", "KEY_BTAB": "S-Tab", "TAB": "Tab", "ENTER": "Enter",
              "ESC": "Esc", " ": "Space", "KEY_LEFT": "\u2190", "KEY_RIGHT": "\u2192"}
    return pretty.get(name, name)


def describe(binding: Binding) -> str:
    """The keys of a binding as the help shows them; the ten digits as "0-9".

    >>> describe(Binding(tuple("1234567890"), "goto_screen", "")), describe(Binding(("p", " "), "pause", ""))
    ('0-9', 'p/Space')
    """
    if sorted(binding.keys) == list("0123456789"):
        return "0-9"
    return "/".join(display(k) for k in binding.keys)


# The actions of the key table (and of a replay's) that also work in a detail view, whose own
# keys are Esc/Backspace/← (back), the arrows, PgUp/PgDn and Home/g (scroll) and q: pausing
# ("press p to resume" is said there too), the interval and playback speed, stepping a replay.
DETAIL_ACTIONS = frozenset(("pause", "faster", "slower", "step_back", "step_forward", "redraw", "switch_half"))


# Tabs beyond the ten number keys, reached by a letter: screen key -> (letter, what it shows).
# The tab bar shows the letter, Tab / S-Tab step through these tabs too, and each letter is a
# global key below (so the footer and the help name it). Kept here, with the key table, so the
# table is made from it; proxytop.screens puts these screens at the end of each half.
TAB_LETTERS: Dict[str, Tuple[str, str, str]] = {  # screen key -> (letter, help, footer hint)
    "trends": ("T", "Trends: the whole system in charts over time", "T trends"),
    "events": ("E", "the Events screen: what changed (statuses, variables, reloads, restarts)", ""),
}


def letter_tab(name: str) -> Optional[str]:
    """The screen key a tab letter shows, or None.

    >>> letter_tab("E"), letter_tab("x")
    ('events', None)
    """
    return next((screen for screen, (letter, _help, _hint) in TAB_LETTERS.items() if letter == name), None)


GLOBAL_BINDINGS: Sequence[Binding] = (
    Binding(("q", "^C"), "quit", "quit proxytop", "q quit"),
    Binding(("?", "h"), "help", "this help (generated from the key table)", "? help"),
    Binding(("TAB",), "next_screen", "next screen"),
    Binding(("KEY_BTAB",), "previous_screen", "previous screen"),
    Binding(tuple("1234567890"), "goto_screen", "go to screen N (0 is the tenth)", "0-9 screens"),
) + tuple(Binding((letter,), "goto_tab", help, hint) for letter, help, hint in TAB_LETTERS.values()) + (
    Binding(("s",), "sort_next", "sort by the next column", "s sort"),
    Binding(("r",), "sort_reverse", "reverse the sort order", "r rev"),
    Binding((">",), "sort_next", "move the sort column right"),
    Binding(("<",), "sort_previous", "move the sort column left"),
    Binding(("/", "l"), "filter", "filter: text, col:regex, col>N, col<N (terms AND-ed); durations and sizes take units: "
            "time>2s, free<10GiB", "/ filter"),
    Binding(("\\",), "clear_filter", "clear the filter"),
    Binding(("+", "="), "faster", "shorter refresh interval", "+/- interval"),
    Binding(("-",), "slower", "longer refresh interval"),
    Binding(("p", " "), "pause", "pause / resume polling", "p pause"),
    Binding(("m",), "switch_side", "ProxySQL screens: switch between the MySQL and the PostgreSQL side (ProxySQL 3.0+)"),
    Binding(("M",), "switch_half", "the MySQL servers' screens and back (on a backend, its health view or a "
            "digest: the Servers screen on its servers)", "M servers"),
    Binding(("KEY_UP",), "up", "move the cursor up"),
    Binding(("KEY_DOWN",), "down", "move the cursor down"),
    Binding(("KEY_PPAGE",), "page_up", "page up"),
    Binding(("KEY_NPAGE",), "page_down", "page down"),
    Binding(("KEY_HOME",), "top", "first row"),
    Binding(("KEY_END", "G"), "bottom", "last row"),
    Binding(("ENTER",), "open", "details of the selected row (where the screen has them)"),
    Binding(("g",), "graph", "graph the selected row's figures over time", "g graph"),
    Binding(("ESC",), "back", "close a detail view, help or the filter input"),
    Binding(("^L",), "redraw", "redraw the screen"),
    Binding(("n",), "next_node", "watch the next ProxySQL node (-H a,b or --cluster)", "n/N node"),
    Binding(("N",), "previous_node", "watch the previous ProxySQL node"),
    Binding(("a",), "all_nodes", "all nodes: add up every node's rates (ConnPool, ComCount; polls every node)"),
)


# The keys of a graph (g): it takes every key while it is shown, like a detail view; pausing,
# the interval and a replay's speed and steps work there too (DETAIL_ACTIONS).
GRAPH_BINDINGS: Sequence[Binding] = (
    Binding(("ESC", "BACKSPACE", "g"), "graph_close", "back to the table", "Esc back"),
    Binding(("w",), "graph_window", "the time shown: 5 minutes, 1 hour, 24 hours, all that is kept", "w window"),
    Binding(("a",), "graph_together", "the rows that share this one's first column on the same charts (a hostgroup's "
            "backends), or this row alone", "a group"),
    Binding(("KEY_DOWN", "KEY_NPAGE"), "graph_down", "the next figures of the row", "\u2191\u2193 figures"),
    Binding(("KEY_UP", "KEY_PPAGE"), "graph_up", "the figures before"),
    Binding(("KEY_LEFT",), "graph_earlier", "move the time cursor earlier (a replay: Enter jumps there)", "\u2190\u2192 cursor"),
    Binding(("KEY_RIGHT",), "graph_later", "move the time cursor later"),
    Binding(("ENTER",), "graph_jump", "a replay: play from the time under the cursor"),
)
