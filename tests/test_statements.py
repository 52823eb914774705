"""The Statements screen: one MySQL server's statement digest (performance_schema), over real
MariaDB servers the suite starts with performance_schema=ON (the shared one has it off, as
MariaDB does by default): rates of known statements, a TRUNCATE of the table between readings,
proxytop's own statements left out, the one line where performance_schema is off, --batch and
the terminal; and the statement key on ProxySQL's real digest texts against MariaDB's
DIGEST_TEXT of the same statements."""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import subprocess
import threading
import time
from types import SimpleNamespace
from typing import Dict, List, Tuple

import pymysql
import pytest

from proxytop.collectors.innodb import DiscoveredServer, MySQLSource
from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.collectors.mysql_statements import OWN_KEYS, PROBE_SQL, MySQLStatements, StatementsReading, statements_sql
from proxytop.config.mysql_options import Credentials
from proxytop.core import Snapshot, Table
from proxytop.metrics.statements import COLUMNS as STATEMENT_COLUMNS, is_statement, statement_key
from proxytop.polling.connection import Endpoint
from proxytop.screens.backends import BackendsLink
from proxytop.screens.statements import StatementsScreen, off_line, statement_rows
from tests.mariadb import start_or_skip
from tests.terminal import ENTER, ESC, proxytop_command
from tests.test_innodb_live import point_double_at
from tests.test_safety import GENERAL_LOG
from tests.test_sessions import mysql_args

SCHEMA = "stmt_test"
ROWS = 10
PROXYSQL_RECORDINGS = ("proxysql-2.7.2.jsonl.gz", "proxysql-2.7.2-cluster.jsonl.gz")
# ProxySQL digest texts of the recordings that can't be run here as they are
NOT_RUN = {
    "SELEC id FROM sbtest1 WHERE id = ?": "a syntax error: the server makes no digest of what it can't parse",
    "UPDATE sbtest1 SET k = k WHERE id = ?": "the same statement key as UPDATE ... SET k = k ? (a sign folded)",
}


@pytest.fixture(scope="module")
def server():
    """A MariaDB with performance_schema on, and a table without an index on v."""
    started = start_or_skip({"performance_schema": "ON"}, name="statements")
    try:
        started.query(f"CREATE DATABASE {SCHEMA}")
        started.query(f"CREATE TABLE {SCHEMA}.t (id INT PRIMARY KEY, v INT)")
        started.query(f"INSERT INTO {SCHEMA}.t VALUES " + ", ".join(f"({n}, {n})" for n in range(1, ROWS + 1)))
        yield started
    finally:
        started.stop()


def endpoint_of(server) -> Endpoint:
    return Endpoint(host=server.host, port=server.port, user=server.user, password=server.password, timeout=5.0)


class Reader:
    """The real collector on a real connection; each reading a snapshot stamped now."""

    def __init__(self, server):
        self.source = MySQLSource(endpoint_of(server))
        self.session = self.source.connect()
        self.collector = MySQLStatements(self.source.endpoint)
        self.snapshots: List[Snapshot] = []

    def read(self) -> Snapshot:
        started = time.monotonic()
        data = self.collector.collect(self.session)
        snapshot = Snapshot(self.collector.name, data, taken_at=started, duration=time.monotonic() - started)
        self.snapshots.append(snapshot)
        return snapshot

    def rows(self) -> Dict[str, dict]:
        previous, current = self.snapshots[-2:]
        return {row["text"]: row for row in statement_rows(previous, current)}

    def close(self) -> None:
        self.session.conn.close()


def run(server, sql: str, times: int) -> None:
    conn = server.connect(database=SCHEMA)
    try:
        with conn.cursor() as cursor:
            for n in range(times):
                cursor.execute(sql, (n % ROWS + 1,))
                cursor.fetchall()
    finally:
        conn.close()


SCAN = "SELECT id FROM t WHERE v = %s"  # no index on v: every row examined, one sent
SCAN_DIGEST = "SELECT ID FROM `t` WHERE `v` = ?"


