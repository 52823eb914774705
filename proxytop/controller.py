"""The UI's state and what each key does to it. No curses here, no I/O: actions change state,
tell the engine what to poll, or hand a confirmed task to the engine's worker threads."""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Tuple

from proxytop import filters, keys, table
from proxytop.options import step_interval
from proxytop.screens.base import Confirm, DataView, Detail, Screen
from proxytop.screens.sided import header_collector, switch_side
from proxytop.screens.connpool import alarm_collectors

HEADER_COLLECTOR = "proxysql.global"
MESSAGE_SECONDS = 6.0


class Controller:
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
        self.page_rows = 10  # set by the renderer from the terminal height
        self._rows: List[dict] = []
        self.total_rows = 0
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

    # ----- the current screen ---------------------------------------------------------------
    def _screen_index(self, key: str) -> int:
        for i, screen in enumerate(self.screens):
            if screen.key == key:
                return i
        return 0

    @property
    def screen(self) -> Screen:
        return self.screens[self.index]

    @property
    def state(self) -> table.TableState:
        return self.tables[self.screen.key]

    def minimum_interval(self, screen: Screen) -> float:
        collectors = [self.engine.collector(n) for n in screen.active_collectors()]
        minimums = [c.min_interval for c in collectors if c is not None and not c.own_pace]
        return max(minimums, default=0.5)

    def screen_uses_proxysql(self) -> bool:
        sources = {getattr(self.engine.collector(n), "source", None) for n in self.screen.active_collectors()}
        return "proxysql" in sources or not self.screen.built

    def interval(self) -> float:
        return self.intervals[self.screen.key]

    def activate(self) -> None:
        """Poll only what the visible screen needs, plus the header's cheap collector."""
        screen = self.screen
        names = list(screen.active_collectors())
        if self.mode == "detail" and self.detail_row is not None:
            # an open drill-down may need more (QueryRules' "queries this rule catches"); back
            # on the table, rows() sees the set differ and stops them
            names += [n for n in screen.detail_collectors(self.detail_row) if n not in names]
        self._activated = tuple(names)
        # A screen's minimum may have grown (e.g. a large fleet found at runtime).
        self.intervals[screen.key] = max(self.intervals[screen.key], self.minimum_interval(screen))
        interval = self.interval()
        for name in names:
            collector = self.engine.collector(name)
            if collector is None:
                continue
            self.engine.set_interval(name, max(collector.default_interval, interval) if collector.own_pace else interval)
        header = header_collector(screen)
        if self.engine.collector(header) is not None:
            self.engine.set_interval(header, interval)
            names.append(header)
        self._alarm_plan = self.alarm_plan()
        for name, pace in self._alarm_plan:
            if self.engine.collector(name) is not None and name not in names:
                # the header's backend alarm, on every screen: each side's pool at a slower pace
                self.engine.set_interval(name, max(interval, pace))
                names.append(name)
        self.engine.set_active(names)
        self._rows_token = None

    def alarm_plan(self) -> Tuple[Tuple[str, float], ...]:
        """The pool readings the header's backend alarm takes on every screen (screens.connpool)."""
        return alarm_collectors(getattr(self.view.source("proxysql"), "session", None), self.engine.latest)

    # ----- rows -----------------------------------------------------------------------------
    def rows(self) -> List[dict]:
        """The current screen's rows, arranged; recomputed only when data or state changed."""
        screen = self.screen
        names = screen.active_collectors()
        if tuple(names) != self._activated or self.alarm_plan() != self._alarm_plan:
            # The screen's set changed (e.g. servers discovered at runtime), or the alarm's (a
            # PostgreSQL side learnt on connecting, a pool read empty): poll the new set.
            self.activate()
        token = (screen.key, self.state, tuple(sorted(screen.options.items())),
                 tuple(id(self.engine.latest(n)) for n in names), screen.rows_token(self.view))
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
            # the snapshots are held with the token, so that their ids can't be reused meanwhile
            self._rows_held = tuple(self.engine.latest(n) for n in names)
            self._follow_cursor()
        return self._rows

    def _follow_cursor(self) -> None:
        """Keep the cursor on the same row (by id) when rows move after a refresh or a sort."""
        key = self.screen.key
        wanted = self.cursor_id.get(key)
        if wanted is not None:
            for i, row in enumerate(self._rows):
                if row.get("_id") == wanted:
                    self.cursor[key] = i
                    return
        self.cursor[key] = min(self.cursor[key], max(0, len(self._rows) - 1))
        self._remember_cursor()

    def _remember_cursor(self) -> None:
        key = self.screen.key
        if self._rows and 0 <= self.cursor[key] < len(self._rows):
            self.cursor_id[key] = self._rows[self.cursor[key]].get("_id")

    def selected_row(self) -> Optional[dict]:
        rows = self.rows()
        index = self.cursor[self.screen.key]
        return rows[index] if 0 <= index < len(rows) else None

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
        if self.mode == "filter":
            return self._filter_key(name, ch)
        if self.mode == "help":
            return self._help_key(name)
        if self.mode == "detail":
            return self._detail_key(name)
        if self.mode == "confirm":
            return self._confirm_key(name)
        if self.mode == "prompt":
            return self._prompt_key(name, ch)
        binding = keys.lookup(self.screen.bindings, name)
        if binding is not None:
            getattr(self.screen, "action_" + binding.action)(self)
            self._rows_token = None
            return True
        if self.overlay is not None:
            binding = keys.lookup(self.overlay.bindings, name)
            if binding is not None:
                getattr(self.overlay, "action_" + binding.action)(self)
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

    # global actions
    def do_quit(self):
        self.quit_requested = True

    def do_help(self):
        self.mode = "help"
        self.help_scroll = 0

    def do_redraw(self):
        self._rows_token = None
        self.repaint = True  # the shell sends every cell again (a garbled terminal is repaired)

    def do_next_screen(self):
        self.switch((self.index + 1) % len(self.screens))

    def do_previous_screen(self):
        self.switch((self.index - 1) % len(self.screens))

    def do_goto_screen(self, index: int):
        if 0 <= index < len(self.screens):
            self.switch(index)

    def switch(self, index: int) -> None:
        if index != self.index:
            if self._rows_token is not None and self._rows_token[0] == self.screen.key:
                self._parked[self.screen.key] = (self._rows_token, self.total_rows, self._rows, self._rows_held)
            self.index = index
            self.visible_keys = []
            self.mode = "table"
            self.activate()

    def do_next_node(self):
        from proxytop import nodes

        self.say(nodes.step(self, +1))

    def do_previous_node(self):
        from proxytop import nodes

        self.say(nodes.step(self, -1))

    def do_all_nodes(self):
        from proxytop import allnodes

        self.say(allnodes.toggle(self))
        self.activate()

    def forget_rows(self) -> None:
        """Another node is watched: no screen may show rows computed from the previous one."""
        self._parked.clear()
        self._rows_token = None
        if self.mode == "detail":
            self.mode = "table"
            self.detail = None

    def _set_state(self, state: table.TableState) -> None:
        self.tables[self.screen.key] = state
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
            self.say(f"sorted by {self._title(key)}")

    def do_sort_reverse(self):
        self._set_state(self.state.with_sort(self.state.sort_key, not self.state.descending))

    def _title(self, key: str) -> str:
        for column in self.screen.columns:
            if column.key == key:
                return column.title
        return key

    def do_filter(self):
        self.mode = "filter"
        self.input = self.state.filter.text

    def do_clear_filter(self):
        self._set_state(replace(self.state, filter=filters.EMPTY))
        self.say("filter cleared")

    def do_faster(self):
        self._step_interval(-1)

    def do_slower(self):
        self._step_interval(+1)

    def _step_interval(self, direction: int) -> None:
        minimum = self.minimum_interval(self.screen)
        new = step_interval(self.interval(), direction, minimum)
        self.intervals[self.screen.key] = new
        self.activate()
        if direction < 0 and new == minimum and minimum > 0.5:
            self.say(f"interval {new:g}s: the minimum for this screen")
        else:
            self.say(f"interval {new:g}s")

    def do_switch_side(self):
        switch_side(self)

    def do_pause(self):
        if self.engine.paused:
            self.engine.resume()
            self.say("resumed")
        else:
            self.engine.pause()
            self.say("paused: data frozen, press p to resume")

    def _move(self, delta: int) -> None:
        rows = self.rows()
        key = self.screen.key
        if not rows:
            return
        self.cursor[key] = max(0, min(len(rows) - 1, self.cursor[key] + delta))
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

    def do_open(self):
        row = self.selected_row()
        if row is None or row.get("_kind") == "subtotal":
            return
        detail = self.screen.detail(row, self.view)
        if detail is None:
            self.say("this screen has no detail view")
            return
        self.detail = detail
        self.detail_row = row
        self.detail_scroll = 0
        self.mode = "detail"
        if self.screen.detail_collectors(row) or tuple(self.screen.active_collectors()) != self._activated:
            self.activate()  # a detail view may read more while it is open

    def do_back(self):
        self.mode = "table"

    def refresh_detail(self) -> None:
        """Screens with ``live_detail`` rebuild their detail panel from the latest readings."""
        if self.detail_row is not None and getattr(self.screen, "live_detail", False):
            detail = self.screen.detail(self.detail_row, self.view)
            if detail is not None:
                self.detail = detail

    def ask(self, confirm: Confirm) -> None:
        """Screens call this for the one write proxytop makes: nothing runs until 'y'."""
        refusal = getattr(self.engine, "refuses_writes", None)
        if refusal:  # a replay: nothing to send anything to
            self.say(refusal, "error")
            return
        self.confirm = confirm
        self.mode = "confirm"

    def prompt(self, label: str, done, hint: str = "") -> None:
        """Ask for one line of text; ``done(text)`` returns None when it took it, or a
        one-line problem (shown, the input kept)."""
        self.prompt_label = label
        self.prompt_hint = hint
        self._prompt_done = done
        self.input = ""
        self.mode = "prompt"

    # ----- modes ----------------------------------------------------------------------------
    def _filter_key(self, name: str, ch) -> bool:
        if name == "ESC":
            self.mode = "table"
            self.say("filter unchanged")
        elif name == "ENTER":
            try:
                parsed = filters.parse(self.input, self.screen.columns)
            except filters.FilterError as exc:
                self.say(str(exc), "error")  # stay in the input: nothing typed is lost
                return True
            self._set_state(replace(self.state, filter=parsed))
            self.mode = "table"
            self.cursor[self.screen.key] = 0
        else:
            self._edit_input(name, ch)
        return True

    def _prompt_key(self, name: str, ch) -> bool:
        if name == "ESC":
            self.mode = "table"
        elif name == "ENTER":
            problem = self._prompt_done(self.input) if self._prompt_done is not None else None
            if problem:
                self.say(problem, "error")
                return True
            self.mode = "table"
            self._rows_token = None
        else:
            self._edit_input(name, ch)
        return True

    def _edit_input(self, name: str, ch) -> None:
        """Line editing shared by the filter and prompt inputs."""
        if name in ("BACKSPACE", "KEY_BACKSPACE", "KEY_DC"):
            self.input = self.input[:-1]
        elif name == "^U":
            self.input = ""
        elif name == "^C":
            self.quit_requested = True
        else:
            text = ch if isinstance(ch, str) else (chr(ch) if isinstance(ch, int) and 32 <= ch < 127 else "")
            if text and text.isprintable():
                self.input += text

    def _help_key(self, name: str) -> bool:
        if name in ("KEY_DOWN", "KEY_NPAGE"):
            self.help_scroll += 1 if name == "KEY_DOWN" else self.page_rows
        elif name in ("KEY_UP", "KEY_PPAGE"):
            self.help_scroll = max(0, self.help_scroll - (1 if name == "KEY_UP" else self.page_rows))
        elif name in ("q", "^C"):
            self.quit_requested = True
        else:
            self.mode = "table"
        return True

    def _detail_key(self, name: str) -> bool:
        if name in ("ESC", "BACKSPACE", "KEY_LEFT"):
            self.mode = "table"
            self.detail = None
            closed = getattr(self.screen, "detail_closed", None)
            if closed is not None:
                closed()
        elif name == "KEY_DOWN":
            self.detail_scroll += 1
        elif name == "KEY_UP":
            self.detail_scroll = max(0, self.detail_scroll - 1)
        elif name == "KEY_NPAGE":
            self.detail_scroll += self.page_rows
        elif name == "KEY_PPAGE":
            self.detail_scroll = max(0, self.detail_scroll - self.page_rows)
        elif name in ("KEY_HOME", "g"):
            self.detail_scroll = 0
        elif name in ("q", "^C"):
            self.quit_requested = True
        return True

    def _confirm_key(self, name: str) -> bool:
        confirm = self.confirm
        if name in ("y", "Y") and confirm is not None:
            self.say("sending\u2026")

            def done(error: Optional[str]) -> None:
                if error:
                    self.say(error, "error")
                else:
                    self.say(confirm.done_message)

            self.engine.submit(confirm.source, confirm.action, done)
        elif name == "^C":
            self.quit_requested = True
        else:
            self.say("cancelled: nothing was sent")
        self.confirm = None
        self.mode = "table"
        return True
