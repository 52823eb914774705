"""Drive the real, installed ``proxytop`` in a pseudo-terminal and read its screen.

The program runs under a pty with a fixed size; a reader thread feeds everything it prints
into a pyte screen (a VT100/xterm emulator), so tests send real key bytes and assert on the
text a person would see.
"""
from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import struct
import sys
import termios
import threading
import time
import fcntl
from typing import Callable, Dict, Optional, Sequence, Union

import pyte

ESC = "\x1b"
ENTER = "\r"
TAB = "\t"
SHIFT_TAB = "\x1b[Z"
# curses turns on keypad (application cursor) mode, so arrows arrive as ESC O A / ESC O B
UP, DOWN = "\x1bOA", "\x1bOB"
HOME = "\x1bOH"  # the first row (xterm in application mode, like the arrows)


class _Screen(pyte.Screen):
    """pyte 0.8 ignores SU / SD (CSI n S / CSI n T), which ncurses uses to scroll a region;
    without them the emulated screen keeps stale lines that a real terminal would not."""

    def scroll_up(self, count=None, *_):
        top, bottom = (self.margins.top, self.margins.bottom) if self.margins else (0, self.lines - 1)
        saved = (self.cursor.x, self.cursor.y)
        self.cursor.y = bottom
        for _ in range(count or 1):
            self.index()
        self.cursor.x, self.cursor.y = saved

    def scroll_down(self, count=None, *_):
        top, bottom = (self.margins.top, self.margins.bottom) if self.margins else (0, self.lines - 1)
        saved = (self.cursor.x, self.cursor.y)
        self.cursor.y = top
        for _ in range(count or 1):
            self.reverse_index()
        self.cursor.x, self.cursor.y = saved


class _ByteStream(pyte.ByteStream):
    csi = dict(pyte.ByteStream.csi, S="scroll_up", T="scroll_down")


def proxytop_command() -> Sequence[str]:
    exe = shutil.which("proxytop")
    return [exe] if exe else [sys.executable, "-m", "proxytop"]


class Terminal:
    def __init__(self, args: Sequence[str] = (), cols: int = 120, rows: int = 40,
                 env: Optional[Dict[str, str]] = None, command: Optional[Sequence[str]] = None):
        self.cols, self.rows = cols, rows
        self.screen = _Screen(cols, rows)
        self.stream = _ByteStream(self.screen)
        self.raw = bytearray()
        self._lock = threading.Lock()
        self._fed_at = time.monotonic()  # when output last arrived (see wait_until)
        self.exit_status: Optional[int] = None
        self._closing = threading.Event()
        argv = list(command or proxytop_command()) + list(args)
        environment = dict(os.environ)
        environment.update({"TERM": "xterm-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
                            "COLUMNS": str(cols), "LINES": str(rows)})
        environment.pop("NO_COLOR", None)
        if env:
            environment.update(env)
        pid, fd = pty.fork()
        if pid == 0:  # child
            try:
                # the size is set before the program starts: set afterwards by the parent, it
                # would arrive as a SIGWINCH in the middle of the program's start-up
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.execvpe(argv[0], argv, environment)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self._set_size(rows, cols)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def _set_size(self, rows: int, cols: int) -> None:
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def resize(self, cols: int, rows: int) -> None:
        with self._lock:
            self.cols, self.rows = cols, rows
            self.screen.resize(rows, cols)
        self._set_size(rows, cols)
        os.kill(self.pid, signal.SIGWINCH)

    def _read_loop(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0.2)
            except (OSError, ValueError):
                return
            if self._closing.is_set():
                return
            if not ready:
                if self.exit_status is not None:
                    return
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self.raw.extend(data)
                self.stream.feed(data)
                self._fed_at = time.monotonic()

    def send(self, keys: Union[str, bytes], pause: float = 0.15) -> None:
        data = keys.encode() if isinstance(keys, str) else keys
        os.write(self.fd, data)
        time.sleep(pause)

    def tab(self, title: str) -> str:
        """The key (a number, or a letter) of the tab ``title`` in the tab line shown (tabs move
        as screens are added)."""
        found = re.search(rf"(?<!\w)(\w):{re.escape(title)}\b", self.text())
        assert found, f"no tab {title!r} on the screen:\n{self.text()}"
        return found.group(1)

    def go(self, title: str) -> None:
        """Show the screen of the tab ``title`` in the half shown."""
        self.send(self.tab(title))

    def text(self) -> str:
        with self._lock:
            return "\n".join(line.rstrip() for line in self.screen.display)

    def line(self, y: int) -> str:
        with self._lock:
            return self.screen.display[y].rstrip()

    # A screen is judged only once the output has paused this long: a frame drawn in several
    # writes (a busy machine can pause the program between them) is never judged half-drawn.
    SETTLE = 0.04

    def settled(self) -> bool:
        with self._lock:
            return time.monotonic() - self._fed_at >= self.SETTLE

    def wait_until(self, predicate: Callable[[str], bool], timeout: float = 10.0, what: str = "condition") -> str:
        """The first settled screen that satisfies ``predicate``; assert on everything you need
        from it inside the predicate, not on the returned text afterwards."""
        deadline = time.monotonic() + timeout
        busy_since = None
        while True:
            now = time.monotonic()
            settled = self.settled()
            busy_since = None if settled else (busy_since or now)
            screen = self.text()
            # output that never pauses for a second (a fast clock) is judged as it is
            if (settled or now - busy_since > 1.0) and predicate(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}; screen was:\n{screen}")
            time.sleep(0.05)

    def wait_for(self, pattern: str, timeout: float = 10.0) -> str:
        try:
            regex = re.compile(pattern)
        except re.error:
            regex = re.compile(re.escape(pattern))
        return self.wait_until(lambda s: bool(regex.search(s) or pattern in s), timeout, repr(pattern))

    def wait_exit(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.exit_status = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") \
                    else (status >> 8)
                # the reader stops at the end of the program's output: all of it is read then
                self._reader.join(max(5.0, deadline - time.monotonic()))
                return self.exit_status
            time.sleep(0.05)
        raise AssertionError(f"proxytop did not exit within {timeout}s; screen:\n{self.text()}")

    def output(self) -> bytes:
        with self._lock:
            return bytes(self.raw)

    def close(self) -> None:
        if self.exit_status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.exit_status = -9
        # The reader stops before the descriptor is closed: the next Terminal's pty may be given
        # the same number, and a reader still looping would take that program's first output.
        self._closing.set()
        self._reader.join(2.0)
        try:
            os.close(self.fd)
        except OSError:
            pass