def test_count_per_second_and_rows_examined_per_call_of_a_known_statement(server):
    run(server, SCAN, 1)
    reader = Reader(server)
    try:
        reader.read()
        run(server, SCAN, 40)
        reader.read()
        previous, current = reader.snapshots
        seconds = current.taken_at - previous.taken_at
        row = reader.rows()[SCAN_DIGEST]
        assert row["count_s"] == pytest.approx(40 / seconds)
        assert row["examined_per_call"] == ROWS and row["sent_per_call"] == 1
        assert row["no_index_s"] == pytest.approx(40 / seconds)  # a full scan each time
        assert row["errors_s"] == 0 and row["time_s"] > 0 and row["count"] == 41 and row["schema"] == SCHEMA
        assert 0 < row["share"] <= 100
    finally:
        reader.close()


def server_time(server) -> int:
    return int(server.query("SELECT UNIX_TIMESTAMP()")[0][0])


def test_a_truncate_between_readings_gives_no_rate_never_a_negative_one(server):
    run(server, SCAN, 5)
    reader = Reader(server)
    try:
        reader.read()
        seen_first = server_time(server)
        while server_time(server) <= seen_first:  # FIRST_SEEN counts seconds: the next one
            time.sleep(0.05)
        server.query("TRUNCATE TABLE performance_schema.events_statements_summary_by_digest")
        run(server, SCAN, 200)  # more than before the TRUNCATE: counters up, but a new row
        reader.read()
        row = reader.rows()[SCAN_DIGEST]
        assert row["count"] == 200 and row["count_s"] is None and row["time_s"] is None
        run(server, SCAN, 10)
        reader.read()
        assert reader.rows()[SCAN_DIGEST]["count_s"] > 0  # the next interval has its rate again
        everything = [value for r in reader.rows().values() for key, value in r.items()
                      if key.endswith("_s") and value is not None]
        assert all(value >= 0 for value in everything)
    finally:
        reader.close()


def test_proxytops_own_statements_are_left_out(server):
    run(server, SCAN, 1)
    reader = Reader(server)
    try:
        reader.read()
        data = reader.read().data
        assert isinstance(data, StatementsReading) and data.own_hidden >= 2  # the probe and the read, at least
        texts = [row[2] for row in data.digests.rows]
        assert not [t for t in texts if statement_key(t) in OWN_KEYS]
        keys = {statement_key(t) for t in texts}
        assert statement_key(statements_sql(False)) not in keys and statement_key(PROBE_SQL) not in keys
        assert statement_key(SCAN_DIGEST) in keys  # the others' statements are there
    finally:
        reader.close()


def test_every_statement_proxytop_sent_is_known_as_its_own(server):
    """What proxytop really sent (the general log's tagged statements, from every test on this
    server) against the list made from where the statements are defined: a statement added
    without it would show up here."""
    subprocess.run(list(proxytop_command()) + mysql_args(server) + ["--batch", "--count", "2", "-d", "0.5",
                                                                   "--screen", "all"],
                   capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL, check=True)
    with open(os.path.join(server.datadir, GENERAL_LOG), encoding="utf-8", errors="replace") as handle:
        sent = {m.group(1).strip() for m in re.finditer(r"\bQuery\t/\* proxytop \*/ (.*)", handle.read())}
    assert len(sent) >= 5
    unknown = [sql for sql in sent if statement_key(sql) not in OWN_KEYS and not sql.startswith(("EXPLAIN", "KILL"))]
    assert unknown == []
    # ... and the server's digest of each has the same key: the rows left out are proxytop's
    server_keys = {statement_key(row[0]) for row in server.query(
        "SELECT DIGEST_TEXT FROM performance_schema.events_statements_summary_by_digest")}
    assert [sql for sql in sent if not any(is_statement(key, statement_key(sql)) for key in server_keys)] == []


