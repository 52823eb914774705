"""The curses shell, built on npyscreen: one form, one canvas widget that paints the lines
rendered by proxytop.ui.view, and every key handed to the controller.

The loop sleeps until there is something to do (proxytop.ui.wakeup): a key on the terminal, or a
wake-up from the engine when a snapshot or a source's state is new, or from SIGWINCH. Only a
replay, which has no engine threads to say so, is woken by npyscreen's keypress timeout. The
UI thread only reads snapshots, so keys answer at once even while a server hangs.
"""
from __future__ import annotations

import curses
import curses.ascii
import os
import signal
import sys
import time
from typing import Optional, Tuple

import npyscreen

from proxytop.screens.table import Runs
from proxytop.ui import view, wakeup

KEYPRESS_TIMEOUT = 2  # tenths of a second between wake-ups of a replay (a live view sleeps until woken)
CTRL_C = 3
ESCAPE_DELAY_MS = 100  # how long after Esc a key still belongs to an escape sequence (ncurses: 1000)
# New data is drawn at most this often (keys are answered at once): a fleet of 500 servers
# brings a reading a hundred times a second, and each frame recomputed every server's row.
DATA_FRAME_GAP = 0.5
# ... and a frame that costs more waits longer: drawing new data takes at most about a
# fiftieth of a core (a 17 ms frame of 500 servers: every 0.85 s).
FRAME_SHARE = 50

# style name -> (theme colour name, extra attributes); any other style is plain
B, DIM, REVERSE = curses.A_BOLD, curses.A_DIM, curses.A_REVERSE
STYLES = {
    "header_title": ("STANDOUT", B), "title": ("STANDOUT", B), "message": ("STANDOUT", 0),
    "header": (None, B), "subtotal": (None, B), "input": (None, B), "sorted": ("CONTROL", B | curses.A_UNDERLINE),
    "good": ("GOOD", 0), "danger": ("DANGER", B), "error": ("DANGER", B), "warning": ("WARNING", 0),
    "warning_bold": ("WARNING", B), "dim": (None, DIM), "tab_dim": (None, DIM), "footer": (None, DIM),
    "tab_active": (None, REVERSE | B), "cursor": (None, REVERSE),
    # a graph's series, each its own colour (screens.chart.SERIES_STYLES)
    "series0": ("STANDOUT", 0), "series1": ("CONTROL", 0), "series2": ("GOOD", 0), "series3": ("SERIES_MAGENTA", 0),
    "series4": ("DANGER", 0), "series5": (None, B),
}


def terminal_problem() -> Optional[str]:
    """Why this terminal can't show the live view (one line), or None. Checked before curses
    starts: an unknown TERM made curses fail with "setupterm: could not find terminal", and a
    terminal that can't move the cursor (TERM=dumb: an editor's shell) showed garbage."""
    term = os.environ.get("TERM", "")
    try:
        curses.setupterm(term or None, sys.stdout.fileno())
    except (curses.error, OSError, ValueError):
        return (f"the terminal type {term!r} is not known here: set TERM (e.g. TERM=xterm-256color), "
                "or use --batch for plain text")
    if not curses.tigetstr("cup"):
        return (f"the terminal type {term!r} cannot move the cursor: run proxytop in a full-screen terminal "
                "(xterm, screen, tmux), or use --batch for plain text")
    return None


