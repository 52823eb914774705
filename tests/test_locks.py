"""The Locks screen over real MariaDB servers the suite starts, driven in a terminal: a
three-level chain of lock waits, Enter on a waiter, b to the chain's head in Sessions (and its
kill after a yes), a deadlock provoked by two sessions and parsed, the header's lock-wait alarm
on another screen, --batch; and the pure parts: chains, the deadlock sections of MariaDB (a
real 10.11 sample) and MySQL 8 (written from its manual's example), MySQL 8's data_locks rows
(hand-written in the manual's shape: no MySQL server runs here)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from types import SimpleNamespace
from typing import List, Optional

import pymysql
import pytest

from proxytop.collectors.innodb_fleet import Fleet
from proxytop.collectors.mysql_locks import (EDGE_COLUMNS, EMPTY_SESSIONS, SESSION_COLUMNS, AlarmReading, LocksReading,
                                             waits_sql)
from proxytop.config.mysql_options import Credentials
from proxytop.core import Snapshot, Table
from proxytop.metrics import deadlock
from proxytop.metrics.lock_chains import LongestWait, alarm_text, chains
from proxytop.polling.connection import Endpoint
from proxytop.polling.engine import SourceState
from proxytop.screens import filters
from proxytop.screens.locks import LocksScreen, arrange_chains, lock_rows
from proxytop.screens.table import TableState
from tests.mariadb import running_server
from tests.terminal import DOWN, ENTER, ESC, UP, proxytop_command
from tests.test_sessions import mysql_args

SCHEMA = "locks_test"
DATA = os.path.join(os.path.dirname(__file__), "data", "locks")


@pytest.fixture(scope="module")
def rows_to_lock(mariadb):
    mariadb.query(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    mariadb.query(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
    mariadb.query(f"REPLACE INTO {SCHEMA}.t VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
    return mariadb


class Session:
    """One client session of the test: statements in order, the blocking ones on a thread."""

    def __init__(self, server):
        self.conn = server.connect(database=SCHEMA)
        self.id = self.conn.thread_id()
        self.error: Optional[BaseException] = None
        self.thread: Optional[threading.Thread] = None
        self.run("SET SESSION innodb_lock_wait_timeout = 300")

    def run(self, sql: str) -> None:
        with self.conn.cursor() as cursor:
            cursor.execute(sql)

    def start(self, sql: str) -> None:
        """Send a statement that waits for a lock, on a thread of its own."""
        def blocked() -> None:
            try:
                self.run(sql)
            except BaseException as exc:  # the test looks at it
                self.error = exc
        self.thread = threading.Thread(target=blocked, daemon=True)
        self.thread.start()

    def close(self, server) -> None:
        if self.thread is not None and self.thread.is_alive():
            server.query(f"KILL CONNECTION {self.id}")
            self.thread.join(10)
        try:
            self.conn.close()
        except pymysql.err.Error:
            pass


def waiting(server, session_id: int) -> bool:
    rows = server.query("SELECT trx_state FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = %s",
                        (session_id,))
    return bool(rows) and rows[0][0] == "LOCK WAIT"


def wait_for_lock_wait(server, session: Session, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not waiting(server, session.id):
        assert time.monotonic() < deadline and session.error is None, \
            f"session {session.id} never waited for its lock ({session.error!r})"
        # MariaDB refreshes its copy of the transaction lists only once no one has read it for
        # 0.1 s: asked more often, INNODB_TRX never changes (seen here at every 0.05 s)
        time.sleep(0.25)


def three_level_chain(server) -> List[Session]:
    """A holds id 1 (idle in its transaction); B holds id 2 and waits for A's id 1; C waits
    for B's id 2."""
    a, b, c = Session(server), Session(server), Session(server)
    a.run("BEGIN")
    a.run("UPDATE t SET v = v + 1 WHERE id = 1")
    b.run("BEGIN")
    b.run("UPDATE t SET v = v + 1 WHERE id = 2")
    b.start("UPDATE t SET v = v + 10 WHERE id = 1")
    wait_for_lock_wait(server, b)
    c.start("UPDATE t SET v = v + 100 WHERE id = 2")
    wait_for_lock_wait(server, c)
    return [a, b, c]


