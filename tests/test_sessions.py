"""The Sessions screen: one MySQL server's sessions with their transactions, over real MariaDB
servers the suite starts, driven in a terminal; KILL QUERY / KILL CONNECTION after a yes (and
nothing sent on no), EXPLAIN, a busy thread's CPU, a user without PROCESS, --batch; and the pure
functions (rates from /proc counters, which statement may be EXPLAINed) on their own."""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from types import SimpleNamespace
from typing import List, Optional

import pymysql
import pytest

from proxytop.collectors.innodb_fleet import Fleet
from proxytop.collectors.mysql_sessions import (COLUMNS, NO_PROCESS, Sessions, SessionsReading, io_bytes,
                                                join_to_drop, stat_ticks)
from proxytop.config.mysql_options import Credentials
from proxytop.core import Snapshot, Table
from proxytop.polling.connection import Endpoint
from proxytop.screens.sessions import NOT_LOCAL, SessionsScreen, explain_refusal, thread_rates
from tests.mariadb import MariaDBServer
from tests.terminal import DOWN, ENTER, ESC, proxytop_command
from tests.test_safety import GENERAL_LOG

SCHEMA = "sessions_test"


def mysql_args(*servers, user=None, password=None) -> list:
    args = []
    for server in servers:
        args += ["--mysql", server.address]
    return args + ["--mysql-user", user or servers[0].user, "--mysql-password", password or servers[0].password]