class Canvas(npyscreen.widget.Widget):
    """Paints pre-rendered lines; hands every key but resize to the controller."""

    def __init__(self, screen, controller=None, color=True, **keywords):
        self.controller = controller
        self.use_color = color
        self.attributes = {}  # style name -> curses attribute
        self._modes_on = None  # the pad whose terminal modes are set
        self._keys_behind = False  # ncurses may hold bytes it read with the last key
        self._drawn_at = float("-inf")  # monotonic time of the last frame
        self._frame_cost = 0.0  # CPU seconds the last frame took
        self._showed_data = False  # the last frame had a reading of the visible screen
        self.forget()
        super().__init__(screen, **keywords)

    def forget(self) -> None:
        """Paint every line next time (the pad was erased or replaced)."""
        self._painted, self._painted_on, self._painted_size = None, None, None

    def set_up_handlers(self):
        super().set_up_handlers()
        self.handlers = {}
        self.complex_handlers = [(lambda ch: True, self.on_key)]  # every key is ours

    def on_key(self, ch):
        if ch == curses.KEY_RESIZE:
            self.parent.follow_terminal_size()
            return
        if ch == CTRL_C:
            # ^C read as a key (the terminal did not make it a signal: between raw() and
            # cbreak() below, or a terminal set up so) quits as the signal does.
            raise KeyboardInterrupt
        self.controller.handle_key(ch)
        if self.controller.ui.quit_requested:
            self.editing = False
            self.parent.editing = False
            self.parent.parentApp.setNextForm(None)

    def calculate_area_needed(self):
        return 0, 0

    def get_and_use_key_press(self):
        """npyscreen's, minus two costs of an idle screen: it set raw, cbreak, meta, keypad and
        halfdelay again before every key or timeout (ioctls, and bytes sent to the terminal ten
        times a second), and it asked the locale for its encoding every time."""
        pad = self.parent.curses_pad
        if self._modes_on is not pad:
            curses.raw()
            curses.cbreak()
            curses.meta(1)
            pad.keypad(1)
            curses.halfdelay(self.parent.keypress_timeout or KEYPRESS_TIMEOUT)
            self._modes_on = pad
        waker = self.parent.parentApp.wakeup
        if waker is not None:
            waker.stop_if_asked()
            if self._keys_behind:
                # Keys that arrived together (a paste, an escape sequence cut short) may sit in
                # ncurses' own buffer, where select() can't see them: take them first.
                pad.timeout(0)
                self._modes_on = None
                ch = self.read_key()
                if ch == -1:
                    self._keys_behind = False
                    return None  # the loop displays, then sleeps below
            else:
                timeout = wakeup.next_redraw_in(self.controller, self.controller.engine.now())
                terminal = self.parent.parentApp.terminal_fd
                keyed = waker.wait(terminal, timeout)
                waker.stop_if_asked()
                if not keyed:
                    # New data: drawn no sooner than DATA_FRAME_GAP (or FRAME_SHARE times the
                    # last frame's cost) after the last frame; what else arrives meanwhile is
                    # drawn with it. A key ends the wait at once. The screen's first data is
                    # drawn as soon as it comes (at start-up, after switching screens).
                    spacing = max(DATA_FRAME_GAP, FRAME_SHARE * self._frame_cost)
                    gap = self._drawn_at + spacing - time.monotonic()
                    if gap <= 0 or not self._showed_data:
                        return self.try_while_waiting()
                    keyed = waker.wait(terminal, gap, for_key_only=True)
                    waker.stop_if_asked()
                    if not keyed:
                        return self.try_while_waiting()
                ch = self.read_key()
                if ch == -1:
                    return self.try_while_waiting()
            self._keys_behind = True
        else:
            ch = self.read_key()
        if ch == -1:
            return self.try_while_waiting()
        if ch == curses.ascii.ESC:  # Esc with another key right behind it is Alt-key, as in npyscreen
            pad.nodelay(1)
            ch2 = pad.getch()
            if ch2 != -1:
                ch = curses.ascii.alt(ch2)
            pad.timeout(-1)
            self._modes_on = None  # set the modes again before the next key
        self.handle_input(ch)
        self.try_adjust_widgets()

    def read_key(self):
        """A curses key code, or a one-character str for a UTF-8 character. A byte that does
        not start or continue a UTF-8 character (a terminal in Latin-1) is given as its code,
        which no key is bound to: never an error."""
        pad = self.parent.curses_pad
        ch = pad.getch()
        if ch < 194 or ch > 244:
            return ch
        data = bytearray([ch])
        for _ in range(1 if ch <= 223 else 2 if ch <= 239 else 3):
            more = pad.getch()
            if not 128 <= more <= 191:
                return ch
            data.append(more)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return ch

    def attribute(self, style):
        """The curses attribute of a style name (``name+cursor``: reversed), worked out once."""
        attr = self.attributes.get(style)
        if attr is None:
            name, attr = STYLES.get((style or "").replace("+cursor", ""), (None, 0))
            if self.use_color and name:
                attr |= self.parent.theme_manager.findPair(self, name) or 0
            elif not self.use_color and name in ("DANGER", "WARNING"):
                attr |= curses.A_BOLD
            if style and style.endswith("+cursor"):
                attr |= curses.A_REVERSE
            self.attributes[style] = attr
        return attr

    def update(self, clear=True):
        """Render, then paint the lines that differ from what the pad already shows."""
        started = time.thread_time()
        height, width = terminal_size(self.parent.parentApp.terminal_fd)
        pad = self.parent.curses_pad
        # asked before rendering: a reading that comes while the frame is drawn is not in it,
        # and is drawn at once rather than DATA_FRAME_GAP later (at launch: 0.5 s without rows)
        has_data = self.controller.newest_of_screen() is not None
        lines = view.render(self.controller, width, height)
        if self.controller.ui.repaint:  # ^L: the terminal may show something else
            self.controller.ui.repaint = False
            self.forget()
            try:
                pad.redrawwin()  # every cell is sent again on the next refresh
            except curses.error:
                pass
        painted = self._painted if (self._painted_on is pad and self._painted_size == (height, width)) else None
        paint(pad, lines, painted, width, height, self.attribute)
        self._painted, self._painted_on, self._painted_size = lines, pad, (height, width)
        self._drawn_at = time.monotonic()
        self._frame_cost = time.thread_time() - started
        self._showed_data = has_data