def row_of(screen: str, session_id: int) -> str:
    return next((line for line in screen.splitlines() if re.match(rf"\s*(\u2514 )?{session_id}\s", line)), "")


def test_a_three_level_chain_is_shown_as_a_tree_and_b_opens_its_head_in_sessions(proxytop_term, rows_to_lock):
    a, b, c = sessions = three_level_chain(rows_to_lock)
    try:
        term = proxytop_term(*mysql_args(rows_to_lock), "--screen", "locks", cols=200, rows=60)
        screen = term.wait_until(lambda s: re.match(rf"\s*{a.id}\s.*idle in trx", row_of(s, a.id))
                                 and re.match(rf"\s*\u2514 {b.id}\s.*LOCK WAIT.*`{SCHEMA}`\.`t`\s+PRIMARY.*id = 1",
                                              row_of(s, b.id))
                                 and re.match(rf"\s*  \u2514 {c.id}\s.*LOCK WAIT.*id = 2", row_of(s, c.id)),
                                 timeout=20, what="the chain A > B > C")
        lines = screen.splitlines()
        at = [i for i, line in enumerate(lines) for sid in (a.id, b.id, c.id) if line == row_of(screen, sid)]
        assert at == sorted(at) and at[2] - at[0] == 2  # together, head first
        assert "2 sessions waiting in 1 chain" in screen
        term.send(DOWN)
        term.send(DOWN)  # C
        term.send(ENTER)
        term.wait_until(lambda s: f"Lock wait of session {c.id}" in s and "Blocked by" in s
                        and "Head of the chain" in s and "UPDATE t SET v = v + 10 WHERE id = 1" in s,
                        what="C's wait, its blocker B and the head A")
        term.send(ESC)
        term.wait_until(lambda s: "Lock waits" in s, what="the table again")  # (Esc then b at once is Alt-b)
        term.send(UP)
        term.send(UP)  # A, the head: it waits for nothing
        term.send(ENTER)
        term.wait_until(lambda s: f"Locks held by session {a.id}" in s, what="the head's locks")
        term.send(ESC)
        term.wait_until(lambda s: "Lock waits" in s, what="the table again")
        term.send(DOWN)
        term.send(DOWN)  # C again
        term.send("b")
        # Sessions, on the head A, idle in its transaction; K asks before killing it
        term.wait_until(lambda s: "Sessions" in s and f"session {a.id}: the head of the chain" in s,
                        what="Sessions on the head")
        term.send("K")
        term.wait_for(f"Kill session {a.id} on {rows_to_lock.address}?")
        term.send("y")
        b.thread.join(15)  # A's locks went with it: B got its row, C still waits for B
        assert b.error is None and not b.thread.is_alive()
        with pytest.raises(pymysql.err.OperationalError):
            a.run("SELECT 1")
    finally:
        for session in sessions:
            session.close(rows_to_lock)


def wait_of(screen: str, session_id: int) -> Optional[int]:
    """The Wait cell of a waiter's row, in seconds (None: no such row yet)."""
    found = re.match(rf"\s*\u2514 {session_id}\s+(\d+)s\s", row_of(screen, session_id))
    return int(found.group(1)) if found else None


def test_two_waiters_under_their_blocker_wait_longer_and_the_alarm_clears(proxytop_term, rows_to_lock):
    """A holds id 4; B and C queue for it: both show under A (C's wait for B's queued request
    is not a lock held), their waits grow, the header warns; when A commits, all is clear."""
    a, b, c = sessions = [Session(rows_to_lock) for _ in range(3)]
    try:
        a.run("BEGIN")
        a.run("UPDATE t SET v = v + 1 WHERE id = 4")
        b.start("UPDATE t SET v = v + 2 WHERE id = 4")
        wait_for_lock_wait(rows_to_lock, b)
        c.start("UPDATE t SET v = v + 3 WHERE id = 4")
        wait_for_lock_wait(rows_to_lock, c)
        term = proxytop_term(*mysql_args(rows_to_lock), "--screen", "locks", "--lock-wait-alarm", "1",
                             cols=200, rows=40)
        alarm = rf"! lock wait \d+s on {re.escape(rows_to_lock.address)} \(blocker: thread {a.id}"
        screen = term.wait_until(lambda s: re.match(rf"\s*{a.id}\s.*idle in trx", row_of(s, a.id))
                                 and wait_of(s, b.id) is not None and wait_of(s, c.id) is not None
                                 and re.search(alarm, s) is not None, timeout=20, what="A with B and C under it")
        assert "2 sessions waiting in 1 chain" in screen
        before = (wait_of(screen, b.id), wait_of(screen, c.id))
        term.wait_until(lambda s: (wait_of(s, b.id) or 0) > before[0] and (wait_of(s, c.id) or 0) > before[1],
                        timeout=15, what="both waits growing")
        a.run("COMMIT")  # B gets the row and commits (autocommit), then C
        b.thread.join(15)
        c.thread.join(15)
        assert b.error is None and c.error is None
        term.wait_until(lambda s: "no session waits for a lock" in s and re.search(alarm, s) is None,
                        timeout=20, what="no wait and no alarm")
    finally:
        for session in sessions:
            session.close(rows_to_lock)


