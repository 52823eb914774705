"""The curses loop wakes only for something to do: a key, new data, a resize, a message.

Driven in a pseudo-terminal (the real program): while paused, proxytop writes nothing to the
terminal, yet a key or a resize is answered at once; new readings still appear by themselves.
Also: the ProcList age line and the reading's time in batch JSON.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time

from proxytop.ui import wakeup
from tests.terminal import proxytop_command


def test_wake_up_returns_for_a_wake_a_key_or_the_timeout():
    waker = wakeup.WakeUp()
    key_read, key_write = os.pipe()
    try:
        threading.Timer(0.05, waker.wake).start()
        assert waker.wait(key_read, None) is False  # woken, no key
        waker.wake()
        waker.wake()
        assert waker.wait(key_read, 5.0) is False  # both wake-ups consumed at once
        assert waker.wait(key_read, 0.01) is False  # nothing left: the timeout
        os.write(key_write, b"q")
        assert waker.wait(key_read, None) is True
    finally:
        waker.close()
        os.close(key_read)
        os.close(key_write)


def test_paused_proxytop_writes_nothing_until_a_key_or_a_resize(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "--no-discover", "-d", "1", cols=120, rows=30)
    term.wait_for("127.0.0.1:3313")
    term.wait_until(lambda s: "data " in s, what="the data age")
    term.send("p")
    # Paused, the header says when the frozen data was read (how stale it is, without ageing it
    # on screen every second), and once the "paused" message has gone, not a byte for 3 s.
    term.wait_until(lambda s: "PAUSED" in s and re.search(r"data read at \d\d:\d\d:\d\d", s) is not None,
                    what="when the frozen data was read")
    term.wait_until(lambda s: _quiet_for(term, len(term.output()), 3.0), timeout=20, what="3 s without output")
    term.resize(100, 24)  # nothing else would wake it: the resize must
    term.wait_until(lambda s: "1:ConnPool" in s and len(s.splitlines()[0]) <= 100 and "PAUSED" in s,
                    what="the 100x24 layout while paused")
    term.send("p")  # resumed: new readings appear without a key
    term.wait_until(lambda s: "PAUSED" not in s, what="resumed")
    ages = set()
    term.wait_until(lambda s: _collect_age(s, ages) and len(ages) >= 3, timeout=15,
                    what="the data age changing by itself")


def _quiet_for(term, length: int, seconds: float) -> bool:
    """True once the output has stayed at ``length`` bytes for ``seconds`` (checked as the
    terminal harness polls its predicate)."""
    first = getattr(term, "_quiet_since", None)
    now = time.monotonic()
    if first is None or first[0] != length:
        term._quiet_since = (length, now)
        return False
    return now - first[1] >= seconds


def _collect_age(screen: str, ages: set) -> bool:
    found = re.search(r"data (\S+) old", screen)
    if found:
        ages.add(found.group(1))
    return True


def test_proclist_says_how_old_its_reading_is(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "--no-discover", "--screen", "proclist", cols=140, rows=40)
    term.wait_until(lambda s: re.search(r"as of the reading [\d.]+(µs|ms|s) ago: Time is each session's time then", s)
                    is not None, what="the reading's age")


def test_batch_json_carries_the_time_of_the_reading(proxysql_double):
    environment = dict(os.environ)
    result = subprocess.run(list(proxytop_command()) + ["--batch", "--count", "2", "--screen", "proclist",
                                                         "--format", "json", "-P", str(proxysql_double.port)],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=environment)
    assert result.returncode == 0, result.stderr
    # (not the events' own records: a MySQL server the double lists that cannot be reached is one)
    records = [r for r in map(json.loads, result.stdout.splitlines()) if "screen" in r]
    assert len(records) == 2
    for record in records:
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", record["data_time"])
        # the reading is never newer than the report, and the processlist is read every 2 s
        assert record["timestamp"] - 3.0 <= record["data_timestamp"] <= record["timestamp"] + 0.01


def test_wake_ups_until_the_drain_write_one_byte_and_the_next_one_writes_again():
    """A hundred batches a second announce themselves: one byte waits in the pipe until the
    loop drains it, and the first wake-up after the drain wakes the loop again."""
    waker = wakeup.WakeUp()
    key_read, key_write = os.pipe()
    try:
        for _ in range(50):
            waker.wake()
        assert os.read(waker._read, 100) == b"!"  # read by hand: one byte for the fifty
        os.write(waker._write, b"!")
        assert waker.wait(key_read, 1.0) is False  # drained: nothing pending any more
        waker.wake()
        started = time.monotonic()
        assert waker.wait(key_read, 5.0) is False and time.monotonic() - started < 4.0  # woken, not timed out
        started = time.monotonic()
        assert waker.wait(key_read, 0.2) is False and time.monotonic() - started >= 0.15  # nothing left
        waker.wake(28, None)  # as SIGWINCH's handler: writes even with a wake-up pending
        waker.wake(28, None)
        assert os.read(waker._read, 100) == b"!!"
    finally:
        waker.close()
        os.close(key_read)
        os.close(key_write)


def test_a_stop_signal_wakes_the_loop_which_raises_and_a_second_one_raises_at_once():
    import signal as signals

    import pytest

    waker = wakeup.WakeUp()
    r, w = os.pipe()  # a terminal with no key
    try:
        waker.stop_if_asked()  # nothing asked: nothing raised
        waker.ask_to_stop(signals.SIGTERM, None)  # the handler itself raises nothing
        assert waker.wait(r, 5.0) is False  # woken at once, not by a key
        # The wait that spaces frames (a key only) ends too, long before its time is up.
        started = time.monotonic()
        assert waker.wait(r, 60.0, for_key_only=True) is False and time.monotonic() - started < 30
        with pytest.raises(wakeup.Terminated, match="SIGTERM"):
            waker.stop_if_asked()
        with pytest.raises(KeyboardInterrupt):
            waker.ask_to_stop(signals.SIGINT, None)  # a second signal: the loop did not come round
    finally:
        waker.close()
        os.close(r)
        os.close(w)
    interrupted = wakeup.WakeUp()
    try:
        interrupted.ask_to_stop(signals.SIGINT, None)
        with pytest.raises(KeyboardInterrupt):
            interrupted.stop_if_asked()
    finally:
        interrupted.close()