def terminal_size(fd: int) -> Tuple[int, int]:
    """(lines, columns) of the terminal on ``fd``, asked of the terminal itself: curses.LINES
    and curses.COLS follow a resize only once ncurses has seen it."""
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return curses.LINES, curses.COLS
    if not size.lines or not size.columns:
        return curses.LINES, curses.COLS
    return size.lines, size.columns


def paint(pad, lines, painted, width: int, height: int, attribute) -> None:
    """Put ``lines`` on the curses pad: every line when ``painted`` (what the pad shows, as
    lines painted before at this size) is None, else the lines that differ from it (most frames
    change a line or two). ``attribute(style)`` is the curses attribute of a style."""
    if painted is None:
        pad.erase()
    for y, line in enumerate(lines):
        if painted is not None:
            if y < len(painted) and painted[y] == line:
                continue
            try:
                pad.move(y, 0)
                pad.clrtoeol()
            except curses.error:
                pass
        x = 0
        end = width - 1 if y == height - 1 else width  # never write the last cell
        # one curses call per run of a style (a table's rows come as runs already: table.Runs)
        for text, style in (line if isinstance(line, Runs) else join_runs(line)):
            if x >= end:
                break
            try:
                pad.addstr(y, x, text[:end - x], attribute(style))
            except curses.error:
                pass
            x += len(text)


def join_runs(line):
    """A line's segments with the neighbours of one style joined: a table row is some forty
    segments (cells and the gaps between them) but a few runs of one style, and each run is
    one call into curses instead of one per segment.

    >>> join_runs([("a", None), (" ", None), ("b", "dim"), ("", None), ("c", "dim"), (" ", None)])
    [('a ', None), ('bc', 'dim'), (' ', None)]
    """
    runs = []
    texts = []
    current = None
    for text, style in line:
        if not text:
            continue
        if texts and style != current:
            runs.append(("".join(texts), current))
            texts = []
        texts.append(text)
        current = style
    if texts:
        runs.append(("".join(texts), current))
    return runs


def leave_initial_state() -> None:
    """Let ncurses send a frame in a few writes instead of one per cursor move: until the
    program has once left curses and come back, ncurses (6.4, lib_mvcur.c) flushes its output
    after every cursor movement (a ConnPool frame went out in thirty writes)."""
    try:
        curses.endwin()
        curses.doupdate()  # back: terminal modes, the alternate screen and the cursor as they were
    except curses.error:
        pass


