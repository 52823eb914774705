"""The InnoDB screen against a real MariaDB under a write load the test generates.

A dedicated server with a 48 MiB redo log, a 64 MiB buffer pool and slow background flushing
(io_capacity 100, adaptive flushing off) is written to by four Python threads rewriting
1.5 KB rows: the redo rate and dirty pages rise and the checkpoint age crosses the async
limit within seconds. The collectors and the screen run exactly as in the program (the
engine, the controller, the renderer), and the installed proxytop in a pseudo-terminal shows
the same. Other tests use the shared ``mariadb`` fixture: a user without PROCESS, discovery
through the ProxySQL test double, and servers that are down or hang.
"""
from __future__ import annotations

import re
import threading
import time
from contextlib import contextmanager
from typing import Iterator, List, Optional

import pymysql
import pytest

from proxytop.cli import build
from proxytop.collectors.innodb import InnoDBEngine, InnoDBStatus, MySQLSource
from proxytop import options
from proxytop.metrics.innodb import ASYNC, SYNC, parse_status_text
from proxytop.polling.connection import Endpoint
from proxytop.ui import view
from tests.mariadb import MariaDBServer, free_port, running_server
from tests.sockets import silent_server

MiB = 1024 * 1024
LOAD_OPTIONS = {
    "innodb_log_file_size": "48M",
    "innodb_buffer_pool_size": "64M",
    "innodb_io_capacity": "100",
    "innodb_io_capacity_max": "100",
    "innodb_adaptive_flushing": "OFF",
    "innodb_flush_log_at_trx_commit": "0",
    "skip_log_bin": None,
}
ROWS = 20000


# ----- the write load ---------------------------------------------------------------------------

class WriteLoad:
    """Threads rewriting 500-row ranges of 1.5 KB rows: lots of redo, pages kept dirty."""

    def __init__(self, server: MariaDBServer, threads: int = 4):
        self.server = server
        self.threads = threads
        self._stop = threading.Event()
        self._workers: List[threading.Thread] = []
        self.statements = 0
        self.errors: List[str] = []

    def prepare(self) -> None:
        conn = self.server.connect()
        try:
            with conn.cursor() as cursor:
                cursor.execute("CREATE DATABASE IF NOT EXISTS load_db")
                cursor.execute("DROP TABLE IF EXISTS load_db.t")
                cursor.execute("CREATE TABLE load_db.t (id INT PRIMARY KEY, pad VARCHAR(2000), n INT) ENGINE=InnoDB")
                cursor.execute(f"INSERT INTO load_db.t SELECT seq, REPEAT('x', 1500), 0 FROM load_db.seq_1_to_{ROWS}")
        finally:
            conn.close()

    def _work(self, k: int) -> None:
        try:
            conn = self.server.connect(read_timeout=30, write_timeout=30)
        except pymysql.err.MySQLError as exc:
            self.errors.append(str(exc))
            return
        try:
            with conn.cursor() as cursor:
                i = 0
                while not self._stop.is_set():
                    low = (i * 500 + k * 5000) % ROWS
                    cursor.execute("UPDATE load_db.t SET pad = REPEAT(CHAR(65 + %s), 1500), n = n + 1 "
                                   "WHERE id BETWEEN %s AND %s", (i % 26, low, low + 499))
                    i += 1
                    self.statements += 1
        except pymysql.err.MySQLError as exc:
            self.errors.append(str(exc))
        finally:
            conn.close()

    def start(self) -> "WriteLoad":
        self._stop.clear()
        self._workers = [threading.Thread(target=self._work, args=(k,), daemon=True, name=f"load-{k}")
                         for k in range(self.threads)]
        for worker in self._workers:
            worker.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(30)


def settle(server: MariaDBServer, timeout: float = 30.0) -> int:
    """Flush the buffer pool clean before measuring (a test-server setting, set back after)."""
    conn = server.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("SET GLOBAL innodb_io_capacity_max = 20000")
            cursor.execute("SET GLOBAL innodb_io_capacity = 10000")
            cursor.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
            deadline = time.monotonic() + timeout
            dirty = None
            while time.monotonic() < deadline:
                cursor.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
                dirty = int(cursor.fetchone()[1])
                if dirty < 20:
                    break
                time.sleep(0.2)
            cursor.execute("SET GLOBAL innodb_max_dirty_pages_pct = 90")
            cursor.execute(f"SET GLOBAL innodb_io_capacity = {LOAD_OPTIONS['innodb_io_capacity']}")
            cursor.execute(f"SET GLOBAL innodb_io_capacity_max = {LOAD_OPTIONS['innodb_io_capacity_max']}")
            return dirty
    finally:
        conn.close()