@pytest.fixture(scope="module")
def shop(mariadb):
    """A table to lock and explain, on the shared server."""
    mariadb.query(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    mariadb.query(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
    mariadb.query(f"REPLACE INTO {SCHEMA}.t VALUES (1, 1), (2, 2), (3, 3)")
    return mariadb


class Running:
    """A statement run on its own connection in a thread; ``error`` is what it ended with."""

    def __init__(self, server, sql: str, **connect):
        self.conn = server.connect(**connect)
        self.id = self.conn.thread_id()
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._run, args=(sql,), daemon=True)
        self.thread.start()

    def _run(self, sql: str) -> None:
        try:
            with self.conn.cursor() as cursor:
                cursor.execute(sql)
                cursor.fetchall()
        except BaseException as exc:  # the test looks at it
            self.error = exc

    def finish(self, server) -> None:
        if self.thread.is_alive():
            server.query(f"KILL CONNECTION {self.id}")
        self.thread.join(10)
        try:
            self.conn.close()
        except pymysql.err.Error:
            pass


def session_line(screen: str, session_id: int) -> str:
    return next((line for line in screen.splitlines() if re.match(rf"\s*{session_id}\s+\S", line)), "")


def running(server, session_id: int) -> bool:
    """The session is still running its statement (asked as root, on a connection of the test's)."""
    rows = server.query("SELECT COMMAND FROM information_schema.PROCESSLIST WHERE ID = %s", (session_id,))
    return bool(rows) and rows[0][0] == "Query"


def logged(server, text: str) -> bool:
    """The server's general log holds ``text`` (what proxytop sent)."""
    with open(os.path.join(server.datadir, GENERAL_LOG), encoding="utf-8", errors="replace") as handle:
        return text in handle.read()


def show_only(term, session_id: int) -> str:
    """Filter the table to one session (the cursor is then on it)."""
    term.send("/")
    term.send(f"id={session_id}" + ENTER)
    return term.wait_until(lambda s: session_line(s, session_id) != "", what=f"session {session_id} alone")


def test_a_sleeping_session_with_an_open_transaction_is_shown_with_its_age_and_locks(proxytop_term, shop):
    holder = shop.connect()
    try:
        with holder.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(f"UPDATE {SCHEMA}.t SET v = v + 1 WHERE id IN (1, 2)")
        term = proxytop_term(*mysql_args(shop), "--screen", "sessions", cols=200, rows=30)
        # Sleep (no state), RUNNING, an age of a second or more, 2 rows locked and 2 modified
        pattern = r"Sleep\s+\S+\s+\u2014\s+RUNNING\s+([1-9]\.\d\ds|\d\ds)\s+2\s+2\b"
        screen = term.wait_until(lambda s: re.search(pattern, session_line(s, holder.thread_id())) is not None,
                                 timeout=20, what="the idle session's transaction")
        assert f"Server  {shop.address}" in screen and "idle session" not in session_line(screen, holder.thread_id())
        assert "proxytop's own session hidden" in screen
        term.send(ENTER)
        term.wait_until(lambda s: f"Session {holder.thread_id()} of {shop.address}" in s
                        and "Idle in a transaction" in s, what="the session's detail")
        term.send("q")
        assert term.wait_exit(5) == 0
    finally:
        holder.rollback()
        holder.close()


def test_kill_query_and_kill_connection_after_a_yes_and_nothing_on_no(proxytop_term, shop):
    sleeper = Running(shop, "SELECT SLEEP(60)")
    victim = Running(shop, "SELECT SLEEP(61)")
    try:
        term = proxytop_term(*mysql_args(shop), "--screen", "sessions", cols=200, rows=30)
        term.wait_until(lambda s: "SELECT SLEEP(60)" in session_line(s, sleeper.id), timeout=20, what="the sleeper")
        show_only(term, sleeper.id)
        term.send("k")
        term.wait_for(f"Kill the statement of session {sleeper.id} on {shop.address}?")
        term.send("n")
        term.wait_for("cancelled: nothing was sent")
        assert sleeper.thread.is_alive() and running(shop, sleeper.id)
        assert not logged(shop, f"KILL QUERY {sleeper.id}")
        term.send("k")
        term.wait_for(f"KILL QUERY {sleeper.id}")
        term.send("y")
        sleeper.thread.join(15)
        assert isinstance(sleeper.error, pymysql.err.OperationalError) and sleeper.error.args[0] == 1317
        with sleeper.conn.cursor() as cursor:  # KILL QUERY left the session connected
            cursor.execute("SELECT 1")
        term.wait_for(f"KILL QUERY {sleeper.id} sent to {shop.address}")

        term.send("\\")  # the filter cleared, then the victim alone
        show_only(term, victim.id)
        term.send("K")
        term.wait_for(f"Kill session {victim.id} on {shop.address}?")
        term.send(ESC)  # any key but y sends nothing
        term.wait_for("cancelled: nothing was sent")
        assert running(shop, victim.id) and not logged(shop, f"KILL CONNECTION {victim.id}")
        term.send("K")
        term.wait_for(f"KILL CONNECTION {victim.id}")
        term.send("y")
        victim.thread.join(15)
        assert isinstance(victim.error, pymysql.err.OperationalError) and victim.error.args[0] == 2013
        term.wait_until(lambda s: session_line(s, victim.id) == "", what="the killed session gone")
    finally:
        sleeper.finish(shop)
        victim.finish(shop)


def test_explain_of_a_select_and_the_refusal_for_an_update(proxytop_term, shop):
    reader = Running(shop, "SELECT SLEEP(30), v FROM t WHERE id = 3", database=SCHEMA)
    holder = shop.connect()
    waiter = None
    try:
        with holder.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(f"UPDATE {SCHEMA}.t SET v = v + 1 WHERE id = 1")
        waiter = Running(shop, f"UPDATE {SCHEMA}.t SET v = v + 10 WHERE id = 1")  # waits for the lock
        term = proxytop_term(*mysql_args(shop), "--screen", "sessions", cols=200, rows=30)
        term.wait_until(lambda s: "LOCK WAIT" in session_line(s, waiter.id) and "SLEEP(30)" in session_line(s, reader.id),
                        timeout=20, what="the waiting UPDATE and the SELECT")
        show_only(term, waiter.id)
        term.send("e")
        term.wait_for("EXPLAIN only for a SELECT (this is an UPDATE)")
        assert not logged(shop, "EXPLAIN UPDATE")
        term.send("\\")
        show_only(term, reader.id)
        term.send("e")
        # the plan of the statement, run in the session's schema: a lookup by the primary key
        term.wait_until(lambda s: f"EXPLAIN of session {reader.id} on {shop.address}" in s
                        and re.search(r"key\s+PRIMARY", s) is not None and "const" in s, timeout=15, what="the plan")
        assert logged(shop, "SET STATEMENT max_statement_time=2 FOR EXPLAIN SELECT SLEEP(30), v FROM t WHERE id = 3")
    finally:
        holder.rollback()
        holder.close()
        reader.finish(shop)
        if waiter is not None:
            waiter.finish(shop)


def test_a_busy_session_shows_its_thread_cpu_on_the_local_server(proxytop_term, shop):
    busy = Running(shop, "SELECT BENCHMARK(2000000000, MD5('x'))")
    try:
        term = proxytop_term(*mysql_args(shop), "--screen", "sessions", cols=200, rows=30)

        def cpu(screen: str) -> float:
            # CPU% (its title has the unit), then Read/s and Write/s, sizes
            found = re.search(r"\s(\d+(?:\.\d)?)\s+\S+B\s+\S+B\s", session_line(screen, busy.id))
            return float(found.group(1)) if found else 0.0

        screen = term.wait_until(lambda s: cpu(s) >= 30.0, timeout=20, what="the busy session's CPU%")
        assert "BENCHMARK" in session_line(screen, busy.id) and NOT_LOCAL not in screen
    finally:
        busy.finish(shop)


def test_a_user_without_process_sees_its_own_sessions_and_why(proxytop_term, shop):
    shop.create_user("sessions_np", "np-pw", ["USAGE"])
    own = Running(shop, "SELECT SLEEP(30)", user="sessions_np", password="np-pw")
    other = Running(shop, "SELECT SLEEP(31)")  # root's: not visible without PROCESS
    try:
        term = proxytop_term(*mysql_args(shop, user="sessions_np", password="np-pw"), "--screen", "sessions",
                             cols=200, rows=30)
        screen = term.wait_until(lambda s: "SLEEP(30)" in session_line(s, own.id) and NO_PROCESS in s,
                                 timeout=20, what="the user's own session and the note")
        assert "SLEEP(31)" not in screen and session_line(screen, other.id) == ""
    finally:
        own.finish(shop)
        other.finish(shop)


def test_enter_on_servers_opens_the_sessions_of_that_server_and_n_steps_to_the_next(proxytop_term, shop):
    second = MariaDBServer(name="sessions-2").start()
    try:
        first, later = sorted([shop, second], key=lambda s: s.address)
        term = proxytop_term(*mysql_args(shop, second), cols=200, rows=30)
        term.wait_until(lambda s: all(re.search(rf"^{re.escape(x.address)}\s.*primary", s, re.M) for x in (shop, second)),
                        timeout=20, what="both servers")
        term.send(DOWN)
        term.send(ENTER)
        term.wait_until(lambda s: f"Server  {later.address}" in s and "2:Sessions" in s and "n/N" in s,
                        what="the sessions of the second server")
        term.send("n")
        term.wait_for(f"Server  {first.address}")
        term.send("1")  # the Servers screen's cursor followed
        term.send(ENTER)
        term.wait_for(f"Server  {first.address}")
    finally:
        second.stop()


def test_a_server_that_goes_down_is_said_above_its_last_sessions(proxytop_term):
    server = MariaDBServer(name="sessions-down").start()
    try:
        term = proxytop_term(*mysql_args(server), cols=160, rows=30)
        term.wait_until(lambda s: "1:Servers" in s and re.search(rf"^{re.escape(server.address)}\s", s, re.M),
                        timeout=20, what="the server")
        term.send(ENTER)
        term.wait_until(lambda s: f"Server  {server.address}" in s and "Sessions" in s and "waiting" not in s,
                        timeout=20, what="its sessions")
        server.stop()
        term.wait_until(lambda s: re.search(r"down, retrying( in \d+s| now)?: .*\(what follows is its last reading\)", s),
                        timeout=30, what="the server said down above its last sessions")
    finally:
        server.stop()


def test_batch_json_of_the_sessions_screen(shop):
    holder = shop.connect()
    try:
        with holder.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(f"UPDATE {SCHEMA}.t SET v = v + 1 WHERE id = 3")
        result = subprocess.run(list(proxytop_command()) + mysql_args(shop)
                                + ["--batch", "--count", "2", "--screen", "sessions", "--format", "json"],
                                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stderr
        reports = [json.loads(line) for line in result.stdout.splitlines()]
        assert [r["screen"] for r in reports] == ["sessions", "sessions"]
        last = reports[-1]
        assert {"id", "trx_state", "trx_age", "rows_locked", "cpu_pct", "info"} <= set(last["columns"])
        row = next(r for r in last["rows"] if r["id"] == holder.thread_id())
        assert row["command"] == "Sleep" and row["trx_state"] == "RUNNING" and row["rows_modified"] == 1
        assert any("proxytop's own session hidden" in note for note in last["notes"])
    finally:
        holder.rollback()
        holder.close()


# ----- the pure parts ---------------------------------------------------------------------------------

def test_thread_rates_from_two_readings_of_the_counters():
    # 150 ticks of CLK_TCK 100 in 2 s: 0.75 s of CPU a second; 1 MiB read in 2 s
    assert thread_rates((9, 100, 0, 0), (9, 250, 1 << 20, 0), 2.0, 100) == (75.0, 524288.0, 0.0)
    assert thread_rates((9, 100, 0, 0), (10, 250, 0, 0), 2.0, 100) == (None, None, None)  # another thread
    assert thread_rates((9, 100, 5, 5), (9, 90, 0, 0), 2.0, 100) == (None, None, None)  # counters went back
    assert thread_rates((9, 100, 0, 0), (9, 100, 0, 0), None, 100) == (None, None, None)  # no interval


def test_stat_and_io_of_a_thread_are_parsed():
    assert stat_ticks("42 (my sql) d) R 1 2 3 4 5 6 7 8 9 10 300 45 0 0") == 345
    assert stat_ticks("garbage") is None
    assert io_bytes("read_bytes: 12\nwrite_bytes: 34\ncancelled_write_bytes: 5\n") == (12, 34)
    assert io_bytes("") == (None, None)


def test_the_threads_of_sessions_not_idle_are_read_from_proc(tmp_path):
    proc = tmp_path / "proc"
    for tid, ticks in ((501, (30, 12)), (502, (7, 1))):
        task = proc / "500" / "task" / str(tid)
        task.mkdir(parents=True)
        (task / "stat").write_text(f"{tid} (mariadbd) S 1 1 1 0 -1 0 0 0 0 0 {ticks[0]} {ticks[1]} 0 0 20 0\n")
    (proc / "500" / "task" / "501" / "io").write_text("read_bytes: 4096\nwrite_bytes: 0\n")
    collector = Sessions(Endpoint(host="127.0.0.1", port=3306), proc=str(proc))
    rows = ((1, "a", "h", None, "Query", 5, "", 501, "SELECT 1", 0, None, None, None, None),
            (2, "a", "h", None, "Sleep", 5, "", 502, None, 0, "RUNNING", 3, 1, 1),  # idle in a transaction
            (3, "a", "h", None, "Sleep", 5, "", 503, None, 0, None, None, None, None))  # idle: not read
    found = collector._threads(500, Table(COLUMNS, rows))
    assert found == ((1, 501, 42, 4096, 0), (2, 502, 8, None, None))


def test_which_join_is_left_out_when_refused():
    assert join_to_drop(1227, "Access denied; you need the PROCESS privilege", True, True, True) == "sessions.trx"
    assert join_to_drop(1142, "SELECT command denied ... for table 'threads'", False, True, True) == "sessions.threads"
    assert join_to_drop(1227, "Access denied; PROCESS", False, True, False) == "sessions.trx"
    assert join_to_drop(1146, "no such table", True, False, True) is None


def test_explain_is_refused_for_what_is_not_one_whole_select():
    assert explain_refusal({"info": "  /* app */ select * from t"}) is None
    assert explain_refusal({"info": "DELETE FROM t"}) == "EXPLAIN only for a SELECT (this is a DELETE)"
    assert explain_refusal({"info": "INSERT INTO t SELECT 1"}) == "EXPLAIN only for a SELECT (this is an INSERT)"
    assert "cut" in explain_refusal({"info": "SELECT " + "x" * 10, "_cut": True})
    assert "not running a statement" in explain_refusal({"info": None})


class FakeView:
    """The DataView calls the screen makes, over two readings of one server."""

    def __init__(self, name: str, readings: List[SessionsReading]):
        self.snapshots = [Snapshot(name, data, taken_at=float(i * 2), duration=0.01) for i, data in enumerate(readings)]

    def pair(self, name):
        return (self.snapshots[-2] if len(self.snapshots) > 1 else None), self.snapshots[-1]

    def state(self, source):
        return SimpleNamespace(connected=True, error=None)

    def error(self, name):
        return None


def screen_of(host: str) -> SessionsScreen:
    fleet = Fleet(Credentials(user="u"), 3.0, discover=False)
    fleet.add_explicit(Endpoint(host=host, port=3306))
    return SessionsScreen(fleet=fleet)


def test_a_remote_server_has_no_cpu_columns_and_says_why():
    screen = screen_of("db1.example")
    table = Table(COLUMNS, ((5, "app", "h:1", None, "Query", 10, "", None, "SELECT 1", 0, None, None, None, None),))
    view = FakeView("mysql.sessions.db1.example:3306", [SessionsReading(table), SessionsReading(table)])
    rows = screen.rows(view)
    assert rows and "cpu_pct" not in rows[0]
    assert not {"cpu_pct", "read_s", "write_s"} & {c.key for c in screen.columns}
    assert any(NOT_LOCAL in segment[0] for line in screen.notes(view) for segment in line)


def test_a_local_server_has_the_cpu_columns_with_rates():
    screen = screen_of("127.0.0.1")
    table = Table(COLUMNS, ((5, "app", "h:1", None, "Query", 10, "", 77, "SELECT 1", 0, None, None, None, None),))
    view = FakeView("mysql.sessions.127.0.0.1:3306", [
        SessionsReading(table, local=True, threads=((5, 77, 100, 0, 0),)),
        SessionsReading(table, local=True, threads=((5, 77, 300, 8192, 0),))])
    rows = screen.rows(view)
    assert {"cpu_pct", "read_s", "write_s"} <= {c.key for c in screen.columns}
    assert (rows[0]["cpu_pct"], rows[0]["read_s"]) == (100.0, 4096.0)  # 200 ticks in 2 s at 100 a second