class MonitorForm(npyscreen.FormBaseNew):
    FRAMED = False
    BLANK_LINES_BASE = 0
    BLANK_COLUMNS_RIGHT = 0
    DEFAULT_X_OFFSET = 0
    DEFAULT_NEXTRELY = 0
    FIX_MINIMUM_SIZE_WHEN_CREATED = False

    def create(self):
        app = self.parentApp
        self.keypress_timeout = KEYPRESS_TIMEOUT
        self.canvas = self.add(Canvas, controller=app.controller, color=app.use_color, rely=0, relx=0)

    def follow_terminal_size(self):
        """Make a new pad when the terminal changed size, even if no KEY_RESIZE arrived
        (it can be lost while the size changes twice in quick succession)."""
        size = terminal_size(self.parentApp.terminal_fd)
        # Ask ncurses itself: its own SIGWINCH handling may have resized its screen behind
        # Python's back (curses.LINES / curses.COLS are only updated by Python's wrappers).
        if size != (curses.LINES, curses.COLS) or curses.is_term_resized(*size):
            try:
                curses.resizeterm(*size)  # also updates curses.LINES / curses.COLS
            except curses.error:
                pass
        lines, columns = max(size[0], self.min_l), max(size[1], self.min_c)
        if (lines, columns) != self.curses_pad.getmaxyx():
            self.curses_pad = curses.newpad(lines, columns)
            self.lines, self.columns = lines, columns
            self.max_y, self.max_x = lines, columns
            self.canvas.forget()

    def while_waiting(self):
        # Only follow the size: the edit loop displays the frame right after (as after a key).
        self.follow_terminal_size()

    def display(self, clear=False):
        self.follow_terminal_size()
        self.canvas.update()
        self.refresh()  # ScreenArea.refresh ignores the curses errors of a terminal mid-resize

    def DISPLAY(self):
        self.canvas.forget()  # DISPLAY erases the pad
        super().DISPLAY()


class ProxytopTheme(npyscreen.ThemeManager):
    default_colors = dict(npyscreen.ThemeManager.default_colors, STANDOUT="CYAN_BLACK", CONTROL="YELLOW_BLACK",
                          SERIES_MAGENTA="MAGENTA_BLACK")


class MonitorApp(npyscreen.NPSAppManaged):
    def __init__(self, controller, use_color=True):
        self.controller = controller
        self.use_color = use_color
        self.wakeup: Optional[wakeup.WakeUp] = None
        self.terminal_fd = sys.stdin.fileno()
        super().__init__()

    def run(self, *args, **keywords):
        engine = self.controller.engine
        before = {}  # the stop signals' handlers before the live loop's
        if not engine.replaying:  # a live engine wakes the UI when something is new
            self.wakeup = wakeup.WakeUp()
            engine.add_listener(self.wakeup.wake)
            for signum in wakeup.STOP_SIGNALS:
                try:
                    before[signum] = signal.signal(signum, self.wakeup.ask_to_stop)
                except (ValueError, OSError):  # not the main thread
                    pass
        try:
            return super().run(*args, **keywords)
        finally:
            for signum, handler in before.items():
                signal.signal(signum, handler)
            if self.wakeup is not None:
                engine.remove_listener(self.wakeup.wake)
                try:
                    signal.signal(signal.SIGWINCH, signal.SIG_DFL)
                except (ValueError, OSError):
                    pass
                self.wakeup.close()

    def onStart(self):
        curses.mousemask(0)  # leave the mouse to the terminal: copy and paste keep working
        if "ESCDELAY" not in os.environ and hasattr(curses, "set_escdelay"):
            # ncurses waits a whole second after Esc for the rest of an escape sequence: a key
            # pressed within it (Esc to close the help, then 2) was taken as Alt-2 and lost.
            curses.set_escdelay(ESCAPE_DELAY_MS)
        try:
            curses.curs_set(0)
        except curses.error:
            pass
        try:
            # ncurses looked for a pending key every few lines it sent (a poll() and a write()
            # each): a frame went out in thirty small writes; sent whole, in one or two.
            curses.typeahead(-1)
        except curses.error:
            pass
        leave_initial_state()
        if self.use_color:
            npyscreen.setTheme(ProxytopTheme)
        else:
            npyscreen.disableColor()
        self.keypress_timeout_default = KEYPRESS_TIMEOUT
        if self.wakeup is not None:
            # A resize wakes the loop, which asks the terminal its size: no wait for KEY_RESIZE.
            signal.signal(signal.SIGWINCH, self.wakeup.wake)
        self.addForm("MAIN", MonitorForm, name="proxytop", minimum_lines=5, minimum_columns=20)
