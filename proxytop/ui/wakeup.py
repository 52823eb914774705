"""What wakes the curses loop: a key on the terminal, or a wake-up written to a pipe.

The loop sleeps in ``select()`` on the terminal and on the read end of a pipe; the engine's
worker threads write one byte to the pipe when a snapshot, a source's state or a task's result
is new, and a terminal resize (SIGWINCH) writes one too. Nothing polls: a paused or idle
proxytop uses no CPU until there is something to show.
"""
from __future__ import annotations

import errno
import os
import select
import signal
from typing import Optional

# The signals that end proxytop: ^C (when the terminal makes it a signal), kill, a closed terminal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(Exception):
    """SIGTERM or SIGHUP arrived: leave curses cleanly."""


def stop_exception(signum: int) -> BaseException:
    """What a stop signal ends the program with: KeyboardInterrupt for ^C (exit 130), else
    Terminated (143)."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Terminated(signal.Signals(signum).name)


class WakeUp:
    """A self-pipe: ``wake()`` from any thread (or a signal handler), ``wait()`` on the UI thread."""

    def __init__(self):
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._pending = False  # a wake-up written and not drained yet: the next ones need not write
        # A stop signal that came: the loop ends at its next turn (stop_if_asked). Its own pipe
        # is watched by both waits: the wait that spaces frames leaves the wake-ups' pipe alone.
        self.stop_signal: Optional[int] = None
        self._stop_read, self._stop_write = os.pipe()
        os.set_blocking(self._stop_write, False)

    def ask_to_stop(self, signum, _frame=None) -> None:
        """The live loop's handler of the stop signals: it only wakes the loop, which raises at
        a point of its own (raised in the handler, the exception was lost in a bare ``except:``
        of npyscreen, or left a lock taken); a second signal raises at once."""
        if self.stop_signal is not None:
            raise stop_exception(signum)
        self.stop_signal = signum
        try:
            os.write(self._stop_write, b"!")
        except OSError:
            pass

    def stop_if_asked(self) -> None:
        """Raise what the stop signal that came ends the program with (stop_exception)."""
        if self.stop_signal is not None:
            raise stop_exception(self.stop_signal)

    def wake(self, *signal_args) -> None:
        """Never blocks nor raises: a full pipe already holds a wake-up. As a signal handler
        (a resize) it always writes: the resize must not wait for the next data."""
        if self._pending and not signal_args:
            return
        self._pending = True
        try:
            os.write(self._write, b"!")
        except OSError:
            pass

    def wait(self, terminal_fd: int, timeout: Optional[float], for_key_only: bool = False) -> bool:
        """Sleep until a key can be read from ``terminal_fd`` (True), or a wake-up (unless
        ``for_key_only``), a stop signal or the timeout (seconds; None: none) comes first
        (False). Wake-ups are consumed: the frame drawn next shows what they announced."""
        fds = [terminal_fd, self._stop_read] + ([] if for_key_only else [self._read])
        ready = _select(fds, None if timeout is None else max(0.0, timeout))
        if ready is None:
            return True
        if for_key_only or self._read in ready:
            self.drain()
        return terminal_fd in ready

    def drain(self) -> None:
        try:
            while os.read(self._read, 4096):
                pass
        except OSError:
            pass
        # after the read: a wake-up that found the flag set is in the frame drawn next
        self._pending = False

    def close(self) -> None:
        for fd in (self._read, self._write, self._stop_read, self._stop_write):
            try:
                os.close(fd)
            except OSError:
                pass


def _select(fds, timeout: Optional[float]):
    """The ready ``fds``; () when a signal cut the wait short; None when select() failed
    otherwise (a closed terminal: the caller says a key came, and getch reports it)."""
    try:
        return select.select(fds, [], [], timeout)[0]
    except (OSError, ValueError) as exc:
        if getattr(exc, "errno", None) == errno.EINTR:
            return ()
        return None


def next_redraw_in(ctl, now: float) -> Optional[float]:
    """Seconds until the screen must change although nothing new arrived, or None (never):
    a message that expires, a retry countdown while a source is down, and the age of data that
    is overdue (its next reading should have come: the age shows the server is slow). Paused,
    the header shows when the frozen data was read, which needs no redraw.

    An idle proxytop therefore draws once per reading and not in between.
    """
    deadlines = []
    message = ctl.ui.message
    if message and message[2] > ctl.clock():
        deadlines.append(message[2] - ctl.clock())
    engine = ctl.engine
    engine_now = engine.now()
    # "retrying in 3s" counts down: redrawn as each second ticks. A live engine keeps the
    # states that count down (none or a few of a fleet's 501).
    for state in engine.counting_down():
        change = state.countdown_changes_in(engine_now)
        if change is not None:
            deadlines.append(change + 0.01)
    if ctl.events_behind():  # a replay's events folded a frame's worth at a time: the next frame now
        deadlines.append(0.0)
    snapshot = ctl.newest_of_screen()
    latest = snapshot.taken_at if snapshot is not None else None
    if latest is not None and not engine.paused:
        overdue_at = latest + max(ctl.interval(), ctl.minimum_interval(ctl.screen)) + 1.0
        deadlines.append(max(overdue_at - now, 0.0) if now < overdue_at else 1.0)
    return max(0.0, min(deadlines)) if deadlines else None
