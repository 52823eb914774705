"""The curses shell, built on npyscreen: one form, one canvas widget that paints the lines
rendered by proxytop.view, and every key handed to the controller.

npyscreen's own keypress timeout (tenths of a second) wakes the form regularly so new snapshots
appear without a key press; the UI thread only reads snapshots, so keys answer at once even
while a server hangs.
"""
from __future__ import annotations

import curses

import npyscreen

from proxytop import view

KEYPRESS_TIMEOUT = 1  # tenths of a second between idle wake-ups

# style name -> (theme colour name, extra attributes)
STYLES = {
    "header_title": ("STANDOUT", curses.A_BOLD),
    "header": (None, curses.A_BOLD),
    "label": (None, 0),
    "title": ("STANDOUT", curses.A_BOLD),
    "sorted": ("CONTROL", curses.A_BOLD | curses.A_UNDERLINE),
    "good": ("GOOD", 0),
    "danger": ("DANGER", curses.A_BOLD),
    "warning": ("WARNING", 0),
    "warning_bold": ("WARNING", curses.A_BOLD),
    "dim": (None, curses.A_DIM),
    "subtotal": (None, curses.A_BOLD),
    "tab": (None, 0),
    "tab_dim": (None, curses.A_DIM),
    "tab_active": (None, curses.A_REVERSE | curses.A_BOLD),
    "cursor": (None, curses.A_REVERSE),
    "footer": (None, curses.A_DIM),
    "input": (None, curses.A_BOLD),
    "message": ("STANDOUT", 0),
    "error": ("DANGER", curses.A_BOLD),
}


class Canvas(npyscreen.widget.Widget):
    """Paints pre-rendered lines; hands every key but resize to the controller."""

    def __init__(self, screen, controller=None, color=True, **keywords):
        self.controller = controller
        self.use_color = color
        super().__init__(screen, **keywords)

    def set_up_handlers(self):
        super().set_up_handlers()
        self.handlers = {}
        self.complex_handlers = [(lambda ch: ch != curses.KEY_RESIZE, self.on_key)]

    def on_key(self, ch):
        self.controller.handle_key(ch)
        if self.controller.quit_requested:
            self.editing = False
            self.parent.editing = False
            self.parent.parentApp.setNextForm(None)

    def calculate_area_needed(self):
        return 0, 0

    def attribute(self, style):
        if not style:
            return curses.A_NORMAL
        cursor = style.endswith("+cursor")
        name, extra = STYLES.get(style.replace("+cursor", ""), (None, 0))
        attr = extra
        if self.use_color and name:
            colour = self.parent.theme_manager.findPair(self, name)
            if colour:
                attr |= colour
        elif not self.use_color and name in ("DANGER", "WARNING"):
            attr |= curses.A_BOLD
        if cursor:
            attr |= curses.A_REVERSE
        return attr

    def update(self, clear=True):
        rows, cols = self.parent._max_physical()
        height, width = rows + 1, cols + 1
        pad = self.parent.curses_pad
        pad.erase()
        lines = view.render(self.controller, width, height)
        for y, line in enumerate(lines):
            x = 0
            for text, style in line:
                if not text:
                    continue
                room = width - x - (1 if y == height - 1 else 0)  # never write the last cell
                if room <= 0:
                    break
                try:
                    pad.addstr(y, x, text[:room], self.attribute(style))
                except curses.error:
                    pass
                x += len(text[:room])


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
        """Recreate the pad when the terminal changed size, even if no KEY_RESIZE arrived
        (it can be lost while the size changes twice in quick succession)."""
        rows, cols = self._max_physical()
        size = (rows + 1, cols + 1)
        # Ask ncurses itself: its own SIGWINCH handling may have resized its screen behind
        # Python's back (curses.LINES / curses.COLS are only updated by Python's wrappers).
        if size != (curses.LINES, curses.COLS) or curses.is_term_resized(*size):
            try:
                curses.resizeterm(*size)  # also updates curses.LINES / curses.COLS
            except curses.error:
                pass
        if size != tuple(self.curses_pad.getmaxyx()):
            self._create_screen()

    def while_waiting(self):
        self.follow_terminal_size()
        self.canvas.update()
        self.refresh()  # ScreenArea.refresh ignores the curses errors of a terminal mid-resize

    def display(self, clear=False):
        self.follow_terminal_size()
        self.canvas.update()
        self.refresh()

    def h_display(self, *args):
        self.DISPLAY()


class ProxytopTheme(npyscreen.ThemeManager):
    default_colors = dict(npyscreen.ThemeManager.default_colors, STANDOUT="CYAN_BLACK", CONTROL="YELLOW_BLACK")


class MonitorApp(npyscreen.NPSAppManaged):
    def __init__(self, controller, use_color=True):
        self.controller = controller
        self.use_color = use_color
        super().__init__()

    def onStart(self):
        curses.mousemask(0)  # leave the mouse to the terminal: copy and paste keep working
        try:
            curses.curs_set(0)
        except curses.error:
            pass
        if self.use_color:
            npyscreen.setTheme(ProxytopTheme)
        else:
            npyscreen.disableColor()
        self.keypress_timeout_default = KEYPRESS_TIMEOUT
        self.addForm("MAIN", MonitorForm, name="proxytop", minimum_lines=5, minimum_columns=20)