def test_the_header_warns_of_a_long_lock_wait_on_another_screen(proxytop_term, rows_to_lock):
    a, b = Session(rows_to_lock), Session(rows_to_lock)
    try:
        a.run("BEGIN")
        a.run("UPDATE t SET v = v + 1 WHERE id = 3")
        b.start("UPDATE t SET v = v + 1 WHERE id = 3")
        wait_for_lock_wait(rows_to_lock, b)
        term = proxytop_term(*mysql_args(rows_to_lock), "--screen", "servers", "--lock-wait-alarm", "1",
                             cols=200, rows=30)
        pattern = (rf"lock wait \d+s on {re.escape(rows_to_lock.address)} \(blocker: thread {a.id}, "
                   r"idle in transaction \d+s\)")
        screen = term.wait_until(lambda s: re.search(pattern, s) is not None, timeout=20, what="the lock-wait alarm")
        assert "1:Servers" in screen
    finally:
        a.close(rows_to_lock)
        b.close(rows_to_lock)


def test_a_deadlock_between_two_sessions_is_counted_and_parsed(proxytop_term, rows_to_lock):
    first, second = Session(rows_to_lock), Session(rows_to_lock)
    try:
        term = proxytop_term(*mysql_args(rows_to_lock), "--screen", "locks", cols=200, rows=40)
        term.wait_until(lambda s: "Deadlocks" in s and "not read yet" not in s, timeout=20, what="the deadlock reading")
        for session, row in ((first, 1), (second, 2)):
            session.run("BEGIN")
            session.run(f"UPDATE t SET v = v + 1 WHERE id = {row}")
        first.start("UPDATE t SET v = v + 2 WHERE id = 2")
        wait_for_lock_wait(rows_to_lock, first)
        second.start("UPDATE t SET v = v + 3 WHERE id = 1")  # closes the cycle: one is rolled back
        first.thread.join(10)
        second.thread.join(10)
        victim, survivor = (first, second) if first.error is not None else (second, first)
        assert isinstance(victim.error, pymysql.err.OperationalError) and victim.error.args[0] == 1213
        assert survivor.error is None
        # noticed within the reading's 10 s pace
        term.wait_until(lambda s: re.search(r"Deadlocks\s+\d+ since the server started, [1-9]\d* new while watched", s)
                        and f"session {victim.id} rolled back" in s, timeout=25, what="the new deadlock")
        term.send("d")
        screen = term.wait_until(lambda s: "Latest deadlock on" in s and "ROLLED BACK" in s, what="the deadlock's view")
        assert "UPDATE t SET v = v + 2 WHERE id = 2" in screen and "UPDATE t SET v = v + 3 WHERE id = 1" in screen
        rolled = re.search(r"Transaction \((\d)\)\s+ROLLED BACK", screen)
        assert rolled is not None
        rolled_back = screen.split(f"Transaction ({rolled.group(1)})")[1].split("Transaction (")[0]
        assert re.search(rf"session\s+{victim.id}\n", rolled_back)
        assert f"RECORD X locks rec but not gap on `{SCHEMA}`.`t` index PRIMARY" in screen
    finally:
        first.close(rows_to_lock)
        second.close(rows_to_lock)


