"""The MySQL servers' half against MySQL 8's shapes: the real proxytop, in a terminal and in
--batch, watching the MySQL 8 double (tests/mysql8_double.py: MySQL 8.0.36 or 8.4, written from
the reference manual; no real MySQL 8 runs here). Servers (version, role, lag, the channels'
threads and errors), Sessions (an idle session in a transaction, kills, EXPLAIN, no CPU columns
for a server whose process is not on this host), InnoDB; and the double itself refusing what
it does not know, so that a change in proxytop's SQL shows here."""
from __future__ import annotations

import doctest
import json
import re
import subprocess

import pymysql
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from proxytop.collectors.mysql_sessions import sessions_sql
from proxytop.screens.sessions import NOT_LOCAL
from tests import mysql8_double
from tests.mysql8_double import PASSWORD, USER, MySQL8Double
from tests.terminal import ENTER, proxytop_command
from tests.test_safety import mysql8_violations
from tests.test_servers import row_of
from tests.test_sessions import session_line, show_only


def start_double(**options) -> MySQL8Double:
    return MySQL8Double(**options).start()


@pytest.fixture
def mysql8():
    double = start_double()
    yield double
    double.stop()
    assert mysql8_violations(double) == []


@pytest.fixture
def primary8():
    double = start_double(replica=False)
    yield double
    double.stop()
    assert mysql8_violations(double) == []


def mysql_args(double: MySQL8Double) -> list:
    return ["--mysql", f"127.0.0.1:{double.port}", "--mysql-user", USER, "--mysql-password", PASSWORD]


def address(double: MySQL8Double) -> str:
    return f"127.0.0.1:{double.port}"


