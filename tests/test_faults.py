"""Faults and bad input, against the real proxytop in a terminal.

Servers that die and come back twenty times, a server that accepts and never answers, wrong
credentials, an unknown host, a MariaDB where ProxySQL's admin interface should be, ProxySQL
1.4's columns, columns nobody expected, NULLs where numbers belong, bytes that are not UTF-8,
a 1 MB query, 100,000 sessions, a terminal of 40x10 and of 300x100, no terminal at all: each
gives a clear one-line message or a correct screen, never a traceback, and the terminal is
restored when proxytop leaves.
"""
from __future__ import annotations

import re
import subprocess
import time
from typing import Callable, List

import pytest

from tests.mariadb import running_server
from tests.proxysql_double import ProxySQLDouble
from tests.sockets import silent_server
from tests.terminal import ENTER, ESC, proxytop_command

TABS = "1:ConnPool 2:QueryRules 3:GloStat 4:ProcList 5:ComCount 6:InnoDB 7:IOstat"
HEADERS = {  # a screen is shown when its column titles are (sort arrows removed)
    "1": r"Server\s+Status\s+Used", "2": r"Rule\s+Hits/s", "3": r"Variable\s+Value", "4": r"Session\s+User",
    "5": r"Command\s+Total\s+Count/s", "6": r"Server\s+HG/Status", "7": r"Device\s",
}
SORTED = re.compile(r"^sort (.+?) [\u2191\u2193]", re.MULTILINE)


def plain(screen: str) -> str:
    return screen.replace("\u2191", "").replace("\u2193", "")


def showing(key: str) -> Callable[[str], bool]:
    return lambda screen: re.search(HEADERS[key], plain(screen)) is not None


def sorted_by(screen: str):
    match = SORTED.search(screen)
    return match.group(1) if match else None


def status_line(screen: str) -> str:
    return next((line for line in screen.splitlines() if line.startswith("sort ")), "")


def answers(term, key: str, changed: Callable[[str], bool], within: float = 3.0) -> float:
    """Send a key; the screen must show its effect within ``within`` seconds."""
    started = time.monotonic()
    term.send(key, pause=0)
    term.wait_until(changed, timeout=within, what=f"the effect of {key!r}")
    return time.monotonic() - started


def sort_answers(term, within: float = 3.0) -> float:
    before = sorted_by(term.text())
    return answers(term, "s", lambda s: sorted_by(s) not in (None, before), within)


def leaves_cleanly(term, timeout: float = 10.0) -> None:
    """q: exit status 0, no traceback anywhere, the alternate screen left (terminal restored)."""
    term.send("q", pause=0)
    assert term.wait_exit(timeout) == 0
    raw = term.output()
    assert b"Traceback" not in raw
    assert raw.rfind(b"\x1b[?1049l") > raw.rfind(b"\x1b[?1049h") >= 0


def visit_every_screen(term, within: float = 5.0) -> List[str]:
    """Each screen in turn: its columns appear, its status line names no error."""
    screens = []
    for key in "1234567":
        term.send(key, pause=0)
        screen = term.wait_until(showing(key), timeout=within, what=f"screen {key}")
        time.sleep(0.6)  # a reading or two
        screen = term.text()
        assert "Traceback" not in screen
        assert "error" not in status_line(screen).lower(), screen
        screens.append(screen)
    return screens


def fill(columns, values: dict) -> list:
    return [values.get(c) for c in columns]


# ----- servers that die and come back --------------------------------------------------------------

CYCLES = 20
INTERVAL = 1.0