def test_with_performance_schema_off_one_line_says_so_and_how(mariadb):
    reader = Reader(mariadb)
    try:
        data = reader.read().data
        assert data.enabled is False and data.digests.rows == ()
    finally:
        reader.close()
    result = subprocess.run(list(proxytop_command()) + mysql_args(mariadb) + ["--batch", "--count", "1", "--screen",
                                                                              "statements"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert off_line(mariadb.address) in " ".join(result.stdout.split())


def test_a_user_without_select_on_performance_schema_is_told(server):
    server.create_user("stmt_nops", "nops-pw", ["PROCESS"])
    endpoint = Endpoint(host=server.host, port=server.port, user="stmt_nops", password="nops-pw", timeout=5.0)
    source = MySQLSource(endpoint)
    session = source.connect()
    try:
        data = MySQLStatements(endpoint).collect(session)
        assert data.denied and not data.digests.rows
    finally:
        session.conn.close()


def test_batch_json_has_the_rates_of_the_statements_run_meanwhile(server):
    stop = threading.Event()

    def load() -> None:  # the scan, now and then, until the report is out
        while not stop.is_set():
            run(server, SCAN, 3)
            stop.wait(0.2)

    loader = threading.Thread(target=load, daemon=True)
    loader.start()
    try:  # the first report waits for two readings, 10 s apart: it has rates
        result = subprocess.run(list(proxytop_command()) + mysql_args(server)
                                + ["--batch", "--count", "1", "--screen", "statements", "--format", "json"],
                                capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    finally:
        stop.set()
        loader.join(10)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["screen"] == "statements"
    assert {"text", "count_s", "time_s", "examined_per_call", "no_index_s"} <= set(report["columns"])
    assert "p95_ms" not in report["columns"]  # MariaDB has no QUANTILE_95: no column, a note
    row = next(r for r in report["rows"] if r["text"] == SCAN_DIGEST)
    assert row["count_s"] > 0 and row["examined_per_call"] == ROWS and row["no_index_s"] > 0
    assert any("no QUANTILE_95" in note for note in report["notes"])


def test_the_screen_in_a_terminal_and_a_digest_opened(proxytop_term, server):
    run(server, SCAN, 3)
    term = proxytop_term(*mysql_args(server), "--screen", "statements", cols=200, rows=30)
    term.wait_until(lambda s: "Statements" in s and SCAN_DIGEST in s, timeout=30, what="the scan's digest")
    term.send("/")
    term.send("text:WHERE `v`" + ENTER)
    term.wait_until(lambda s: SCAN_DIGEST in s and "Digest text" in s, what="the filtered table")
    term.send(ENTER)
    screen = term.wait_until(lambda s: "rows per call" in s and "no index" in s, what="the digest's detail")
    assert "Statement " in screen and server.address in screen
    term.send("q")
    assert term.wait_exit(5) == 0


# ----- the statement key on real pairs ----------------------------------------------------------------

def proxysql_texts() -> List[str]:
    """Every digest text of the ProxySQL recordings (sysbench and the cluster's extra load)."""
    texts: List[str] = []
    folder = os.path.join(os.path.dirname(__file__), "data")
    for name in PROXYSQL_RECORDINGS:
        with gzip.open(os.path.join(folder, name), "rt", encoding="utf-8") as handle:
            for line in handle:
                entry = json.loads(line)
                if "stats_mysql_query_digest" in entry.get("sql", "") and "digest_text" in entry.get("columns", ()):
                    at = entry["columns"].index("digest_text")
                    texts += [row[at] for row in entry["rows"] if row[at] and row[at] not in texts]
    return texts


def runnable(text: str) -> str:
    """A statement of that digest text, with values where ProxySQL left ?."""
    sql = text.replace("(?,?,?,...)", "(1,2,3,4)").replace("SLEEP(?)", "SLEEP(0)").replace("LIKE ?", "LIKE '%a%'")
    sql = re.sub(r"\bk \?", "k +1", sql)  # ProxySQL folded the sign of "+1" into its ?
    return sql.replace("?", "1")


def test_proxysql_digest_texts_match_mariadbs_digest_text_of_the_same_statements(server):
    texts = proxysql_texts()
    assert len(texts) >= 60
    conn = server.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("CREATE DATABASE IF NOT EXISTS sbtest")
            cursor.execute("USE sbtest")
            for n in range(1, 5):
                cursor.execute(f"CREATE TABLE IF NOT EXISTS sbtest{n} (id INT PRIMARY KEY AUTO_INCREMENT, k INT, "
                               "c CHAR(120), pad CHAR(60), KEY (k))")
            cursor.execute("TRUNCATE TABLE performance_schema.events_statements_summary_by_digest")
            # the temporary table first: other statements use it
            for text in sorted(texts, key=lambda t: not t.startswith("CREATE")):
                try:
                    cursor.execute(runnable(text))
                    cursor.fetchall()
                except pymysql.err.MySQLError:
                    pass  # an error still makes a digest row (a duplicate key, a missing table)
            cursor.execute("SELECT DIGEST_TEXT FROM performance_schema.events_statements_summary_by_digest")
            server_texts = [row[0] for row in cursor.fetchall()]
    finally:
        conn.close()
    server_keys = {statement_key(text): text for text in server_texts}
    matched: List[Tuple[str, str]] = [(t, server_keys[statement_key(t)]) for t in texts if statement_key(t) in server_keys]
    unmatched = [t for t in texts if statement_key(t) not in server_keys and t not in NOT_RUN]
    assert unmatched == []
    # real pairs, as the two products write them
    pairs = dict(matched)
    assert pairs["SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c"] == \
        "SELECT DISTINCTROW `c` FROM `sbtest1` WHERE ID BETWEEN ? AND ? ORDER BY `c` "
    assert pairs["SELECT c FROM sbtest1 WHERE id IN (?,?,?,...)"] == "SELECT `c` FROM `sbtest1` WHERE ID IN (...) "


# ----- the link from a ProxySQL digest (Queries, S) -----------------------------------------------------

def sbtest_load(server, stop: threading.Event) -> None:
    conn = server.connect(database="sbtest")
    try:
        with conn.cursor() as cursor:
            while not stop.is_set():
                cursor.execute("SELECT c FROM sbtest1 WHERE id=%s", (1,))
                cursor.fetchall()
                stop.wait(0.02)
    finally:
        conn.close()


@contextlib.contextmanager
def point_selects_running(server):
    """sysbench's table, and its point select running on ``server`` while the block runs."""
    sbtest_table(server)
    stop = threading.Event()
    loader = threading.Thread(target=sbtest_load, args=(server, stop), daemon=True)
    loader.start()
    try:
        yield
    finally:
        stop.set()
        loader.join(10)


def sbtest_table(server) -> None:
    server.query("CREATE DATABASE IF NOT EXISTS sbtest")
    server.query("CREATE TABLE IF NOT EXISTS sbtest.sbtest1 (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60))")
    server.query("REPLACE INTO sbtest.sbtest1 VALUES (1, 1, 'c', 'p'), (2, 2, 'c', 'p')")


def test_s_on_a_queries_digest_shows_it_beside_the_same_statement_on_its_backend(proxytop_term, proxysql_double,
                                                                                 server):
    """The ProxySQL double's backends all point at the real MariaDB (hostgroups 10 and 20); its
    recorded digest has sysbench's point select, which the server runs meanwhile."""
    point_double_at(proxysql_double, server, "monitor", "monitor")
    with point_selects_running(server):
        term = proxytop_term("-P", str(proxysql_double.port), "-u", "admin", "-p", "admin", "--screen", "queries",
                             "--mysql-user", server.user, "--mysql-password", server.password, cols=200, rows=40)
        term.wait_until(lambda s: "SELECT c FROM sbtest1 WHERE id=?" in s, timeout=20, what="the digest")
        term.send("/")
        term.send("text:^SELECT.c.FROM.sbtest1.WHERE.id.\\?$" + ENTER)
        term.wait_until(lambda s: "SELECT c FROM sbtest1 WHERE id=?" in s and "sbtest2" not in s,
                        what="the filtered table")
        term.send("S")
        line = rf"^  {re.escape(server.address)}\s+([\d.]+)\s+\S+\s+\S+\s+1\s+1\s"  # Count/s ... Sent/call 1, Exam/call 1
        screen = term.wait_until(lambda s: re.search(line, s, re.M) is not None and float(
            re.search(line, s, re.M).group(1)) > 0, timeout=40, what="the server's figures beside ProxySQL's")
        assert "on its backends" in screen and "HG 10 ProxySQL" in screen
        assert "ProxySQL digest  SELECT c FROM sbtest1 WHERE id=?" in screen
        term.send(ESC)
        term.wait_until(lambda s: "on its backends" not in s and "Digest text" in s, what="the table again")
        term.send(ENTER)  # Enter still opens the digest's own detail
        term.wait_until(lambda s: "Route through the runtime query rules" in s, what="the digest's detail")


# ----- the reverse link: from a server's statement to ProxySQL's digests (Statements, S) ---------------------

POINT_SELECT = "SELECT `c` FROM `sbtest1` WHERE ID = ?"


def test_s_on_a_statement_shows_the_proxysql_digests_that_send_it(proxytop_term, proxysql_double, server):
    """The reverse of the link above: the server's point select, and the ProxySQL double's digest
    of it (its recording has sysbench's) in the hostgroups of that server, ProxySQL's figures
    beside the server's; the view reads ProxySQL's digest while open and says at what pace."""
    point_double_at(proxysql_double, server, "monitor", "monitor")
    with point_selects_running(server):
        term = proxytop_term("-P", str(proxysql_double.port), "-u", "admin", "-p", "admin", "--screen", "statements",
                             "--mysql-user", server.user, "--mysql-password", server.password, cols=200, rows=40)
        term.wait_until(lambda s: POINT_SELECT in s, timeout=40, what="the server's point select")
        term.send("/")
        term.send("text:^SELECT..c..FROM..sbtest1..WHERE.ID.=.\\?" + ENTER)
        term.wait_until(lambda s: POINT_SELECT in s and "Digest text" in s, what="the filtered table")
        term.send("S")
        line = r"^\* 10\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+0x"  # HG 10 (this server's), user, schema, figures, digest
        screen = term.wait_until(lambda s: re.search(line, s, re.M) is not None, timeout=40,
                                 what="ProxySQL's digest of the statement in this server's hostgroup")
        assert "the ProxySQL digests that send it" in screen and "This server" in screen
        assert "Reads ProxySQL's stats_mysql_query_digest while this view is open, every" in screen
        assert "is in hostgroups 10, 20 of ProxySQL" in screen and "Served by hostgroups" in screen
        assert not re.search(r"^[* ] \S+\s+\S+\s+\S+\s+.*sbtest2", screen, re.M)  # only this statement's digests
        term.send(ESC)
        term.wait_until(lambda s: "the ProxySQL digests that send it" not in s and "Digest text" in s,
                        what="the table again")
        term.send(ENTER)  # Enter still opens the statement's own detail
        term.wait_until(lambda s: "rows per call" in s, what="the statement's detail")


def test_s_with_only_mysql_says_no_proxysql_is_watched(proxytop_term, server):
    sbtest_table(server)
    stop = threading.Event()
    loader = threading.Thread(target=sbtest_load, args=(server, stop), daemon=True)
    loader.start()
    try:
        term = proxytop_term(*mysql_args(server), "--screen", "statements", cols=200, rows=30)
        term.wait_until(lambda s: POINT_SELECT in s, timeout=30, what="the server's point select")
        term.send("S")
        screen = term.wait_until(lambda s: "No ProxySQL is watched (--mysql alone)" in s, what="the one line")
        assert "Reads ProxySQL" not in screen
        term.send("q")
        assert term.wait_exit(5) == 0
    finally:
        stop.set()
        loader.join(10)


class LinkView:
    """The DataView calls the link makes: each server's two statement readings, its state."""

    def __init__(self, readings: Dict[str, Tuple[StatementsReading, StatementsReading]], down: Dict[str, str] = {}):
        self.readings, self.down = readings, down

    def pair(self, name):
        found = self.readings.get(name)
        if found is None:
            return None, None
        return tuple(Snapshot(name, data, taken_at=float(10 * n), duration=0.01, wall_time=1795211590.0 + 10 * n)
                     for n, data in enumerate(found))

    def state(self, source):
        return SimpleNamespace(connected=source not in self.down, error=self.down.get(source))

    def error(self, name):
        return None

    def interval_in_force(self, name):
        return 10.0


def test_the_link_shows_each_backends_figures_or_why_not():
    fleet = Fleet(Credentials(user="u"), 3.0, discover=False)
    servers = []
    for port, hostgroups in ((3311, (10,)), (3312, (20,)), (3313, (20,)), (3314, (20,))):
        server = Server(f"db:{port}", Endpoint(host="db", port=port),
                        discovered=DiscoveredServer("db", port, hostgroups, ("ONLINE",) * len(hostgroups)))
        fleet.servers[server.key] = server
        servers.append(server)

    def reading(count: int, examined: int) -> StatementsReading:
        row = ("sbtest", "d1", "SELECT `c` FROM `sbtest1` WHERE ID = ? ", count, count * 10 ** 8, examined, count, 0, 0, 0,
               0, 10 ** 9, 1795211000, 1795211590, None)
        return StatementsReading(Table(STATEMENT_COLUMNS, (row,)))

    view = LinkView({servers[0].statements_name: (reading(100, 100), reading(300, 300)),
                     servers[1].statements_name: (StatementsReading(Table(STATEMENT_COLUMNS, ()), enabled=False),) * 2},
                    down={servers[3].source: "connection refused"})
    figures = {"10": {"count_s": 25.0, "time_s": 3.0, "avg_ms": 0.12, "sent_per_call": 1.0},
               "20": {"count_s": None, "time_s": None, "avg_ms": None, "sent_per_call": None}}
    detail = BackendsLink().detail({"digest": "0xBF00"}, "SELECT c FROM sbtest1 WHERE id=?", figures, fleet, view)
    lines = ["".join(text for text, _style in line) for line in detail.lines]
    server_line = next(line for line in lines if line.startswith("  db:3311"))
    # 200 more calls in 10 s, 2e10 ps = 20 ms: 2 ms of statement time a second, 100 µs each, one row each
    assert re.match(r"  db:3311\s+20\s+2ms\s+100µs\s+1\s+1\s+0\s+0\s+—\s+1ms\s+sbtest$", server_line)
    assert any(line.startswith("HG 10 ProxySQL") and "25" in line for line in lines)
    assert "performance_schema is off" in next(line for line in lines if line.startswith("  db:3312"))
    assert "reading its statement digest" in next(line for line in lines if line.startswith("  db:3313"))
    assert "down: connection refused" in next(line for line in lines if line.startswith("  db:3314"))
    assert BackendsLink().collectors(fleet, ["20"]) == [s.statements_name for s in servers[1:]]


def test_p95_where_the_server_has_quantile_95_a_hand_written_mysql_8_shape():
    """MySQL 8.0's QUANTILE_95 (picoseconds), written from the MySQL manual: no MySQL runs here."""
    fleet = Fleet(Credentials(user="u"), 3.0, discover=False)
    fleet.add_explicit(Endpoint(host="db8", port=3306))
    screen = StatementsScreen(fleet=fleet)

    def reading(count: int) -> StatementsReading:
        row = ("shop", "d8", "SELECT `a` FROM `t` WHERE `id` = ? ", count, count * 10 ** 9, count, count, 0, 0, 0, 0,
               5 * 10 ** 9, 1795211000, 1795211590, 3 * 10 ** 9)
        return StatementsReading(Table(STATEMENT_COLUMNS, (row,)), p95=True)

    name = fleet.servers["db8:3306"].statements_name
    rows = screen.rows(LinkView({name: (reading(10), reading(30))}))
    assert "p95_ms" in [c.key for c in screen.columns]
    assert rows[0]["p95_ms"] == 3.0 and rows[0]["max_ms"] == 5.0 and rows[0]["count_s"] == 2.0
    assert not any("QUANTILE_95" in segment[0] for line in screen.notes(LinkView({name: (reading(10), reading(30))}))
                   for segment in line)