def batch(double: MySQL8Double, screen: str, count: int = 2) -> dict:
    """The last report of ``--batch --format json`` of one screen."""
    result = subprocess.run(list(proxytop_command()) + mysql_args(double)
                            + ["--batch", "--count", str(count), "-d", "1", "--screen", screen, "--format", "json"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()][-1]


# ----- Servers ----------------------------------------------------------------------------------

def test_a_mysql_8_replica_with_two_channels_on_the_servers_screen(proxytop_term, mysql8):
    server = address(mysql8)
    term = proxytop_term(*mysql_args(mysql8), "-d", "1", cols=220, rows=24)
    # version, role, a Q/s from two readings, the worst lag (the europe channel: 95 s and growing),
    # the channels' IO/SQL threads (the stopped one first: the column holds one channel), and the
    # stopped channel's error in the note
    pattern = (r"MySQL 8\.0\.36\s+replica\s+5d02h\s+[1-9]\d*\s+42\s+3\s.*\s\d+m\d\ds\s+"
               r"Yes/No \u2026\s+channel 'asia' SQL error 1062: Coordinator stopped")
    screen = term.wait_until(lambda s: re.search(pattern, row_of(s, server)) is not None, timeout=20,
                             what="the replica's row")
    assert "replica" in row_of(screen, server)
    term.send("c")
    screen = term.wait_until(lambda s: f"Replication of {server}" in s and "'asia'" in s, what="both channels")
    assert re.search(r"Channel 'europe'\s+from db8-eu\.example:3306", screen)
    assert re.search(r"Channel 'asia'\s+from db8-ap\.example:3306", screen)
    assert re.search(r"SQL thread\s+No", screen) and "SQL error 1062" in screen
    assert re.search(r"lag\s+\u2014", screen)  # asia's lag is unknown while its SQL thread is stopped
    term.send("q")
    assert term.wait_exit(5) == 0
    assert "SHOW REPLICA STATUS" in " ".join(mysql8.queries())
    assert not any("SLAVE" in sql for sql in mysql8.queries())


def test_a_mysql_8_primary_has_no_channels(proxytop_term, primary8):
    term = proxytop_term(*mysql_args(primary8), "-d", "1", cols=200, rows=20)
    term.wait_until(lambda s: re.search(r"MySQL 8\.0\.36\s+primary", row_of(s, address(primary8))) is not None,
                    timeout=20, what="the primary's row")
    term.send("c")
    term.wait_for("This server replicates from no source")


def test_batch_json_of_the_servers_screen(mysql8):
    report = batch(mysql8, "servers")
    row = next(r for r in report["rows"] if r["server"] == address(mysql8))
    assert row["version"] == "MySQL 8.0.36" and row["role"] == "replica"
    assert row["uptime"] >= 441022 and row["connected"] == 42 and row["running"] == 3
    assert 700 <= row["qps"] <= 900  # Questions grows 800 a second
    assert row["rows_s"] > 0 and 99 < row["hit_pct"] < 100  # Innodb_rows_* and the buffer pool's counters
    assert row["hll"] is None  # MySQL has no Innodb_history_list_length status variable
    assert row["lag"] >= 95 and row["repl"] == "Yes/No Yes/Yes"
    assert "channel 'asia' SQL error 1062" in row["note"]


def test_mysql_8_4_with_caching_sha2_password_and_no_show_slave_status():
    # 8.4's accounts use caching_sha2_password (mysql_native_password is off by default): without
    # TLS, the client encrypts the password with the server's RSA key
    double = start_double(version="8.4.3", sha2_rsa_key=rsa.generate_private_key(public_exponent=65537, key_size=2048))
    try:
        row = next(r for r in batch(double, "servers")["rows"] if r["server"] == address(double))
        assert row["version"] == "MySQL 8.4.3" and row["role"] == "replica" and row["repl"] == "Yes/No Yes/Yes"
        assert double.rsa_logins >= 1
        assert mysql8_violations(double) == []
    finally:
        double.stop()
    conn = pymysql.connect(host="127.0.0.1", port=double.start().port, user=USER, password=PASSWORD)
    try:
        with conn.cursor() as cursor, pytest.raises(pymysql.err.ProgrammingError) as refused:
            cursor.execute("/* proxytop */ SHOW SLAVE STATUS")  # gone in 8.4
        assert refused.value.args[0] == 1064
    finally:
        conn.close()
        double.stop()


# ----- Sessions ---------------------------------------------------------------------------------

def test_the_idle_session_in_a_transaction_and_no_cpu_columns(proxytop_term, mysql8):
    term = proxytop_term(*mysql_args(mysql8), "--screen", "sessions", cols=200, rows=30)
    # 4101: Sleep, no state, RUNNING, 3 rows locked, 2 modified
    duration = r"(4[7-9]s|5\d\.?\d*s|\d+m\d\ds)"  # 47 s and more: the double's clock runs
    pattern = rf"app\s+10\.0\.0\.21:51234\s+shop\s+Sleep\s+{duration}\s+\u2014\s+RUNNING\s+{duration}\s+3\s+2\b"
    screen = term.wait_until(lambda s: re.search(pattern, session_line(s, 4101)) is not None, timeout=20,
                             what="the idle session's transaction")
    assert "LOCK WAIT" in session_line(screen, 4103) and "UPDATE orders" in session_line(screen, 4103)
    assert "CPU%" not in screen and "Read/s" not in screen  # the server's process is not on this host
    assert "/var/lib/mysql/db8-replica.pid can't be read here" in screen and NOT_LOCAL in screen
    assert "proxytop's own session hidden" in screen
    show_only(term, 4101)
    term.send(ENTER)
    term.wait_until(lambda s: f"Session 4101 of {address(mysql8)}" in s and "Idle in a transaction" in s,
                    what="the session's detail")
    term.send("q")
    assert term.wait_exit(5) == 0


def test_kill_query_after_a_yes_and_nothing_on_no(proxytop_term, mysql8):
    server = address(mysql8)
    term = proxytop_term(*mysql_args(mysql8), "--screen", "sessions", cols=200, rows=30)
    term.wait_until(lambda s: "SELECT o.id" in session_line(s, 4102), timeout=20, what="the report's SELECT")
    show_only(term, 4102)
    term.send("k")
    term.wait_for(f"Kill the statement of session 4102 on {server}?")
    term.send("n")
    term.wait_for("cancelled: nothing was sent")
    assert mysql8.kills == [] and not any("KILL" in sql for sql in mysql8.queries())
    term.send("k")
    term.wait_for("KILL QUERY 4102")
    term.send("y")
    term.wait_for(f"KILL QUERY 4102 sent to {server}")
    assert mysql8.kills == [("QUERY", 4102)]
    assert "/* proxytop */ KILL QUERY 4102" in mysql8.queries()
    # the session stays, idle now: hidden with the other idle one
    term.wait_until(lambda s: session_line(s, 4102) == "" and "2 idle sessions hidden" in s, what="4102 now idle")
    term.send("i")
    term.wait_until(lambda s: re.search(r"report\s.*\sSleep\s", session_line(s, 4102)) is not None, what="4102 idle")
    # KILL CONNECTION of the idle session in a transaction: it goes, its transaction with it
    term.send("\\")
    show_only(term, 4101)
    term.send("K")
    term.wait_for(f"Kill session 4101 on {server}?")
    term.send("y")
    term.wait_for(f"KILL CONNECTION 4101 sent to {server}")
    assert mysql8.kills == [("QUERY", 4102), ("CONNECTION", 4101)]
    term.wait_until(lambda s: session_line(s, 4101) == "" and "0/" in s, what="4101 gone")


def test_explain_in_mysql_8s_columns(proxytop_term, mysql8):
    # (rows for the plan below the header's alarm: the double's channel asia is stopped on an error)
    term = proxytop_term(*mysql_args(mysql8), "--screen", "sessions", cols=200, rows=34)
    term.wait_until(lambda s: "SELECT o.id" in session_line(s, 4102), timeout=20, what="the report's SELECT")
    show_only(term, 4102)
    term.send("e")
    screen = term.wait_until(lambda s: f"EXPLAIN of session 4102 on {address(mysql8)}" in s and "idx_country" in s,
                             timeout=15, what="the plan")
    assert re.search(r"filtered", screen) and "shop.c.id" in screen
    # MySQL has no time limit for an EXPLAIN statement: no MariaDB SET STATEMENT in front
    assert "/* proxytop */ EXPLAIN SELECT o.id, o.total FROM orders o JOIN customers c ON c.id = o.customer_id " \
           "WHERE c.country = 'FR'" in mysql8.queries()


def test_batch_json_of_the_sessions_screen(mysql8):
    report = batch(mysql8, "sessions")
    row = next(r for r in report["rows"] if r["id"] == 4101)
    assert (row["command"], row["trx_state"], row["rows_locked"], row["rows_modified"]) == ("Sleep", "RUNNING", 3, 2)
    assert row["trx_age"] >= 52 and row["time_ms"] >= 47000
    assert "cpu_pct" not in report["columns"]
    assert all(r["user"] != USER for r in report["rows"])  # proxytop's own connection hidden


# ----- InnoDB -----------------------------------------------------------------------------------

def test_the_innodb_screen_reads_mysql_8s_redo_figures(mysql8):
    report = batch(mysql8, "innodb")
    row = next(r for r in report["rows"] if r["server"] == address(mysql8))
    # Innodb_redo_log_current_lsn - Innodb_redo_log_checkpoint_lsn (they grow alike)
    assert row["age"] == 8301120994 - 8244000112
    assert 0.9e6 <= row["redo_rate"] <= 1.2e6  # the LSN grows 1 MiB a second
    assert row["hll"] == 4410  # INNODB_METRICS' trx_rseg_history_len: MySQL has no status variable for it
    assert row["dirty"] == 988
    queries = " ".join(mysql8.queries())
    assert "SHOW ENGINE INNODB STATUS" in queries and "information_schema.INNODB_METRICS" in queries


# ----- a user without privileges ------------------------------------------------------------------

def test_a_user_without_privileges_is_told_what_each_screen_needs():
    # no PROCESS, no REPLICATION CLIENT, no SELECT on performance_schema: MySQL 8's refusals
    double = start_double(grants=())
    try:
        servers = batch(double, "servers")["rows"][0]
        assert servers["note"] == "replication status needs REPLICATION CLIENT" and servers["repl"] is None
        sessions = batch(double, "sessions")
        assert sessions["rows"] == []  # only this user's sessions: proxytop's own, hidden
        assert any("needs PROCESS: only this user's sessions" in note for note in sessions["notes"])
        innodb = batch(double, "innodb")["rows"][0]
        assert innodb["note"].startswith("needs PROCESS") and innodb["hll"] is None
        assert innodb["age"] == 8301120994 - 8244000112  # status variables need no privilege
        assert mysql8_violations(double) == []
    finally:
        double.stop()


# ----- the double refuses what it does not know ----------------------------------------------------

def test_the_double_answers_mariadbs_statements_with_mysqls_errors(mysql8):
    conn = pymysql.connect(host="127.0.0.1", port=mysql8.port, user=USER, password=PASSWORD)
    try:
        for sql, code in ((sessions_sql(mariadb=True), 1054),  # PROCESSLIST.TIME_MS: MariaDB's
                          ("SHOW ALL SLAVES STATUS", 1064),
                          ("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS", 1109),  # gone in 8.0
                          ("SELECT @@innodb_no_such_thing", 1193),
                          ("SHOW GLOBAL STATUS", None)):
            with conn.cursor() as cursor:
                if code is None:
                    cursor.execute("/* proxytop */ " + sql)
                    names = {row[0] for row in cursor.fetchall()}
                    assert len(names) > 150 and "Innodb_history_list_length" not in names
                    continue
                with pytest.raises(pymysql.err.MySQLError) as refused:
                    cursor.execute("/* proxytop */ " + sql)
                assert refused.value.args[0] == code, sql
        with conn.cursor() as cursor, pytest.raises(pymysql.err.MySQLError):
            cursor.execute("SELECT 1")  # not proxytop's: untagged
    finally:
        conn.close()
    mysql8.query_log.clear()  # the test's own statements, not proxytop's


def test_the_doubles_worked_examples():
    assert doctest.testmod(mysql8_double).failed == 0