def test_proxysql_and_mariadb_killed_and_restarted_twenty_times(proxytop_term, recording):
    """Both servers killed (no clean shutdown) and restarted 20 times in one session: the outage
    is shown, keys answer while the servers are away and after, and each recovery is seen
    within two intervals of the servers being back."""
    with running_server(name="faults") as server:
        double = ProxySQLDouble(recording=recording)

        def only_this_server(columns, rows):  # ProxySQL lists the MariaDB as its backend
            return columns, [fill(columns, {"hostgroup_id": "10", "hostname": "127.0.0.1", "port": str(server.port),
                                            "status": "ONLINE", "weight": "1", "max_connections": "100",
                                            "comment": "faults"})]

        double.transforms["runtime_mysql_servers"] = only_this_server
        double.start()
        key = f"127.0.0.1:{server.port}"
        up = re.compile(re.escape(key) + r"\s+10 ONLINE\s+MariaDB \d+\.\d+\s+OK")
        down = re.compile(re.escape(key) + r".*DOWN")

        def healthy(screen: str) -> bool:
            return bool(up.search(screen)) and re.search(r"\bconnected\b", screen) is not None \
                and "disconnected" not in screen

        try:
            term = proxytop_term("-P", str(double.port), "-d", str(INTERVAL), "--screen", "innodb", "--mysql", key,
                                 "--mysql-user", server.user, "--mysql-password", server.password, cols=160, rows=24)
            term.wait_until(healthy, timeout=30, what="both servers read")
            recoveries, key_times = [], []
            for _ in range(CYCLES):
                double.stop()
                server.process.kill()
                server.process.wait(10)
                term.wait_until(lambda s: "disconnected" in s and down.search(s) is not None, timeout=10,
                                what="the outage shown")
                key_times.append(sort_answers(term))  # keys answer while both are away
                double.start()
                server.restart()
                back = time.monotonic()
                term.wait_until(healthy, timeout=15, what="recovery")
                recoveries.append(time.monotonic() - back)
                key_times.append(sort_answers(term))
            print(f"\nrecoveries (s): {' '.join(f'{r:.2f}' for r in recoveries)}")
            print(f"key answers (s): max {max(key_times):.2f}")
            # Two intervals, and a moment for the first reading to reach the screen.
            assert max(recoveries) <= 2 * INTERVAL + 0.5, recoveries
            assert max(key_times) < 1.0, key_times
            leaves_cleanly(term)
        finally:
            double.stop()


def test_servers_that_accept_and_never_answer(proxytop_term, proxysql_double):
    """ProxySQL hangs from the start, a MySQL server never sends its greeting: timeouts are
    said in one line, every key answers, and proxytop leaves at once."""
    proxysql_double.hang(True)
    with silent_server() as port:
        term = proxytop_term("-P", str(proxysql_double.port), "--connect-timeout", "1", "--mysql", f"127.0.0.1:{port}",
                             "--no-discover", "--mysql-user", "u", "--mysql-password", "p", cols=240, rows=30)
        screen = term.wait_for("disconnected, retrying", timeout=10)
        assert "did not answer as a MySQL server would (nothing in 1 s)" in term.wait_for("nothing in 1 s", timeout=10)
        for key in "1234567":  # every screen answers while both servers hang
            assert answers(term, key, showing(key), within=1.5) < 1.5
        term.send("6", pause=0)
        term.wait_for(rf"127\.0\.0\.1:{port}.*DOWN.*timeout", timeout=10)
        assert answers(term, "?", lambda s: "proxytop keys" in s, within=1.5) < 1.5
        term.send(ESC, pause=0.4)
        term.send("1", pause=0)
        term.wait_until(showing("1"), timeout=2)
        proxysql_double.hang(False)
        # the rows were on screen during the hang too: wait for the header to say connected
        term.wait_until(lambda s: "127.0.0.1:3313" in s and "disconnected" not in s.splitlines()[1], timeout=10,
                        what="connected again")
        started = time.monotonic()
        leaves_cleanly(term, timeout=5)
        assert time.monotonic() - started < 3  # a worker stuck on the silent server delays nothing


def test_a_proxysql_that_hangs_after_connecting_holds_up_no_key(proxytop_term, proxysql_double):
    """Connected, then ProxySQL stops answering (as under SIGSTOP): switching screens, whose
    readings the hung connection can't give, answers at once (it took a second), and the
    header says the server stopped answering, not that the port is not MySQL."""
    term = proxytop_term("-P", str(proxysql_double.port), "--connect-timeout", "2", "--no-discover", cols=160, rows=30)
    term.wait_for("127.0.0.1:3313")
    proxysql_double.hang(True)
    term.wait_for("disconnected, retrying", timeout=15)
    for key in "2345671":
        assert answers(term, key, showing(key), within=0.6) < 0.6
    screen = term.wait_for("the server did not answer in time", timeout=15)
    assert "not answer as a MySQL server would" not in screen
    proxysql_double.hang(False)
    term.wait_until(lambda s: "disconnected" not in s.splitlines()[1], timeout=15, what="connected again")
    leaves_cleanly(term)


