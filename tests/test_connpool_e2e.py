"""ConnPool end to end: the installed proxytop in a pseudo-terminal against the ProxySQL double."""
from __future__ import annotations

import re
import time

import pytest

from tests.proxysql_double import ProxySQLDouble
from tests.terminal import ESC


def backend_rows(screen: str):
    """The ConnPool table's backend lines, in screen order: (hostgroup, server, status, line)."""
    rows = []
    for line in screen.splitlines():
        match = re.match(r"^\s*(\d+)\s+(\S+:\d+)\s+(\S+)", line)
        if match:
            rows.append((match.group(1), match.group(2), match.group(3), line))
    return rows


def start(proxytop_term, double, *args, cols=120, rows=30):
    term = proxytop_term("-P", str(double.port), "-d", "1", *args, cols=cols, rows=rows)
    term.wait_for("127.0.0.1:3313")
    return term


def test_shows_recorded_backends_with_rates_after_two_polls(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    screen = term.wait_until(lambda s: re.search(r"127\.0\.0\.1:3311\s+ONLINE.*\d[\d.]*k", s) is not None
                             and "hostgroup 20 total" in s and len(backend_rows(s)) == 3,
                             what="a Queries/s rate on the writer and every backend")
    servers = [r[1] for r in backend_rows(screen)]
    assert servers == ["127.0.0.1:3311", "127.0.0.1:3312", "127.0.0.1:3313"]
    assert "hostgroup 20 total" in screen
    assert "ProxySQL 2.7.2" in screen and "connected" in screen
    # the header's Questions/s is a rate, shown once two samples exist
    assert re.search(r"Q/s [\d.]+k?", screen)
    # the admin user's runtime columns are shown (weight/max_connections -> Used%, its
    # figures bare: the title says %)
    assert "Used%" in screen and all(re.search(r"\s\d+\.\d\s", row[3]) for row in backend_rows(screen))
    print("\n" + screen)


def test_sort_and_reverse_change_the_order(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.wait_until(lambda s: "k " in s or re.search(r"\d\.\dk", s) is not None, what="rates")
    before = [r[1] for r in backend_rows(term.text())]
    assert before == ["127.0.0.1:3311", "127.0.0.1:3312", "127.0.0.1:3313"]
    term.send("s")  # HG -> Server: text, ascending
    screen = term.wait_for("sort Server")
    term.send("r")
    screen = term.wait_for("sort Server \u2193")
    order = [r[1] for r in backend_rows(screen)]
    # hostgroup 20's backends are now in reverse order; hostgroup 10 follows hostgroup 20
    assert order == ["127.0.0.1:3313", "127.0.0.1:3312", "127.0.0.1:3311"], screen
    assert re.search(r"Server\u2193", screen)


def test_filter_status_shunned_leaves_only_shunned_rows(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording, start_frame=70).start()  # 3313 is SHUNNED here
    try:
        term = start(proxytop_term, double)
        term.send("/")
        term.wait_for("filter: ")
        term.send("status:SHUNNED\r")
        screen = term.wait_for("filter status:SHUNNED")
        rows = backend_rows(screen)
        assert rows and all(status == "SHUNNED" for _, _, status, _ in rows), screen
        assert [r[1] for r in rows] == ["127.0.0.1:3313"], screen
        assert "1/3 rows" in screen
        term.send("\\")
        screen = term.wait_until(lambda s: len(backend_rows(s)) == 3, what="all rows after clearing")
    finally:
        double.stop()


def test_bad_filter_is_explained_and_nothing_is_lost(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.send("/")
    term.send("nosuchcol:x\r")
    screen = term.wait_for("no column 'nosuchcol'")
    assert "filter: nosuchcol:x" in screen  # still editing, the text is kept
    term.send(ESC, pause=0.4)
    screen = term.wait_for("filter unchanged")
    assert len(backend_rows(screen)) == 3
    term.send("/")
    term.send("hg=20\r")  # a filter taken: what was said of the last one goes
    screen = term.wait_for("filter hg=20")
    assert "filter unchanged" not in screen


def test_interval_keys_change_the_header(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.wait_for("every 1s")
    term.send("+")
    term.wait_for("every 500ms")
    term.send("-")
    term.send("-")
    term.wait_for("every 2s")
    term.send("p")
    term.wait_for("PAUSED")
    term.send("p")
    term.wait_until(lambda s: "PAUSED" not in s, what="resume")


def test_server_down_keeps_keys_answering_and_recovers(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.wait_for("connected")
    proxysql_double.stop()
    screen = term.wait_for("disconnected, retrying", timeout=15)
    assert "connection refused" in screen or "connection lost" in screen
    # keys still answer while the server is away
    started = time.monotonic()
    term.send("?", pause=0)
    term.wait_for("proxytop keys", timeout=3)
    assert time.monotonic() - started < 2.0
    term.send(ESC, pause=0.4)
    term.wait_until(lambda s: "proxytop keys" not in s, what="help closed")
    proxysql_double.start()
    term.wait_until(lambda s: re.search(r"\bconnected\b", s) and "disconnected" not in s, timeout=20,
                    what="reconnection")


def test_hanging_server_shows_timeout_and_stays_responsive(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double, "--connect-timeout", "1")
    proxysql_double.hang(True)
    screen = term.wait_for("timeout", timeout=15)
    assert "disconnected" in screen
    term.send("2", pause=0)
    term.wait_for(r"sort .*", timeout=2)
    proxysql_double.hang(False)


def test_q_quits_and_restores_the_terminal(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.send("q")
    assert term.wait_exit(5) == 0
    raw = term.output()
    # curses leaves the alternate screen / resets attributes on exit (endwin)
    assert raw.rfind(b"\x1b[?1049l") > raw.rfind(b"\x1b[?1049h") >= 0


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "sighup"])
def test_other_exits_restore_the_terminal(proxytop_term, proxysql_double, how):
    import os
    import signal

    term = start(proxytop_term, proxysql_double)
    if how == "ctrl-c":
        term.send("\x03")
    else:
        os.kill(term.pid, signal.SIGTERM if how == "sigterm" else signal.SIGHUP)
    code = term.wait_exit(5)
    raw = term.output()
    assert raw.rfind(b"\x1b[?1049l") > raw.rfind(b"\x1b[?1049h") >= 0
    assert b"Traceback" not in raw
    assert code == (130 if how == "ctrl-c" else 143)  # 130: interrupted (SIGINT), 143: terminated


def test_ctrl_c_read_as_a_key_quits_too(proxytop_term, proxysql_double):
    """A ^C the terminal passes as a byte (no signal: it came while ncurses had the terminal in
    raw mode, between raw() and cbreak()) ends proxytop as the signal does."""
    import termios

    term = start(proxytop_term, proxysql_double)
    attributes = termios.tcgetattr(term.fd)
    attributes[3] &= ~termios.ISIG  # the pair's line discipline: ^C is then an ordinary byte
    termios.tcsetattr(term.fd, termios.TCSANOW, attributes)
    term.send("\x03")
    assert term.wait_exit(10) == 130
    raw = term.output()
    assert raw.rfind(b"\x1b[?1049l") > raw.rfind(b"\x1b[?1049h") >= 0
    assert b"Traceback" not in raw


def test_stats_user_sees_the_pool_and_is_told_what_needs_admin(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "-u", "stats", "-p", "stats", cols=120, rows=30)
    screen = term.wait_until(lambda s: "need an admin user" in s and "(stats user)" in s and len(backend_rows(s)) == 3,
                             what="the pool and what needs an admin user")


def test_proxysql_1_4_column_set(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording, version="1.4").start()
    try:
        term = start(proxytop_term, double)
        screen = term.wait_for("ProxySQL 1.4.16")
        assert len(backend_rows(screen)) == 3
    finally:
        double.stop()


def test_wrong_password_is_one_plain_line(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "-p", "secret-wrong", cols=120, rows=30)
    screen = term.wait_for("access denied")
    assert "secret-wrong" not in screen
    assert "Traceback" not in screen
