"""What keys do while the table is not in charge: typing a filter or a prompt's answer, and
the help, detail and confirmation panels drawn over the table. Each mode's handler takes every key (``name``,
``ch``) and returns True: nothing falls through to the table's keys until the mode ends.

Parts of :class:`proxytop.ui.controller.Controller`; ``MODE_KEYS`` tells its ``handle_key``
which handler a mode uses."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from proxytop.screens.base import Confirm
from proxytop.screens import filters

MODE_KEYS = {
    "filter": "_filter_key",
    "prompt": "_prompt_key",
    "help": "_help_key",
    "detail": "_detail_key",
    "confirm": "_confirm_key",
}


class TextInputModes:
    """One line of typed text: the filter (``/``) and the prompts screens ask for."""

    def prompt(self, label: str, done, hint: str = "") -> None:
        """Ask for one line of text; ``done(text)`` returns None when it took it, or a
        one-line problem (shown, the input kept)."""
        self.ui.prompt_label = label
        self.ui.prompt_hint = hint
        self.ui.prompt_done = done
        self.ui.input = ""
        self.ui.mode = "prompt"

    def _filter_key(self, name: str, ch) -> bool:
        if name == "ESC":
            self.ui.mode = "table"
            self.say("filter unchanged")
        elif name == "ENTER":
            try:
                parsed = filters.parse(self.ui.input, self.screen.columns)
            except filters.FilterError as exc:
                self.say(str(exc), "error")  # stay in the input: nothing typed is lost
                return True
            self._set_state(replace(self.state, filter=parsed))
            self.ui.mode = "table"
            self.ui.cursor[self.screen.key] = 0
        else:
            self._edit_input(name, ch)
        return True

    def _prompt_key(self, name: str, ch) -> bool:
        if name == "ESC":
            self.ui.mode = "table"
        elif name == "ENTER":
            problem = self.ui.prompt_done(self.ui.input) if self.ui.prompt_done is not None else None
            if problem:
                self.say(problem, "error")
                return True
            self.ui.mode = "table"
            self._rows_token = None
        else:
            self._edit_input(name, ch)
        return True

    def _edit_input(self, name: str, ch) -> None:
        """Line editing shared by the filter and prompt inputs."""
        if name in ("BACKSPACE", "KEY_BACKSPACE", "KEY_DC"):
            self.ui.input = self.ui.input[:-1]
        elif name == "^U":
            self.ui.input = ""
        elif name == "^C":
            self.ui.quit_requested = True
        else:
            text = ch if isinstance(ch, str) else (chr(ch) if isinstance(ch, int) and 32 <= ch < 127 else "")
            if text and text.isprintable():
                self.ui.input += text


class HelpMode:
    """The help panel (``?``): every key of this screen and the global ones."""

    def do_help(self):
        self.ui.mode = "help"
        self.ui.help_scroll = 0

    def _help_key(self, name: str, ch=None) -> bool:
        if name in ("KEY_DOWN", "KEY_NPAGE"):
            self.ui.help_scroll += 1 if name == "KEY_DOWN" else self.page_rows
        elif name in ("KEY_UP", "KEY_PPAGE"):
            self.ui.help_scroll = max(0, self.ui.help_scroll - (1 if name == "KEY_UP" else self.page_rows))
        elif name in ("q", "^C"):
            self.ui.quit_requested = True
        else:
            self.ui.mode = "table"
        return True


class DetailMode:
    """A row's detail panel (Enter), which may read more while it is open."""

    def do_open(self):
        row = self.selected_row()
        if row is None or row.get("_kind") == "subtotal":
            return
        detail = self.screen.detail(row, self.view)
        if detail is None:
            self.say("this screen has no detail view")
            return
        self.ui.detail = detail
        self.ui.detail_row = row
        self.ui.detail_scroll = 0
        self.ui.mode = "detail"
        if self.screen.detail_collectors(row) or tuple(self.screen.active_collectors()) != self._activated:
            self.activate()  # a detail view may read more while it is open

    def do_back(self):
        self.ui.mode = "table"

    def refresh_detail(self) -> None:
        """Screens with ``live_detail`` rebuild their detail panel from the latest readings."""
        if self.ui.detail_row is not None and getattr(self.screen, "live_detail", False):
            detail = self.screen.detail(self.ui.detail_row, self.view)
            if detail is not None:
                self.ui.detail = detail

    def _detail_key(self, name: str, ch=None) -> bool:
        if name in ("ESC", "BACKSPACE", "KEY_LEFT"):
            self.ui.mode = "table"
            self.ui.detail = None
            closed = getattr(self.screen, "detail_closed", None)
            if closed is not None:
                closed()
        elif name == "KEY_DOWN":
            self.ui.detail_scroll += 1
        elif name == "KEY_UP":
            self.ui.detail_scroll = max(0, self.ui.detail_scroll - 1)
        elif name == "KEY_NPAGE":
            self.ui.detail_scroll += self.page_rows
        elif name == "KEY_PPAGE":
            self.ui.detail_scroll = max(0, self.ui.detail_scroll - self.page_rows)
        elif name in ("KEY_HOME", "g"):
            self.ui.detail_scroll = 0
        elif name in ("q", "^C"):
            self.ui.quit_requested = True
        return True


class ConfirmMode:
    """The confirmation of the one write proxytop makes (a kill): nothing is sent until 'y'."""

    def ask(self, confirm: Confirm) -> None:
        """Screens call this for the one write proxytop makes: nothing runs until 'y'."""
        if self.engine.refuses_writes:  # a replay: nothing to send anything to
            self.say(self.engine.refuses_writes, "error")
            return
        self.ui.confirm = confirm
        self.ui.mode = "confirm"

    def _confirm_key(self, name: str, ch=None) -> bool:
        confirm = self.ui.confirm
        if name in ("y", "Y") and confirm is not None:
            self.say("sending\u2026")

            def done(error: Optional[str]) -> None:
                if error:
                    self.say(error, "error")
                else:
                    self.say(confirm.done_message)

            self.engine.submit(confirm.source, confirm.action, done)
        elif name == "^C":
            self.ui.quit_requested = True
        else:
            self.say("cancelled: nothing was sent")
        self.ui.confirm = None
        self.ui.mode = "table"
        return True