def test_a_down_servers_reason_is_readable_at_140_columns(proxytop_term, proxysql_double):
    # The reason runs over the InnoDB numbers the server could not give instead of being cut.
    with silent_server() as port:
        term = proxytop_term("-P", str(proxysql_double.port), "--screen", "innodb", "--no-discover",
                             "--mysql", f"127.0.0.1:{port}", "--mysql-user", "u", "--mysql-password", "p",
                             "--connect-timeout", "1", cols=140, rows=20)
        reason = rf"127\.0\.0\.1:{port}\s.*DOWN\s+down, retrying (in \d+s|now): timeout: the server did not answer in time"
        screen = term.wait_for(reason, timeout=15)
        row = next(line for line in screen.splitlines() if "DOWN" in line)
        assert "\u2026" not in row and len(row.rstrip()) <= 140
        leaves_cleanly(term)


# ----- wrong places, wrong credentials -----------------------------------------------------------

@pytest.mark.parametrize("case", ["wrong password", "unknown host", "mariadb on the admin port",
                                  "admin/admin on mariadb", "proxysql's traffic port"])
def test_bad_connection_settings_are_one_plain_line(proxytop_term, proxysql_double, mariadb, recording, case):
    traffic = None
    if case == "wrong password":
        args, expected, secret = ["-P", str(proxysql_double.port), "-p", "not-the-pw-42"], "access denied", "not-the-pw-42"
    elif case == "unknown host":
        args, expected, secret = ["-H", "no-such-host.invalid"], "unknown host", None
    elif case == "mariadb on the admin port":  # said, and then watched as a MySQL server
        args = ["-P", str(mariadb.port), "-u", mariadb.user, "-p", mariadb.password]
        expected, secret = f"{mariadb.address} is a MySQL server, not a ProxySQL admin interface (10.", mariadb.password
    elif case == "admin/admin on mariadb":  # the user name equals the password and is still shown
        args = ["-P", str(mariadb.port), "-u", "admin", "-p", "admin"]
        expected, secret = "access denied: Access denied for user 'admin'@", None
    else:
        traffic = ProxySQLDouble(recording=recording, traffic=True).start()
        args = ["-P", str(traffic.port), "-u", "sbtest", "-p", "sbtest"]
        expected, secret = "not a ProxySQL admin interface (6033 is ProxySQL's traffic port, 6032 the admin port)", None
    try:
        term = proxytop_term(*args, "--connect-timeout", "2", cols=200, rows=24)
        screen = term.wait_for(re.escape(expected), timeout=15)
        line = next(line for line in screen.splitlines() if expected in line)
        if "mariadb" in case:  # its row on the Servers screen, or what was found, said at the foot
            assert line.startswith(mariadb.address) or line.startswith(expected), line
        else:
            assert line.startswith("every ") and "disconnected, retrying" in line  # the header's second line
        if secret:
            assert secret not in screen
        if "mariadb" not in case:  # (the MySQL half's screens: tests/test_servers.py)
            visit_every_screen(term)  # nothing else breaks
        leaves_cleanly(term)
    finally:
        if traffic is not None:
            traffic.stop()


# ----- what ProxySQL sends -----------------------------------------------------------------------

def test_proxysql_1_4_columns_on_every_screen(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording, version="1.4").start()
    try:
        term = proxytop_term("-P", str(double.port), "--no-discover", cols=200, rows=40)
        term.wait_for("ProxySQL 1.4.16", timeout=10)
        screens = visit_every_screen(term)
        assert "127.0.0.1:3313" in screens[0] and re.search(r"SELECT\s+[\d.]+k", screens[4])
        leaves_cleanly(term)
    finally:
        double.stop()


IDENTITY = {"hostgroup", "srv_port", "hostgroup_id", "port", "rule_id", "SessionID", "ThreadID", "cli_port",
            "l_srv_port"}  # what names a row: kept, so that the rows can still be recognised


def surprising(columns, rows, nulls: bool):
    """New columns before and after the known ones, and (``nulls``) NULL in every other row's
    numeric cells (counters, gauges, settings)."""
    keep = [c in IDENTITY for c in columns]
    columns = ["aa_new_in_3_0"] + list(columns) + ["zz_future_counter"]
    out = []
    for i, row in enumerate(rows):
        if nulls and i % 2 == 1:
            row = [None if not kept and ((isinstance(v, str) and re.fullmatch(r"-?\d+(\.\d+)?", v))
                                         or isinstance(v, (int, float))) else v for v, kept in zip(row, keep)]
        out.append(["surprise"] + list(row) + [str(12345 + i)])
    return columns, out


