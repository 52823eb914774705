"""The UI's state and what each key does to it. No curses here, no I/O: actions change state,
tell the engine what to poll, or hand a confirmed task to the engine's worker threads.

The state lives here; what the keys do to it is written in parts, one module each: screen
switching, polling pace, the row cache, the cursor, sorting and filtering, and the key modes
(typed input and the help, detail and confirmation panels)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from proxytop.screens.base import Confirm, DataView, Detail, Screen
from proxytop.ui import keys, view
from proxytop.ui.table import TableState
from proxytop.ui.cursor import CursorMoves
from proxytop.ui.key_modes import MODE_KEYS, ConfirmMode, DetailMode, HelpMode, TextInputModes
from proxytop.ui.pacing import Pacing
from proxytop.ui.row_cache import RowCache
from proxytop.ui.screen_news import ScreenNews
from proxytop.ui.screen_switching import ScreenSwitching
from proxytop.ui.sort_filter import SortAndFilter

MESSAGE_SECONDS = 6.0


@dataclass
class UIState:
    """What the keys change, in one place: the handlers (the controller's ``do_*`` methods and
    the screens' ``action_*``) change it, the renderer (proxytop.ui.view) reads it. What the
    engine polls and the rows computed from it are the controller's, not kept here."""

    index: int  # the screen shown (of Controller.screens)
    tables: Dict[str, TableState]  # per screen: sort and filter
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


class Controller(ScreenSwitching, Pacing, RowCache, ScreenNews, CursorMoves, SortAndFilter,
                 TextInputModes, HelpMode, DetailMode, ConfirmMode):
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