@pytest.fixture(scope="module")
def load_server() -> Iterator[MariaDBServer]:
    with running_server(LOAD_OPTIONS, name="load") as server:
        WriteLoad(server).prepare()
        yield server


# ----- running the program's parts in-process ---------------------------------------------------

@contextmanager
def monitor(*argv: str, environ: Optional[dict] = None):
    """Engine + controller exactly as proxytop builds them (no terminal)."""
    config = options.parse(list(argv), environ or {})
    engine, controller = build(config)
    controller.activate()
    engine.start()
    try:
        yield engine, controller
    finally:
        engine.stop()


def closed_port() -> int:
    return free_port()  # nothing listens there: a ProxySQL that is not running


def screen_text(controller, cols: int = 160, rows: int = 30) -> str:
    return view.screen_text(view.render(controller, cols, rows))


def wait(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def server_screen(controller):
    for screen in controller.screens:
        if screen.key == "innodb":
            return screen
    raise AssertionError("no InnoDB screen")


def assessment_of(controller, key: str):
    screen = server_screen(controller)
    return screen.assessment(screen.servers[key], controller.view)


@pytest.fixture
def clean_home(tmp_path, monkeypatch):
    """No ~/.my.cnf and no MYSQL_PWD from the machine running the tests."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    return tmp_path


# ----- the load test ----------------------------------------------------------------------------

def test_write_load_raises_redo_rate_dirty_pages_and_crosses_async(load_server, clean_home, proxytop_term):
    server = load_server
    key = server.address
    argv = ("-P", str(closed_port()), "--screen", "innodb", "--no-discover", "--mysql", key,
            "--mysql-user", server.user, "--mysql-password", server.password)
    load = WriteLoad(server)
    started = time.monotonic()
    assert settle(server) < 20
    print(f"settled in {time.monotonic() - started:.1f}s")
    with monitor(*argv) as (engine, controller):
        idle = wait(lambda: (lambda a: a if a.redo_rate is not None and a.limits is not None else None)(
            assessment_of(controller, key)), 10, "two idle samples")
        assert idle.flavour.product == "MariaDB"
        # the server's own maximum checkpoint age equals the 10.8+ formula for its 48 MiB log
        assert idle.limits.sync_age == 40050893 and idle.limits.sync_origin == "server"
        assert idle.limits.async_age == 35044532
        assert idle.limits.capacity == 48 * MiB
        assert idle.redo_rate < 1 * MiB
        idle_dirty = idle.dirty_pages

        term = proxytop_term(*argv, cols=160, rows=24, env={"HOME": str(clean_home)})
        term.wait_for(re.escape(key) + r"\s+\S+\s+MariaDB 10\.\d+", timeout=15)

        samples = []
        crossed = None
        capture = None
        load.start()
        try:
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                time.sleep(0.25)
                a = assessment_of(controller, key)
                if a.redo_rate is not None:
                    samples.append(a)
                if a.state in (ASYNC, SYNC) and crossed is None:
                    crossed = a
                    capture = screen_text(controller, 160, 24)
                if crossed is not None and len(samples) >= 8:
                    break
            assert not load.errors, load.errors
            assert crossed is not None, [(s.age, s.state) for s in samples]
            # the installed program shows the alarm too, with its real terminal
            screen = term.wait_until(lambda s: re.search(re.escape(key) + r".*(ASYNC FLUSH|SYNC FLUSH)", s)
                                     is not None, timeout=30, what="ASYNC/SYNC FLUSH on the server's row")
            # the detail panel of the selected row
            term.send("\r")
            detail = term.wait_for("InnoDB flushing on " + re.escape(key))
            detail = term.wait_until(lambda s: "Checkpoint" in s and "async flush at" in s and "redo written" in s,
                                     timeout=10, what="the detail panel")
        finally:
            load.stop()

    # a rising redo rate and more dirty pages under the load
    peak_rate = max(s.redo_rate for s in samples)
    assert peak_rate > 4 * MiB and peak_rate > 20 * max(idle.redo_rate, 1)
    peak_dirty = max(s.dirty_pages for s in samples)
    assert peak_dirty > idle_dirty + 300 and peak_dirty > 2 * idle_dirty
    assert max(s.dirty_pct for s in samples) > 5.0
    # crossed the async limit, and the screen said so
    assert crossed.age > crossed.limits.async_age
    assert crossed.age_pct > 100.0 * crossed.limits.async_age / (48 * MiB)
    assert crossed.full_in is not None and crossed.full_in < 60
    assert re.search(re.escape(key) + r".*(ASYNC FLUSH|SYNC FLUSH)", capture), capture
    assert "ASYNC FLUSH (checkpoint age past the async limit)" in capture or "SYNC FLUSH (writes stall" in capture
    row = next(line for line in screen.splitlines() if line.startswith(key))
    # CkptAge, Age% and the redo rate in bytes per second (Redo/s: no /s in the cell)
    assert re.search(r"\d+(\.\d)?MiB\s+[\d.]+\s+\d+(\.\d)?MiB", row), row
    assert "[" in detail and "A" in detail and "S" in detail  # the bar with its markers
    assert server.password not in screen and server.password not in detail
    print("\n--- in-process render at the crossing ---\n" + capture)
    print("\n--- the installed proxytop, 160x24, during the load ---\n" + screen)
    print("\n--- its detail panel ---\n" + detail)


def test_collector_age_is_lsn_minus_checkpoint_of_the_status_text(load_server):
    """At the same moment, Innodb_checkpoint_age as the collector reads it equals LSN − last
    checkpoint from SHOW ENGINE INNODB STATUS, give or take the redo written in between."""
    server = load_server
    source = MySQLSource(Endpoint(host=server.host, port=server.port, user=server.user, password=server.password))
    session = source.connect()
    collector = InnoDBStatus(source.endpoint)
    load = WriteLoad(server).start()
    compared = exact = 0
    try:
        time.sleep(1.0)
        for _ in range(40):
            status = collector.collect(session)
            text = parse_status_text(session.query("SHOW ENGINE INNODB STATUS").rows[0][2])
            age = int(status["Innodb_checkpoint_age"])
            lsn, checkpoint = int(status["Innodb_lsn_current"]), int(status["Innodb_lsn_last_checkpoint"])
            assert age == lsn - checkpoint  # the status variables agree with each other
            drift = text.lsn - lsn  # redo written between the two reads
            assert 0 <= drift < 64 * MiB
            compared += 1
            if text.checkpoint_lsn == checkpoint:
                # same checkpoint: the ages differ by exactly the redo written in between
                assert text.age - age == drift
                assert abs(text.age - age) <= drift
                exact += 1
            else:
                assert text.checkpoint_lsn > checkpoint  # a checkpoint happened in between
            time.sleep(0.05)
    finally:
        load.stop()
        source.close(session)
    assert compared == 40 and exact >= 5, exact


# ----- privileges ---------------------------------------------------------------------------------

def test_user_without_process_sees_needs_process(mariadb, clean_home):
    mariadb.create_user("noproc", "noproc-pw-123", ["USAGE"])
    key = mariadb.address
    argv = ("-P", str(closed_port()), "--screen", "innodb", "--no-discover", "--mysql", key,
            "--mysql-user", "noproc", "--mysql-password", "noproc-pw-123")
    with monitor(*argv) as (engine, controller):
        a = wait(lambda: (lambda x: x if x.redo_rate is not None and x.needs_process else None)(
            assessment_of(controller, key)), 10, "two samples as noproc")
        assert set(a.needs_process) == {"pending_writes", "by_type"}
        # what needs no privilege on MariaDB is still there
        assert a.age is not None and a.state is not None and a.history_list_length is not None
        assert a.pending_flush_list is None and a.by_type is None
        assert engine.error(f"innodb.engine.{key}") is None  # no failing collector, no crash
        text = screen_text(controller, 200)
        row = next(line for line in text.splitlines() if line.startswith(key))
        assert "needs PROCESS: PendW, by type" in row, text
        controller.handle_key(10)  # Enter: the detail panel
        detail = screen_text(controller, 160, 60)
        assert re.search(r"pending writes\s+needs PROCESS", detail), detail
        assert re.search(r"by type\s+needs PROCESS", detail), detail
        assert "noproc-pw-123" not in text + detail


# ----- discovery through ProxySQL ---------------------------------------------------------------

def point_double_at(double, server: MariaDBServer, monitor_user: str, monitor_password: str) -> None:
    def servers(columns, rows):
        template = dict(zip(columns, rows[0]))
        made = []
        for hostgroup, comment in ((10, "writer"), (20, "reader")):
            row = dict(template, hostgroup_id=str(hostgroup), hostname=server.host, port=str(server.port),
                       status="ONLINE", comment=comment)
            made.append([row[c] for c in columns])
        return columns, made

    def variables(columns, rows):
        values = {"mysql-monitor_username": monitor_user, "mysql-monitor_password": monitor_password}
        return columns, [[r[0], values.get(r[0], r[1])] for r in rows]

    double.transforms["runtime_mysql_servers"] = servers
    double.transforms["global_variables"] = variables


def test_discovery_reads_backends_with_the_monitor_user(mariadb, proxysql_double, clean_home):
    mariadb.create_user("pmon", "pmon-secret-77", ["USAGE", "REPLICATION CLIENT"])
    point_double_at(proxysql_double, mariadb, "pmon", "pmon-secret-77")
    key = mariadb.address
    with monitor("-P", str(proxysql_double.port), "--screen", "innodb") as (engine, controller):
        # the row says OK from the first status reading; "needs PROCESS" comes with the
        # engine-status reading after it: wait for the row to say both
        pattern = re.escape(key) + r".*10,20 ONLINE.*MariaDB 10\.\d+ +OK.*needs PROCESS"
        text = wait(lambda: (lambda t: t if re.search(pattern, t) else None)(screen_text(controller)), 15,
                    "the discovered server's row with what needs PROCESS")
        assert "1 backend(s) from ProxySQL's runtime_mysql_servers, read as ProxySQL's monitor user 'pmon'" in text
        source = engine.source(f"mysql:{key}")
        assert source.endpoint.user == "pmon"
        assert "pmon-secret-77" not in text and "pmon-secret-77" not in repr(source.endpoint)
        queries = proxysql_double.queries("admin")
        assert any("runtime_mysql_servers" in q for q in queries)
        assert any("mysql-monitor_password" in q for q in queries)  # no MySQL credentials given: needed
        assert not any("_reset" in q for q in queries)


def test_discovery_with_the_stats_user_says_it_needs_admin(proxysql_double, clean_home):
    with monitor("-P", str(proxysql_double.port), "-u", "stats", "-p", "stats", "--screen", "innodb") as (_, controller):
        text = wait(lambda: (lambda t: t if "needs a ProxySQL admin user" in t else None)(screen_text(controller)),
                    10, "the admin-user note")
        assert "No MySQL server to watch: add one with --mysql HOST[:PORT]" in text
        assert not any("runtime_mysql_servers" in q for q in proxysql_double.queries("stats"))


def test_explicit_credentials_win_over_the_monitor_user(mariadb, proxysql_double, clean_home, monkeypatch):
    point_double_at(proxysql_double, mariadb, "nobody", "wrong")
    key = mariadb.address
    monkeypatch.setenv("MYSQL_PWD", mariadb.password)  # the password as the mysql client takes it
    with monitor("-P", str(proxysql_double.port), "--screen", "innodb", "--mysql-user", "root") as (engine, controller):
        # the UI's refreshes (here: renders) register what discovery found
        a = wait(lambda: screen_text(controller) and key in server_screen(controller).servers and (
            lambda x: x if x.state is not None else None)(assessment_of(controller, key)), 15, "a reading as root")
        assert a.needs_process == ()
        assert engine.source(f"mysql:{key}").endpoint.user == "root"
        # credentials given: ProxySQL's monitor credentials are never read
        queries = proxysql_double.queries("admin")
        assert any("runtime_mysql_servers" in q for q in queries)
        assert not any("mysql-monitor_password" in q for q in queries)


# ----- one server down or hanging never holds up the others ------------------------------------

def test_down_and_hung_servers_do_not_delay_the_others(mariadb, clean_home):
    refused = closed_port()
    with silent_server() as hung:
        good = mariadb.address
        argv = ("-P", str(closed_port()), "--screen", "innodb", "--no-discover", "--connect-timeout", "2",
                "--mysql", good, "--mysql", f"127.0.0.1:{refused}", "--mysql", f"127.0.0.1:{hung}",
                "--mysql-user", mariadb.user, "--mysql-password", mariadb.password)
        with monitor(*argv) as (engine, controller):
            started = time.monotonic()
            name = f"innodb.status.{good}"
            wait(lambda: engine.latest(name) is not None, 5, "the first reading of the good server")
            first = engine.latest(name)
            wait(lambda: len(engine.history(name)) >= 2 and engine.latest(name).taken_at - first.taken_at >= 2.5,
                 8, "readings of the good server every second")
            assert time.monotonic() - started < 6
            text = wait(lambda: (lambda t: t if re.search(rf"127\.0\.0\.1:{refused}\s.*down, retrying (in \d+s|now)", t)
                                 and re.search(rf"127\.0\.0\.1:{hung}\s.*down, retrying (in \d+s|now)", t) else None)(
                screen_text(controller, 200)), 12, "both bad servers marked down")
            good_row = next(line for line in text.splitlines() if good in line)
            assert "MariaDB" in good_row and " OK " in good_row
            assert "timeout" in next(line for line in text.splitlines() if f":{hung}" in line)
            assert "connection refused" in next(line for line in text.splitlines() if f":{refused}" in line)
            assert "2 of 3 server(s) down" in text
            assert mariadb.password not in text


def test_no_servers_says_how_to_add_one(clean_home):
    with monitor("-P", str(closed_port()), "--screen", "innodb", "--no-discover") as (_, controller):
        text = screen_text(controller)
        assert "No MySQL server to watch: add one with --mysql HOST[:PORT] or --mysql-socket PATH." in text


def test_socket_server_and_the_vars_mapping_for_iostat(mariadb, clean_home):
    argv = ("-P", str(closed_port()), "--screen", "innodb", "--no-discover", "--mysql-socket", mariadb.socket,
            "--mysql-user", mariadb.user, "--mysql-password", mariadb.password)
    with monitor(*argv) as (engine, controller):
        name = f"innodb.vars.{mariadb.socket}"
        snapshot = wait(lambda: engine.latest(name), 10, "the variables reading")
        data = snapshot.data
        assert data["socket"] == mariadb.socket and data["host"] == "localhost"
        assert data["datadir"].rstrip("/") == mariadb.datadir
        assert data["tmpdir"] == mariadb.tmpdir
        assert data["log_bin_basename"].startswith(mariadb.datadir)
        assert data["innodb_log_group_home_dir"] == "./"
        assert engine.source(f"mysql:{mariadb.socket}").endpoint.socket == mariadb.socket
        text = wait(lambda: (lambda t: t if re.search(r"MariaDB 10\.\d+ +OK", t) else None)(
            screen_text(controller, 200)), 10, "the socket server's row")
        assert mariadb.socket[:15] in text


def test_refused_statements_are_retried_once_a_minute_not_every_poll(mariadb):
    mariadb.create_user("noproc2", "noproc2-pw", ["USAGE"])
    source = MySQLSource(Endpoint(host=mariadb.host, port=mariadb.port, user="noproc2", password="noproc2-pw"))
    session = source.connect()
    now = [1000.0]
    collector = InnoDBEngine(source.endpoint, clock=lambda: now[0])
    try:
        first = collector.collect(session)
        assert first.text_denied and first.metrics_denied and first.needs_process
        sent = session.queries
        now[0] += 30
        again = collector.collect(session)
        assert again.text_denied and again.metrics_denied
        assert session.queries == sent  # nothing sent: the refusal is remembered
        now[0] += 31
        mariadb.query("GRANT PROCESS ON *.* TO 'noproc2'@'%'")
        granted = collector.collect(session)
        # one new connection, and on MariaDB one statement (INNODB_METRICS and the pool's pending writes)
        assert session.queries == sent + 1 and session.reopens == 1
        assert not granted.needs_process and granted.pool_pending is not None and granted.text is None
        assert granted.metrics["buffer_LRU_batch_flush_total_pages"].enabled
    finally:
        source.close(session)


def test_a_server_that_goes_down_is_shown_down_and_comes_back(clean_home):
    server = MariaDBServer(name="flaky").start()
    try:
        key = server.address
        argv = ("-P", str(closed_port()), "--screen", "innodb", "--no-discover", "--mysql", key,
                "--mysql-user", server.user, "--mysql-password", server.password)
        with monitor(*argv) as (engine, controller):
            wait(lambda: re.search(re.escape(key) + r".*MariaDB 10\.\d+\s+OK", screen_text(controller)), 10, "OK")
            server.process.kill()  # no clean shutdown: the connection just breaks
            server.process.wait(10)
            text = wait(lambda: (lambda t: t if re.search(re.escape(key) + r".*DOWN.*down, retrying (in \d+s|now)", t)
                                 else None)(screen_text(controller)), 10, "the row marked down")
            assert "1 of 1 server(s) down" in text
            counts = set()
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:  # the countdown moves without any new reading
                match = re.search(r"retrying in (\d+)s", screen_text(controller))
                if match:
                    counts.add(match.group(1))
                time.sleep(0.3)
            assert len(counts) >= 2, counts
            server.restart()
            wait(lambda: re.search(re.escape(key) + r".*MariaDB 10\.\d+\s+OK", screen_text(controller)), 15,
                 "the row back to OK after the restart")
    finally:
        server.stop()