def sessions(columns, rows):
    made = []
    for n in range(1, 7):
        made.append(fill(columns, {
            "ThreadID": "1", "SessionID": str(n), "user": "app", "db": "shop", "cli_host": "10.0.0.5",
            "cli_port": str(40000 + n), "hostgroup": "10", "l_srv_host": "10.0.0.1", "l_srv_port": "51000",
            "srv_host": "127.0.0.1", "srv_port": "3311", "command": "Query", "time_ms": str(n * 700),
            "info": f"SELECT {n}", "status_flags": "0", "extended_info": None}))
    return columns, made


@pytest.mark.parametrize("nulls", [False, True], ids=["extra columns", "extra columns and NULLs"])
def test_unexpected_columns_and_nulls_on_every_screen(proxytop_term, recording, nulls):
    double = ProxySQLDouble(recording=recording)
    for table in ("stats_mysql_connection_pool", "stats_mysql_global", "stats_mysql_commands_counters",
                  "stats_mysql_query_rules", "runtime_mysql_servers", "runtime_mysql_query_rules", "mysql_query_rules",
                  "stats_memory_metrics"):
        double.transforms[table] = lambda c, r, n=nulls: surprising(c, r, n)
    double.transforms["stats_mysql_processlist"] = lambda c, r, n=nulls: surprising(*sessions(c, r), n)
    double.start()
    try:
        term = proxytop_term("-P", str(double.port), "--no-discover", cols=200, rows=40)
        term.wait_for("127.0.0.1:3313", timeout=10)
        screens = visit_every_screen(term)
        assert len(re.findall(r"127\.0\.0\.1:331\d\s+(ONLINE|SHUNNED)", screens[0])) == 3
        assert re.search(r"^\s+\d+\s+app\s+shop", screens[3], re.MULTILINE)
        if nulls:
            assert "\u2014" in screens[0]  # a missing number is shown as a dash
        for key in "1234":  # and the details open
            term.send(key, pause=0.3)
            term.send(ENTER, pause=0.5)
            assert "Traceback" not in term.text()
            term.send(ESC, pause=0.4)
        leaves_cleanly(term)
    finally:
        double.stop()


BAD_BYTES = b"SELECT 'caf\xe9 \xff\xfe' /* latin-1 and garbage */"
HUGE = "SELECT '" + "x" * 1_000_000 + "' AS one_megabyte"


def odd_sessions(columns, rows):
    _, made = sessions(columns, rows)
    at = {c: i for i, c in enumerate(columns)}
    made[0][at["info"]] = BAD_BYTES
    made[0][at["user"]] = b"r\xe9porting"
    made[1][at["info"]] = HUGE
    made[1][at["time_ms"]] = "999999"  # the longest running: first in the list
    return columns, made


def test_non_utf8_bytes_and_a_one_megabyte_query_in_the_processlist(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording)
    double.transforms["stats_mysql_processlist"] = odd_sessions
    double.start()
    try:
        term = proxytop_term("-P", str(double.port), "--screen", "proclist", "--no-discover", cols=160, rows=40)
        # undecodable bytes shown as replacement characters
        screen = term.wait_until(lambda s: "SELECT 'xxxxxxxx" in s and "caf\ufffd" in s, timeout=10,
                                 what="the 1 MB query and the undecodable one")
        assert len(max(screen.splitlines(), key=len)) <= 160
        term.send(ENTER, pause=0)  # the 1 MB query's detail
        screen = term.wait_for("Session 2", timeout=10)
        assert "xxxxxxxxxxxx" in screen
        term.send("\x1b[6~", pause=0.3)  # page down inside it
        term.send(ESC, pause=0.4)
        term.wait_until(showing("4"), timeout=5)
        sort_answers(term)
        leaves_cleanly(term)
    finally:
        double.stop()