def test_batch_json_of_the_locks_screen(rows_to_lock):
    sessions = three_level_chain(rows_to_lock)
    a, b, c = sessions
    try:
        result = subprocess.run(list(proxytop_command()) + mysql_args(rows_to_lock)
                                + ["--batch", "--count", "1", "--screen", "locks", "--format", "json"],
                                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout.splitlines()[-1])
        assert report["screen"] == "locks"
        found = [(row["session"], row["state"]) for row in report["rows"]]
        assert found == [(str(a.id), "idle in trx"), (f"\u2514 {b.id}", "LOCK WAIT"), (f"  \u2514 {c.id}", "LOCK WAIT")]
        assert report["rows"][1]["lock_table"] == f"`{SCHEMA}`.`t`" and report["rows"][1]["wait_s"] >= 0
    finally:
        for session in sessions:
            session.close(rows_to_lock)


def test_a_user_without_process_is_told_what_to_grant(proxytop_term, rows_to_lock):
    rows_to_lock.create_user("locks_np", "np-pw", ["USAGE"])
    term = proxytop_term(*mysql_args(rows_to_lock, user="locks_np", password="np-pw"), "--screen", "locks",
                         cols=200, rows=30)
    term.wait_until(lambda s: "Lock waits: needs PROCESS (GRANT PROCESS ON *.*)" in s
                    and "the latest deadlock needs PROCESS" in s, timeout=20, what="what to grant")


