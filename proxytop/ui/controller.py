"""The UI's state and what each key does to it. No curses here, no I/O: actions change state,
tell the engine what to poll, or hand a confirmed task to the engine's worker threads.

The state lives here; what the keys do to it is written in parts, one module each: screen
switching, polling pace, the row cache, the cursor, sorting and filtering, and the key modes
(typed input and the help, detail and confirmation panels)."""
from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence, Tuple

from proxytop.screens.base import Confirm, DataView, Detail, Screen
from proxytop.ui import keys, view
from proxytop.ui.cursor import CursorMoves
from proxytop.ui.key_modes import MODE_KEYS, ConfirmMode, DetailMode, HelpMode, TextInputModes
from proxytop.ui.pacing import Pacing
from proxytop.ui.row_cache import RowCache
from proxytop.ui.screen_news import ScreenNews
from proxytop.ui.screen_switching import ScreenSwitching
from proxytop.ui.sort_filter import SortAndFilter

MESSAGE_SECONDS = 6.0


class Controller(ScreenSwitching, Pacing, RowCache, ScreenNews, CursorMoves, SortAndFilter,
                 TextInputModes, HelpMode, DetailMode, ConfirmMode):
    def __init__(self, engine, screens: Sequence[Screen], config, clock=time.monotonic):
        self.engine = engine
        self.screens = list(screens)
        self.config = config
        self.clock = clock
        self.view = DataView(engine, config)
        self.index = self._screen_index(config.screen if config else "connpool")
        self.tables = {s.key: s.initial_state() for s in self.screens}
        self.intervals: Dict[str, float] = {}
        self.cursor_id: Dict[str, object] = {}
        self.cursor: Dict[str, int] = {s.key: 0 for s in self.screens}
        self.scroll: Dict[str, int] = {s.key: 0 for s in self.screens}
        self.mode = "table"  # table | filter | help | detail | confirm
        self.input = ""
        self.message: Optional[Tuple[str, str, float]] = None
        self.detail: Optional[Detail] = None
        self.detail_scroll = 0
        self.help_scroll = 0
        self.confirm: Optional[Confirm] = None
        self.quit_requested = False
        self.repaint = False  # ^L asked the shell to send every cell again
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
        self.detail_row: Optional[dict] = None  # the row a live detail panel follows
        # Extra keys of a mode (a replay): an object with ``title``, ``bindings`` and
        # ``action_<name>(controller)`` methods, looked up after the screen's keys.
        self.overlay = None
        self.prompt_label = ""
        self.prompt_hint = ""
        self._prompt_done = None
        delay = config.delay if config else 1.0
        for screen in self.screens:
            self.intervals[screen.key] = max(delay, self.minimum_interval(screen))

    # ----- messages -------------------------------------------------------------------------
    def say(self, text: str, style: str = "message") -> None:
        self.message = (" ".join(str(text).split()), style, self.clock() + MESSAGE_SECONDS)

    def current_message(self) -> Optional[Tuple[str, str]]:
        if self.message and self.message[2] > self.clock():
            return self.message[0], self.message[1]
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
        mode_key = MODE_KEYS.get(self.mode)
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
        self.quit_requested = True

    def do_redraw(self):
        self._rows_token = None
        self.repaint = True  # the shell sends every cell again (a garbled terminal is repaired)