def test_a_hundred_thousand_sessions(proxytop_term):
    """100,000 sessions (80,000 of them active) from a double in its own process: the list is
    shown, keys answer, idle sessions toggle, proxytop leaves cleanly.

    The double (Python) takes several seconds, on a busy machine tens of seconds, to build the
    100,000-row processlist before its first byte; ProxySQL itself takes a fraction of that. A
    DBA whose ProxySQL is that slow gets "timeout ... a slow server needs a longer
    --connect-timeout" (test_errors) and gives it more time, as this test does."""
    from tests.benchmark import DoubleProcess
    from tests.test_safety import ALLOWED, SETUP

    double = DoubleProcess({"sessions": 100_000, "rules": 10, "backends": 10}).start()
    try:
        term = proxytop_term("-P", str(double.port), "--screen", "proclist", "--no-discover",
                             "--connect-timeout", "90", cols=160, rows=30)
        term.wait_until(lambda s: re.search(r"sort Time \u2193\s+80000 rows", s) is not None and "100.0k sessions" in s,
                        timeout=180, what="80000 of 100000 sessions listed")
        sort_answers(term, within=10)
        answers(term, "i", lambda s: re.search(r"\s100000 rows", s) is not None, within=15)
        answers(term, "/", lambda s: "filter: " in s, within=10)
        term.send("user:app3", pause=0.2)
        answers(term, ENTER, lambda s: re.search(r"filter user:app3\s+\d+/100000 rows", s) is not None, within=15)
        leaves_cleanly(term, timeout=15)
    finally:
        double.stop()
    assert double.statements, "the double's statements were not reported"
    assert all(ALLOWED.match(sql) or SETUP.match(sql) for _, sql in double.statements), double.statements
    assert not double.kills


# ----- the terminal ------------------------------------------------------------------------------

def test_resized_to_40x10_and_300x100_while_running(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "--no-discover", cols=120, rows=30)
    term.wait_for("127.0.0.1:3313")
    term.resize(40, 10)
    # at 40 columns the tab bar keeps every number, the current screen's title beside its own
    small = term.wait_until(lambda s: "1:ConnPool 2 3 4 5 6 7 8 9 0 T E\n" in s + "\n", timeout=10,
                            what="the 40x10 layout")
    for key in "1234567?":
        term.send(key, pause=0.5)
        if key == "?":
            small = term.wait_until(lambda s: "proxytop keys" in s and len(s.splitlines()) == 10, timeout=5,
                                    what="help at 40x10")
        else:
            title = TABS.split()[int(key) - 1]
            small = term.wait_until(lambda s: re.search(rf"^(\d )*{title}( [\dTE])*$", s, re.M) is not None
                                    and len(s.splitlines()) == 10, timeout=5, what="tabs at 40x10")
        lines = small.splitlines()
        assert len(lines) == 10 and all(len(line) <= 40 for line in lines), small
        assert "Traceback" not in small
    term.send(ESC, pause=0.4)
    term.send("1", pause=0.3)
    term.resize(300, 100)
    term.wait_until(lambda s: "Comment" in s and "reader-a" in s and TABS in s and len(s.splitlines()) == 100
                    and s.splitlines()[-1].startswith("q quit"), timeout=10, what="300x100")
    for key in "234567":
        term.send(key, pause=0)
        term.wait_until(showing(key), timeout=5)
    term.resize(80, 24)
    term.send("1", pause=0)
    term.wait_until(lambda s: showing("1")(s) and len(s.splitlines()) == 24, timeout=10)
    leaves_cleanly(term)


@pytest.mark.parametrize("how", ["no terminal on stdin and stdout", "no controlling terminal"])
def test_no_terminal_at_all_is_one_line(how):
    kwargs = dict(capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    if how == "no controlling terminal":
        kwargs["start_new_session"] = True
    result = subprocess.run(list(proxytop_command()) + ["-P", "1"], **kwargs)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("proxytop: not a terminal"), result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr


@pytest.mark.parametrize("term_type", ["dumb", "", "vt52-no-such-type"])
def test_a_terminal_that_cannot_show_the_screen_is_one_line(proxytop_term, term_type):
    term = proxytop_term("-P", "1", env={"TERM": term_type})
    assert term.wait_exit(10) == 1
    out = term.output().decode("utf-8", "replace")
    lines = [line for line in out.replace("\r", "").split("\n") if line.strip()]
    assert "".join(lines).startswith("proxytop: error: the terminal type") and "--batch" in "".join(lines), out
    assert "Traceback" not in out and "\x1b[?1049h" not in out  # curses never started
