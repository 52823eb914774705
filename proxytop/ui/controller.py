"""The UI's state and what each key does to it. No curses here, no I/O: actions change state,
tell the engine what to poll, or hand a confirmed task to the engine's worker threads.

The state the keys change is one UIState. What they do to it is written here (screens, the
cursor, sorting and filtering) and in parts of their own: polling pace, the row cache and what
changed for the screen, and the key modes (typed input and the help, detail and confirmation
panels)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from proxytop.screens.base import Confirm, DataView, Detail, Screen
from proxytop.screens.sided import switch_side
from proxytop.screens import filters, keys, table
from proxytop.ui import view
from proxytop.ui.key_modes import MODE_KEYS, ConfirmMode, DetailMode, HelpMode, TextInputModes
from proxytop.ui.pacing import Pacing
from proxytop.ui.row_cache import RowCache
from proxytop.ui.screen_news import ScreenNews

MESSAGE_SECONDS = 6.0


@dataclass
class UIState:
    """What the keys change, in one place: the handlers (the controller's ``do_*`` methods and
    the screens' ``action_*``) change it, the renderer (proxytop.ui.view) reads it. What the
    engine polls and the rows computed from it are the controller's, not kept here."""

    index: int  # the screen shown (of Controller.screens)
    tables: Dict[str, table.TableState]  # per screen: sort and filter
    cursor: Dict[str, int]  # per screen: the selected row
    scroll: Dict[str, int]  # per screen: the first row shown
    cursor_id: Dict[str, object] = field(default_factory=dict)  # per screen: the selected row's _id
    intervals: Dict[str, float] = field(default_factory=dict)  # per screen: seconds between readings
    mode: str = "table"  # table | filter | prompt | help | detail | confirm
    input: str = ""  # the filter or prompt text typed
    prompt_label: str = ""
    prompt_hint: str = ""
    prompt_done: Optional[Callable[[str], Optional[str]]] = None  # takes the text, or says why not
    message: Optional[Tuple[str, str, float]] = None  # (text, style, monotonic time it expires)
    detail: Optional[Detail] = None  # the detail panel shown
    detail_row: Optional[dict] = None  # the row a live detail panel follows
    detail_scroll: int = 0
    help_scroll: int = 0
    confirm: Optional[Confirm] = None  # the write waiting for 'y'
    quit_requested: bool = False
    repaint: bool = False  # ^L asked the shell to send every cell again


class Controller(Pacing, RowCache, ScreenNews, TextInputModes, HelpMode, DetailMode, ConfirmMode):
    def __init__(self, engine, screens: Sequence[Screen], config, clock=time.monotonic):
        self.engine = engine
        self.screens = list(screens)
        self.config = config
        self.clock = clock
        self.view = DataView(engine, config)
        self.ui = UIState(index=self._screen_index(config.screen if config else "connpool"),
                          tables={s.key: s.initial_state() for s in self.screens},
                          cursor={s.key: 0 for s in self.screens}, scroll={s.key: 0 for s in self.screens})
        self.memo = view.Memo()
        self.page_rows = 10  # set by the renderer from the terminal height
        self._rows: List[dict] = []
        self.total_rows = 0
        self._shown_of: Optional[List[dict]] = None  # the rows shown_rows() counted
        self._shown = 0
        self.visible_keys: List[str] = []  # set by the renderer: the columns that fit
        self._rows_token = None
        self._rows_held: tuple = ()
        self._parked: Dict[str, tuple] = {}  # screen -> its rows when it was left
        self._activated: Tuple[str, ...] = ()
        self._alarm_plan: Tuple[Tuple[str, float], ...] = ()
        # Extra keys of a mode (a replay): an object with ``title``, ``bindings`` and
        # ``action_<name>(controller)`` methods, looked up after the screen's keys.
        self.overlay = None
        delay = config.delay if config else 1.0
        for screen in self.screens:
            self.ui.intervals[screen.key] = max(delay, self.minimum_interval(screen))

    # ----- messages -------------------------------------------------------------------------
    def say(self, text: str, style: str = "message") -> None:
        self.ui.message = (" ".join(str(text).split()), style, self.clock() + MESSAGE_SECONDS)

    def current_message(self) -> Optional[Tuple[str, str]]:
        if self.ui.message and self.ui.message[2] > self.clock():
            return self.ui.message[0], self.ui.message[1]
        return None

    # ----- keys -----------------------------------------------------------------------------
    def bindings(self) -> List[keys.Binding]:
        """Screen keys first (they may override a global one), then the overlay's, then the
        global table without the bindings whose keys are all taken by the former."""
        first = list(self.screen.bindings) + list(getattr(self.overlay, "bindings", ()))
        taken = {k for b in first for k in b.keys}
        return first + [b for b in keys.GLOBAL_BINDINGS if not set(b.keys) <= taken]

    def handle_key(self, ch) -> bool:
        name = keys.key_name(ch)
        mode_key = MODE_KEYS.get(self.ui.mode)
        if mode_key is not None:  # a mode takes every key until it ends
            return getattr(self, mode_key)(name, ch)
        for owner in (self.screen, self.overlay):  # the screen's keys, then a replay's
            binding = keys.lookup(owner.bindings, name) if owner is not None else None
            if binding is not None:
                getattr(owner, "action_" + binding.action)(self)
                self._rows_token = None
                return True
        binding = keys.lookup(keys.GLOBAL_BINDINGS, name)
        if binding is None:
            return False
        handler = getattr(self, "do_" + binding.action)
        if binding.action == "goto_screen":
            handler((int(name) - 1) % 10)  # "0" is the tenth screen
        else:
            handler()
        return True

    # global actions that belong to no part
    def do_quit(self):
        self.ui.quit_requested = True

    def do_redraw(self):
        self._rows_token = None
        self.ui.repaint = True  # the shell sends every cell again (a garbled terminal is repaired)

    # ----- screens shown: tabs, ProxySQL nodes, the MySQL/PostgreSQL side
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

    # ----- the cursor: the selected row, kept on the same row (by its ``_id``) when rows move
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

    # ----- sorting and filtering the current table (the filter's text is typed in key_modes)
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