def metadata_lock_wait(server) -> List[Session]:
    """A holds a shared metadata lock on t (a transaction that read it); B's ALTER TABLE waits."""
    server.query(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    server.query(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
    a, b = Session(server), Session(server)
    a.run("BEGIN")
    a.run("SELECT * FROM t")
    b.run("SET SESSION lock_wait_timeout = 300")
    b.start("ALTER TABLE t ADD COLUMN w INT")
    return [a, b]


def test_a_metadata_lock_wait_from_performance_schema_names_waiter_and_holder(proxytop_term):
    with running_server({"performance_schema": "ON", "performance_schema_instrument": "wait/lock/metadata/sql/mdl=ON"},
                        name="locks-pfs") as server:
        a, b = sessions = metadata_lock_wait(server)
        try:
            term = proxytop_term(*mysql_args(server), "--screen", "locks", cols=200, rows=30)
            term.wait_until(lambda s: f"session {b.id} waits for EXCLUSIVE on `{SCHEMA}`.`t`, held by session {a.id} "
                                      "(SHARED_READ)" in s, timeout=20, what="the metadata-lock wait")
        finally:
            for session in sessions:
                session.close(server)


def test_the_metadata_lock_info_plugin_gives_granted_locks_and_says_the_waiting_side_is_unknown(proxytop_term):
    with running_server({"plugin_load_add": "metadata_lock_info"}, name="locks-mdl-plugin") as server:
        a, b = sessions = metadata_lock_wait(server)
        try:
            term = proxytop_term(*mysql_args(server), "--screen", "locks", cols=250, rows=30)
            term.wait_until(lambda s: f"session {b.id} waits (Waiting for table metadata lock: ALTER TABLE t" in s
                            and "METADATA_LOCK_INFO does not say" in s
                            and re.search(rf"granted: .*session {a.id} MDL_SHARED_READ on {SCHEMA}\.t", s),
                            timeout=20, what="the waiting session and the granted locks")
        finally:
            for session in sessions:
                session.close(server)


def test_without_performance_schema_or_the_plugin_one_line_says_how_to_see_metadata_locks(rows_to_lock):
    result = subprocess.run(list(proxytop_command()) + mysql_args(rows_to_lock)
                            + ["--batch", "--count", "1", "--screen", "locks"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("Metadata locks"))
    assert "not visible: needs performance_schema=ON" in line and "INSTALL SONAME 'metadata_lock_info'" in line


# ----- the pure parts -----------------------------------------------------------------------------

def test_chains_nest_waiters_order_by_the_longest_wait_and_survive_a_cycle():
    found = chains([("b", "a"), ("c", "b"), ("y", "x"), ("z", "x"), ("z", "a")], {"b": 5, "c": 2, "y": 50, "z": 1})
    assert [[(n.trx, n.depth) for n in chain] for chain in found] == [
        [("x", 0), ("y", 1), ("z", 1)], [("a", 0), ("b", 1), ("c", 2)]]
    z = found[0][2]
    assert z.blocked_by == "x" and z.also_blocked_by == ("a",)  # shown once, its other blocker named
    loop = chains([("p", "q"), ("q", "r"), ("r", "p")], {"p": 1, "q": 7, "r": 3})
    assert [(n.trx, n.depth, n.in_cycle) for n in loop[0]] == [("q", 0, True), ("p", 1, True), ("r", 2, True)]


def test_sorting_keeps_each_chain_whole_and_the_filter_shows_whole_chains():
    edge = lambda w, wt, b, bt, wait, table: (w, wt, "LOCK WAIT", wait, wait, 1, 0, "UPDATE", "X", "RECORD", table,
                                             "PRIMARY", "1", b, bt, "RUNNING", None, 100, 1, 1, None)
    reading = LocksReading(Table(EDGE_COLUMNS, (edge("2", 12, "1", 11, 5, "`d`.`a`"), edge("3", 13, "2", 12, 3, "`d`.`a`"),
                                                edge("5", 15, "4", 14, 60, "`d`.`b`"))), EMPTY_SESSIONS)
    rows = lock_rows(reading)
    ordered = arrange_chains(rows, [], TableState("wait_s", True))
    assert [r["_thread"] for r in ordered] == [14, 15, 11, 12, 13]
    ascending = arrange_chains(rows, [], TableState("wait_s", False))
    assert [r["_thread"] for r in ascending] == [11, 12, 13, 14, 15]
    columns = LocksScreen.columns
    only = arrange_chains(rows, columns, TableState("wait_s", True, filters.parse("table:`d`.`a`", columns)))
    assert [r["_thread"] for r in only] == [11, 12, 13]  # the head has no table, but its chain matched


def test_mysql8_data_lock_waits_rows_make_the_same_chain():
    """Rows in the shape waits_sql(False) selects, with the values of the MySQL manual's
    data_locks example (lock mode 'X,REC_NOT_GAP', schema and table apart, joined by the SQL)."""
    sql = waits_sql(False)
    assert "REQUESTING_ENGINE_TRANSACTION_ID" in sql and "BLOCKING_ENGINE_TRANSACTION_ID" in sql
    assert "CONCAT('`', l.OBJECT_SCHEMA, '`.`', l.OBJECT_NAME, '`')" in sql and "INNODB_LOCK" not in sql
    edge = ("2585", 21, "LOCK WAIT", 7, 8, 1, 0, "UPDATE t SET id = 3 WHERE id = 2", "X,REC_NOT_GAP", "RECORD",
            "`test`.`t`", "PRIMARY", "2", "2584", 20, "RUNNING", None, 40, 1, 1, None)
    sessions = Table(SESSION_COLUMNS, ((20, "app", "h:1", "test", "Sleep", 40, "", None),))
    rows = lock_rows(LocksReading(Table(EDGE_COLUMNS, (edge,)), sessions))
    assert [(r["session"], r["state"], r["lock_mode"], r["user"]) for r in rows] == [
        ("20", "idle in trx", None, "app"), ("\u2514 21", "LOCK WAIT", "X,REC_NOT_GAP", None)]


def test_the_mariadb_deadlock_section_is_parsed():
    with open(os.path.join(DATA, "mariadb-10.11-deadlock.txt"), encoding="utf-8") as handle:
        found = deadlock.latest(handle.read())
    assert found.when == "2026-11-27 09:55:46"
    one, two = found.transactions
    assert (one.trx, one.thread, one.user, one.statement, one.rolled_back) == ("24", 10, "root",
                                                                               "UPDATE t SET v=21 WHERE id=1", True)
    assert (two.trx, two.thread, two.statement, two.rolled_back) == ("23", 9, "UPDATE t SET v=11 WHERE id=2", False)
    # MariaDB lists each one's locks under the other's CONFLICTING WITH: found by trx id
    assert one.waits_for.text == two.holds[0].text == "RECORD X locks rec but not gap on `d`.`t` index PRIMARY"
    assert [lock.trx for lock in one.holds] == ["24"] and not any(lock.waiting for lock in one.holds)


def test_the_mysql8_deadlock_section_is_parsed():
    with open(os.path.join(DATA, "mysql-8.0-deadlock.txt"), encoding="utf-8") as handle:
        found = deadlock.latest(handle.read())
    assert found.when == "2022-11-25 15:58:22"
    one, two = found.transactions
    assert (one.thread, one.active_s, one.statement) == (9, 20, "UPDATE Animals SET value=30 WHERE name='Aardvark'")
    assert [lock.text for lock in one.holds] == ["RECORD S locks rec but not gap on `test`.`Birds` index PRIMARY"]
    assert one.waits_for.text == "RECORD X locks rec but not gap on `test`.`Animals` index PRIMARY"
    assert (two.thread, two.rolled_back, one.rolled_back) == (10, True, False)


def test_no_deadlock_section_before_the_first_deadlock():
    with open(os.path.join(os.path.dirname(DATA), "innodb", "mariadb-10.11.txt"), encoding="utf-8") as handle:
        text = handle.read()
    assert "LATEST DETECTED DEADLOCK" not in text and deadlock.latest(text) is None


def test_the_alarm_line_past_its_threshold_only():
    assert alarm_text("db:3306", LongestWait(10, 5, 6, 75, True), 10) == \
        "lock wait 10s on db:3306 (blocker: thread 6, idle in transaction 1m15s)"
    assert alarm_text("db:3306", LongestWait(9.9, 5, 6, 75, True), 10) is None
    assert alarm_text("db:3306", LongestWait(99, 5, 6, 75, True), 0) is None  # 0: no alarm
    assert alarm_text("db:3306", None, 10) is None


class AlarmView:
    """The DataView calls the alarm makes: the latest alarm reading of each server."""

    def __init__(self, readings, now=2.0, down=()):
        self.readings, self._now, self.down = readings, now, down

    def latest(self, name):
        data = self.readings.get(name)
        return Snapshot(name, data, taken_at=1.0, duration=0.001) if data is not None else None

    def state(self, source):
        return SourceState(source, connected=not any(host in source for host in self.down))

    def now(self):
        return self._now


def locks_screen(*hosts, alarm=None) -> LocksScreen:
    fleet = Fleet(Credentials(user="u"), 3.0, discover=False)
    for host in hosts:
        fleet.add_explicit(Endpoint(host=host, port=3306))
    return LocksScreen(SimpleNamespace(args=SimpleNamespace(lock_wait_alarm=alarm)), fleet=fleet)


def test_the_alarm_names_the_longest_wait_of_the_fleet_and_how_many_more():
    screen = locks_screen("db1", "db2", "db3")
    assert screen.threshold == 10.0  # the default
    assert [name for name, _pace in screen.alarm_readings(AlarmView({}))] == [
        "mysql.lockalarm.db1:3306", "mysql.lockalarm.db2:3306", "mysql.lockalarm.db3:3306"]
    view = AlarmView({"mysql.lockalarm.db1:3306": AlarmReading(LongestWait(12, 5, 6, 30, False)),
                      "mysql.lockalarm.db2:3306": AlarmReading(LongestWait(95, 7, 8, 120, True)),
                      "mysql.lockalarm.db3:3306": AlarmReading(LongestWait(3, 9, 10, 4, True))})
    assert screen.alarm(view) == "lock wait 1m35s on db2:3306 (blocker: thread 8, idle in transaction 2m00s)  (+1 more)"
    assert screen.alarm(AlarmView({"mysql.lockalarm.db1:3306": AlarmReading()})) is None


def test_a_server_down_or_not_answering_has_no_lock_wait_alarm():
    screen = locks_screen("db1", "db2")
    readings = {"mysql.lockalarm.db1:3306": AlarmReading(LongestWait(12, 5, 6, 30, False)),
                "mysql.lockalarm.db2:3306": AlarmReading(LongestWait(95, 7, 8, 120, True))}
    assert screen.alarm(AlarmView(readings, down=("db2",))).startswith("lock wait 12s on db1:3306")
    assert screen.alarm(AlarmView(readings, down=("db1", "db2"))) is None
    assert screen.alarm(AlarmView(readings, now=1.0 + 3 * 5.0 + 1)) is None  # the last readings three intervals old


def test_a_lock_wait_alarm_of_0_reads_nothing_for_it():
    screen = locks_screen("db1", alarm=0.0)
    assert screen.alarm_readings(AlarmView({})) == ()
    assert screen.alarm(AlarmView({"mysql.lockalarm.db1:3306": AlarmReading(LongestWait(600, 5, 6, 900, True))})) is None
