"""Safety: proxytop only reads, and never shows, records or logs a password.

Across the whole test suite (tests/conftest.py installs the audit below at start-up and runs
the suite-wide checks last):

- every ProxySQL test double records the statements it received: only SELECT / SHOW (and
  PyMySQL's connection set-up), never a ``*_reset`` table, stats_mysql_query_digest only in the
  Queries screen's own read, and
  no KILL other than the ``KILL CONNECTION n`` the double carried out (a confirmed kill);
- every MySQL 8 double (tests/mysql8_double.py) records the statements it received: each
  proxytop's (tagged ``/* proxytop */``) and a read, an EXPLAIN of a SELECT or a KILL it
  carried out (but PyMySQL's set-up);
- every MariaDB the tests start writes a general query log: every statement of a connection
  that is not a test helper's (tests/mariadb.py ``connect``) — that is, proxytop's, in this
  process or in a real proxytop in a terminal — starts with ``/* proxytop */`` (but PyMySQL's
  set-up as it connects) and is a SELECT / SHOW (MariaDB's time limit in front or not), an EXPLAIN of a SELECT (the Sessions screen's
  ``e``), or a ``KILL QUERY n`` / ``KILL CONNECTION n`` (its confirmed ``k`` / ``K``:
  tests/test_sessions.py checks that nothing is sent without a yes).

And one session with distinctive passwords everywhere (the admin password, a wrong one, the
MySQL password, ProxySQL's monitor password) checks the screen, the recording, the log file,
the batch output and the error lines.
"""
from __future__ import annotations

import os
import re
import subprocess
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import List, Optional, Set, Tuple

import pytest

from proxytop.collectors.digest import MYSQL_TABLES, statement
from tests.mysql8_double import MySQL8Double
from tests.proxysql_double import ProxySQLDouble
from tests.terminal import ESC, ENTER, proxytop_command

# Reads: SELECT, SHOW, and ProxySQL's CHECKSUM MEMORY <module> (a hash of a configuration
# table's rows, which it selects and hashes: nothing is changed).
ALLOWED = re.compile(r"^\s*(select|show|checksum\s+memory)\b", re.IGNORECASE)
SETUP = re.compile(r"^\s*set\s+(names|autocommit)\b", re.IGNORECASE)
CONFIRMED_KILL = re.compile(r"^\s*kill\s+connection\s+(\d+)\s*;?\s*(/\* proxytop \*/)?$", re.IGNORECASE)
# What proxytop sends ProxySQL's admin interface ends so, but for the commands the interface
# knows only by their whole text and the question that tells it apart (both go as they are).
ADMIN_TAGGED = re.compile(r"\s/\* proxytop \*/$")
WHOLE_TEXT = re.compile(r"^(show tables( from \w+)?|checksum memory mysql query rules|select @@version_comment limit 1)$",
                        re.IGNORECASE)
# What the Sessions screen may send a MySQL server besides reads: an EXPLAIN of a SELECT (with
# MariaDB's time limit) and a confirmed KILL of one session or its statement.
MYSQL_EXPLAIN = re.compile(r"^\s*(/\* proxytop \*/\s*)?(set\s+statement\s+max_statement_time\s*=\s*[\d.]+\s+for\s+)?explain\s+select\b",
                           re.IGNORECASE)
MYSQL_KILL = re.compile(r"^\s*(/\* proxytop \*/\s*)?kill\s+(query|connection)\s+\d+\s*$", re.IGNORECASE)
# A read with MariaDB's time limit in front (the Locks screen's) is a read.
TIMED = re.compile(r"^\s*set\s+statement\s+max_statement_time\s*=\s*[\d.]+\s+for\s+", re.IGNORECASE)
TAGGED = re.compile(r"^\s*/\* proxytop \*/\s*")  # what proxytop sends a MySQL server starts so
# ... but the question that tells a ProxySQL admin interface apart, sent to whatever -P names
# (a test points it at MariaDB): ProxySQL matches it by its exact text, so it goes untagged.
ADMIN_PROBE = re.compile(r"^select @@version_comment limit 1$")
GENERAL_LOG = "proxytop-general.log"
SUITE_CHECK = "test_suite_"  # tests whose name starts so run after every other test
# ProxySQL copies its whole digest map for any query that names the table: only these reads
# (the Queries screen's, while it or a drill-down that needs it is visible) may name it.
DIGEST_READS = frozenset(statement(MYSQL_TABLES, version).lower() for version in (None, (2, 0, 6)))


# ----- the audit ---------------------------------------------------------------------------------

@dataclass
class ServerLog:
    """One MariaDB's general log, cut into runs (connection ids start again after a restart)."""

    server: object
    runs: List[int] = field(default_factory=list)  # log offset where each run's statements begin
    helpers: Set[Tuple[int, int]] = field(default_factory=set)  # (run, connection id) of test helpers
    findings: Optional[Tuple[int, List[str]]] = None  # (statements checked, violations) once read


class StatementAudit:
    def __init__(self):
        self.doubles: List[ProxySQLDouble] = []
        self.mysql8_doubles: List[MySQL8Double] = []
        self.servers: List[ServerLog] = []
        self._lock = threading.Lock()
        self.installed = False

    def log_of(self, server) -> Optional[ServerLog]:
        for entry in self.servers:
            if entry.server is server:
                return entry
        return None

    @staticmethod
    def path(server) -> str:
        return os.path.join(server.datadir, GENERAL_LOG)

    def keep_each(self, double_class, kept: list) -> None:
        """Every double of this class made from now on is put in ``kept``."""
        original = double_class.__init__
        audit = self

        def init(double, *args, **kwargs):
            original(double, *args, **kwargs)
            with audit._lock:
                kept.append(double)

        double_class.__init__ = init

    def install(self) -> None:
        """Wrap the double and the MariaDB helper (additively: their behaviour is unchanged)."""
        if self.installed:
            return
        self.installed = True
        from tests import mariadb

        audit = self
        self.keep_each(ProxySQLDouble, self.doubles)
        self.keep_each(MySQL8Double, self.mysql8_doubles)

        server_class = mariadb.MariaDBServer
        start, restart, stop, connect = (server_class.start, server_class.restart, server_class.stop,
                                         server_class.connect)

        def size(server) -> int:
            try:
                return os.path.getsize(audit.path(server))
            except OSError:
                return 0

        def audited_start(server, *args, **kwargs):
            server.options.setdefault("general_log", "ON")
            server.options.setdefault("general_log_file", GENERAL_LOG)  # in the data directory
            result = start(server, *args, **kwargs)
            with audit._lock:
                entry = audit.log_of(server)
                if entry is None:
                    entry = ServerLog(server)
                    audit.servers.append(entry)
                entry.runs.append(size(server))  # set-up by the helper itself (root password) is before
            return result

        def audited_restart(server, *args, **kwargs):
            result = restart(server, *args, **kwargs)
            entry = audit.log_of(server)
            if entry is not None:
                entry.runs.append(size(server))
            return result

        def audited_connect(server, *args, **kwargs):
            conn = connect(server, *args, **kwargs)
            entry = audit.log_of(server)
            if entry is not None and entry.runs:
                entry.helpers.add((len(entry.runs) - 1, conn.thread_id()))
            return conn

        def audited_stop(server, *args, **kwargs):
            entry = audit.log_of(server)
            if entry is not None and entry.findings is None and server.basedir:
                entry.findings = audit.read_server(entry)
            return stop(server, *args, **kwargs)

        server_class.start, server_class.restart = audited_start, audited_restart
        server_class.connect, server_class.stop = audited_connect, audited_stop

    # --- reading ---
    def read_server(self, entry: ServerLog) -> Tuple[int, List[str]]:
        try:
            with open(self.path(entry.server), "rb") as handle:
                data = handle.read()
        except OSError:
            return 0, []
        checked, violations = 0, []
        bounds = entry.runs + [len(data)]
        for run, (begin, end) in enumerate(zip(bounds, bounds[1:])):
            entries = parse_general_log(data[begin:end].decode("utf-8", "replace"))
            # Replication (tests/test_replication.py sets it up) is not proxytop's: on a primary, a
            # replica's IO thread asks for the binary log with a protocol command proxytop never
            # sends; on a replica, the SQL thread applies events as a thread of the server's own,
            # which never connected (every client's connection, proxytop's too, has a Connect line).
            connected = {conn_id for conn_id, command, _ in entries if command == "Connect"}
            replicas = {conn_id for conn_id, command, _ in entries
                        if command in REPLICA_COMMANDS or conn_id not in connected}
            for conn_id, command, argument in entries:
                if (run, conn_id) in entry.helpers or conn_id in replicas:
                    continue
                if command in ("Query", "Prepare", "Execute"):
                    checked += 1
                    statement = TIMED.sub("", TAGGED.sub("", argument))
                    if SETUP.match(argument) or ADMIN_PROBE.match(argument):
                        continue  # PyMySQL's own as it connects; the admin interface's probe
                    if not TAGGED.match(argument):
                        violations.append(f"{entry.server!r} connection {conn_id}: untagged {argument[:200]}")
                    elif not (ALLOWED.match(statement) or MYSQL_EXPLAIN.match(argument) or MYSQL_KILL.match(argument)):
                        violations.append(f"{entry.server!r} connection {conn_id}: {command} {argument[:200]}")
                elif command in ("Kill", "Shutdown", "Refresh", "Change user", "Set option"):
                    violations.append(f"{entry.server!r} connection {conn_id}: {command} {argument[:200]}")
        return checked, violations

    def mysql_findings(self) -> Tuple[int, List[str]]:
        checked, violations = 0, []
        for entry in list(self.servers):
            findings = entry.findings
            if findings is None:
                findings = self.read_server(entry)  # still running (the session's server)
            checked += findings[0]
            violations += findings[1]
        return checked, violations

    def mysql8_findings(self) -> Tuple[int, List[str]]:
        checked, violations = 0, []
        for double in list(self.mysql8_doubles):
            checked += len(double.queries())
            violations += mysql8_violations(double)
        return checked, violations

    def proxysql_findings(self) -> Tuple[int, List[str]]:
        checked, violations = 0, []
        for double in list(self.doubles):
            with double._lock:
                log = list(double.query_log)
                kills = list(double.kills)
            sent_kills = []
            for _, user, sql in log:
                checked += 1
                kill = CONFIRMED_KILL.match(sql)
                if kill:
                    sent_kills.append(int(kill.group(1)))
                    if user not in ("admin", "radmin"):
                        violations.append(f"KILL by the {user} user: {sql}")
                    continue
                if not (ALLOWED.match(sql) or SETUP.match(sql)):
                    violations.append(f"not a read: {sql[:200]}")
                elif not (SETUP.match(sql) or WHOLE_TEXT.match(sql) or ADMIN_TAGGED.search(sql)):
                    violations.append(f"untagged: {sql[:200]}")
                if re.search(r"_reset\b", sql, re.IGNORECASE):
                    violations.append(f"a *_reset table: {sql[:200]}")
                if "stats_mysql_query_digest" in sql.lower() and \
                        ADMIN_TAGGED.sub("", sql.strip()).lower() not in DIGEST_READS:
                    violations.append(f"the query digest, other than the Queries screen's read: {sql[:200]}")
            if sorted(sent_kills) != sorted(kills):
                violations.append(f"KILL statements {sent_kills} but kills carried out {kills}")
        return checked, violations


def mysql8_violations(double) -> List[str]:
    """What a MySQL 8 double received that is not proxytop's read, EXPLAIN SELECT or a KILL the
    double carried out (PyMySQL's set-up aside)."""
    wrong = []
    for sql in double.queries():
        if SETUP.match(sql):
            continue
        if not TAGGED.match(sql) or not (ALLOWED.match(TAGGED.sub("", sql)) or MYSQL_EXPLAIN.match(sql)
                                         or MYSQL_KILL.match(sql)):
            wrong.append(f"MySQL 8 double: {sql[:200]}")
    sent = (re.match(r"/\* proxytop \*/ KILL (QUERY|CONNECTION) (\d+)$", sql) for sql in double.queries())
    sent_kills = sorted((kill.group(1), int(kill.group(2))) for kill in sent if kill)
    if sent_kills != sorted(double.kills):
        wrong.append(f"MySQL 8 double: KILL statements {sent_kills} but kills carried out {double.kills}")
    return wrong


_LINE = re.compile(r"^(?:\d{6}\s+\d{1,2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T[\d:.]+Z?)?\s+(\d+)\s+"
                   r"(Connect|Query|Quit|Init DB|Field List|Prepare|Execute|Close stmt|Reset stmt|Ping|Change user"
                   r"|Refresh|Shutdown|Kill|Statistics|Processlist|Debug|Set option|Long Data|Binlog Dump"
                   r"|Register Slave|Daemon|Delayed insert|Error|Sleep|Time|Connect Out|Fetch|Daemon)\t?(.*)$")


def parse_general_log(text: str) -> List[Tuple[int, str, str]]:
    """(connection id, command, argument) of a MariaDB/MySQL general log; a statement on
    several lines is joined.

    >>> parse_general_log("231120 22:05:01\\t    3 Connect\\troot@localhost on  using Socket\\n"
    ...                   "\\t\\t    3 Query\\tSELECT 1\\n\\t\\t    3 Query\\tSELECT\\n  2\\n")
    [(3, 'Connect', 'root@localhost on  using Socket'), (3, 'Query', 'SELECT 1'), (3, 'Query', 'SELECT\\n  2')]
    """
    entries: List[Tuple[int, str, str]] = []
    for line in text.split("\n"):
        match = _LINE.match(line)
        if match:
            entries.append((int(match.group(1)), match.group(2), match.group(3)))
        elif entries and line and not line.startswith(("Time ", "Tcp port:", "/")) and "started with:" not in line:
            conn_id, command, argument = entries[-1]
            entries[-1] = (conn_id, command, argument + "\n" + line)
    return entries


REPLICA_COMMANDS = ("Binlog Dump", "Binlog Dump GTID", "Register Slave")

AUDIT = StatementAudit()


def install_statement_audit() -> None:
    """Called by tests/conftest.py before any test runs."""
    AUDIT.install()


def move_suite_checks_last(items) -> None:
    """Called by tests/conftest.py: the suite-wide checks run after every other test."""
    last = [item for item in items if item.name.startswith(SUITE_CHECK) and item.module.__name__.endswith("test_safety")]
    for item in last:
        items.remove(item)
    items.extend(last)


# ----- the suite-wide checks (run last) -----------------------------------------------------------

def test_suite_proxysql_received_only_reads_and_confirmed_kills():
    assert AUDIT.installed
    checked, violations = AUDIT.proxysql_findings()
    if not checked:
        pytest.skip("no ProxySQL double ran in this selection of tests")
    assert not violations, "\n".join(violations[:30])


def test_suite_mysql8_double_received_only_reads_from_proxytop():
    assert AUDIT.installed
    checked, violations = AUDIT.mysql8_findings()
    if not checked:
        pytest.skip("no MySQL 8 double ran in this selection of tests")
    assert not violations, "\n".join(violations[:30])


def test_suite_mariadb_received_only_reads_from_proxytop(mariadb):
    assert AUDIT.installed and AUDIT.log_of(mariadb) is not None
    checked, violations = AUDIT.mysql_findings()
    if not checked:
        pytest.skip("proxytop read no MariaDB in this selection of tests")
    assert not violations, "\n".join(violations[:30])


# ----- the audit itself works ----------------------------------------------------------------------

def test_the_audit_sees_a_write_on_mariadb(mariadb):
    """A statement of a connection that is not a helper's is checked: a write is caught, and so
    is a statement without proxytop's tag."""
    import pymysql

    entry = AUDIT.log_of(mariadb)
    assert entry is not None and os.path.exists(AUDIT.path(mariadb))
    conn = pymysql.connect(host=mariadb.host, port=mariadb.port, user=mariadb.user, password=mariadb.password)
    try:
        with conn.cursor() as cursor:
            cursor.execute("/* proxytop */ SELECT 1 /* safety-audit-probe */")  # a read: fine
            cursor.execute("/* proxytop */ DO 1 /* safety-audit-probe */")  # a write: caught
            cursor.execute("SELECT 2 /* safety-audit-probe */")  # not tagged as proxytop's: caught
        probe = conn.thread_id()
    finally:
        conn.close()
    deadline = time.monotonic() + 5
    while True:
        _, violations = AUDIT.read_server(entry)
        mine = [v for v in violations if "safety-audit-probe" in v]
        if len(mine) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(mine) == 2 and "DO 1" in mine[0] and "untagged SELECT 2" in mine[1], mine
    assert all(f"connection {probe}" in v for v in mine)
    entry.helpers.add((len(entry.runs) - 1, probe))  # the probe is the test's, not proxytop's


def test_the_audit_sees_a_write_on_the_double(proxysql_double):
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", port=proxysql_double.port, user="admin", password="admin")
    try:
        with conn.cursor() as cursor:
            with pytest.raises(pymysql.err.MySQLError):
                cursor.execute("KILL QUERY 5")
    finally:
        conn.close()
    double = proxysql_double
    _, violations = StatementAudit.proxysql_findings(type("One", (), {"doubles": [double]})())
    assert any("KILL QUERY 5" in v for v in violations)
    with double._lock:  # the probe is the test's: take it out of the suite's log
        double.query_log[:] = [entry for entry in double.query_log if "KILL QUERY 5" not in entry[2]]


def test_the_audit_sees_a_write_on_the_mysql8_double():
    import pymysql

    from tests.mysql8_double import PASSWORD, USER

    double = MySQL8Double().start()
    conn = pymysql.connect(host="127.0.0.1", port=double.port, user=USER, password=PASSWORD)
    try:
        with conn.cursor() as cursor:
            for sql in ("/* proxytop */ DO 1", "SELECT 2", "/* proxytop */ KILL QUERY 4102"):
                try:
                    cursor.execute(sql)
                except pymysql.err.MySQLError:
                    pass  # the double refuses the first two; the audit must see all three
    finally:
        conn.close()
        double.stop()
    violations = mysql8_violations(double)
    assert any("DO 1" in v for v in violations) and any("SELECT 2" in v for v in violations)
    assert double.kills == [("QUERY", 4102)] and len(violations) == 2  # a KILL carried out is allowed
    double.query_log.clear()  # the probe is the test's: take it out of the suite's log
    double.kills.clear()


# ----- passwords ---------------------------------------------------------------------------------

ADMIN_SECRET = "Adm1n-s3cret-PW"
WRONG_SECRET = "Wr0ng-s3cret-PW"
MYSQL_SECRET = "My5ql-s3cret-PW"
MONITOR_SECRET = "M0nitor-s3cret-PW"
SECRETS = (ADMIN_SECRET, WRONG_SECRET, MYSQL_SECRET, MONITOR_SECRET)


def leaked(text) -> List[str]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [secret for secret in SECRETS if secret in text]


def secret_double(recording) -> ProxySQLDouble:
    """The double with an admin user whose password is ADMIN_SECRET, and MONITOR_SECRET as
    ProxySQL's mysql-monitor_password."""
    from tests import proxysql_double

    double = ProxySQLDouble(recording=recording)

    def monitor(columns, rows):
        fixed = []
        for row in rows:
            row = list(row)
            if row[0] == "mysql-monitor_password":
                row[1] = MONITOR_SECRET
            fixed.append(row)
        return columns, fixed

    double.transforms["global_variables"] = monitor
    proxysql_double.USERS.setdefault("secretadmin", (ADMIN_SECRET, "admin"))
    return double.start()


def read_recording(path: str) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read()
    out = b""
    while data:  # concatenated gzip members, the last possibly unfinished
        decompressor = zlib.decompressobj(31)
        try:
            out += decompressor.decompress(data)
        except zlib.error:
            break
        data = decompressor.unused_data
    return out


def test_passwords_appear_nowhere(proxytop_term, recording, mariadb, tmp_path):
    double = secret_double(recording)
    record, log = str(tmp_path / "session.rec"), str(tmp_path / "debug.log")
    try:
        # 1. A wrong admin password: one line, no password.
        term = proxytop_term("-P", str(double.port), "-u", "secretadmin", "-p", WRONG_SECRET, "--log-file", log)
        screen = term.wait_for("access denied", timeout=15)
        assert not leaked(screen)
        term.send("q")
        assert term.wait_exit(10) == 0
        assert not leaked(term.output())

        # 2. The right ones, from the environment and the command line, recorded and logged,
        # with a MySQL server whose password is given and ProxySQL's monitor password read.
        term = proxytop_term("-P", str(double.port), "-u", "secretadmin", "--record", record, "--log-file", log,
                             "--mysql", f"{mariadb.host}:{mariadb.port}", "--mysql-user", "secretuser",
                             "--mysql-password", MYSQL_SECRET, cols=160, rows=45,
                             env={"PROXYTOP_ADMIN_PASSWORD": ADMIN_SECRET})
        term.wait_for("127.0.0.1:3313", timeout=15)
        screens = [term.text()]
        for key in "1234567":
            term.send(key, pause=0.8)
            screens.append(term.text())
            term.send(ENTER, pause=0.6)  # a detail where there is one
            screens.append(term.text())
            term.send(ESC, pause=0.4)
        term.send("6", pause=0.3)
        port = re.escape(str(mariadb.port))
        screens.append(term.wait_for(rf"127\.0\.0\.1:{port}.*DOWN.*retrying in \d+s: ac", timeout=15))  # no such user
        term.send(ENTER, pause=0.6)  # its detail: the whole error line
        screens.append(term.text())
        term.send(ESC, pause=0.4)
        term.send("?", pause=0.5)
        screens.append(term.text())
        term.send(ESC, pause=0.4)
        term.send("q")
        assert term.wait_exit(10) == 0
        for screen in screens:
            assert not leaked(screen), screen
        assert not leaked(term.output())
        recorded = read_recording(record)
        assert b"stats_mysql_connection_pool" in recorded or b"proxysql.connection_pool" in recorded
        assert b"mysql-monitor_username" in recorded or b"innodb.discovery" in recorded
        assert not leaked(recorded)
        with open(log, "rb") as handle:
            logged = handle.read()
        assert b"connected to" in logged and b"access denied" in logged.lower()
        assert not leaked(logged)

        # 3. The replay of that recording, and batch output with a failing connection.
        term = proxytop_term("--replay", record)
        assert not leaked(term.wait_for("REPLAY", timeout=15))
        term.send("q")
        term.wait_exit(10)
        result = subprocess.run(list(proxytop_command()) + ["--batch", "--count", "1", "-P", str(double.port),
                                                             "-u", "secretadmin", "-p", WRONG_SECRET,
                                                             "--connect-timeout", "1"],
                                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert result.returncode == 1 and "access denied" in result.stderr
        assert not leaked(result.stdout + result.stderr)
        assert "Traceback" not in result.stderr
    finally:
        double.stop()


def test_error_lines_never_carry_the_password():
    import pymysql

    from proxytop import errors
    from proxytop.collectors.innodb import describe_mysql_error

    for exc in (pymysql.err.OperationalError(1045, f"Access denied for user 'x' (using password: {ADMIN_SECRET})"),
                pymysql.err.OperationalError(2003, f"Can't connect ({ADMIN_SECRET})"),
                ValueError(f"odd {ADMIN_SECRET} value"), TimeoutError(ADMIN_SECRET)):
        line = errors.describe(exc, password=ADMIN_SECRET)
        assert ADMIN_SECRET not in line and "\n" not in line and line
        assert ADMIN_SECRET not in describe_mysql_error(exc, ADMIN_SECRET)


def test_passwords_from_the_configuration_file_and_login_paths_appear_nowhere(proxytop_term, recording, mariadb,
                                                                              tmp_path):
    """The admin password in a [node:NAME] section, the MySQL password in a login path, a
    wrong one in another node: not on the screen, in --print-defaults, the log or a recording."""
    from tests.login_paths import write_login_file

    double = secret_double(recording)
    home = tmp_path / "home"
    (home / ".config" / "proxytop").mkdir(parents=True)
    write_login_file(str(home / ".mylogin.cnf"), {"mysql-lp": {"user": "secretuser", "password": MYSQL_SECRET}})
    (home / ".config" / "proxytop" / "proxytop.cnf").write_text(
        f"[proxytop]\nmysql-login-path = mysql-lp\n"
        f"[node:good]\nport = {double.port}\nuser = secretadmin\npassword = {ADMIN_SECRET}\n"
        f"[node:bad]\nport = {double.port}\nuser = secretadmin\npassword = {WRONG_SECRET}\n")
    record, log = str(tmp_path / "session.rec"), str(tmp_path / "debug.log")
    env = {"HOME": str(home)}
    try:
        printed = subprocess.run(list(proxytop_command()) + ["@good", "--print-defaults"], capture_output=True,
                                 text=True, timeout=60, stdin=subprocess.DEVNULL, env=dict(os.environ, **env))
        assert printed.returncode == 0 and "secretadmin" in printed.stdout and "secretuser" in printed.stdout
        assert not leaked(printed.stdout + printed.stderr)

        term = proxytop_term("@bad", "--log-file", log, env=env)
        assert not leaked(term.wait_for("access denied", timeout=15))
        term.send("q")
        assert term.wait_exit(10) == 0

        term = proxytop_term("@good", "--record", record, "--log-file", log, "--screen", "innodb",
                             "--mysql", f"{mariadb.host}:{mariadb.port}", cols=160, rows=40, env=env)
        port = re.escape(str(mariadb.port))
        screens = [term.wait_for(rf"127\.0\.0\.1:{port}.*DOWN.*retrying in \d+s: ac", timeout=20)]  # no such user
        term.send(ENTER)
        screens.append(term.wait_for("InnoDB flushing on", timeout=10))  # the detail: the whole error line
        term.send(ESC)
        term.wait_for("HG/Status", timeout=10)  # back on the table: q is not taken as Alt-q
        term.send("q")
        assert term.wait_exit(10) == 0
        for screen in screens:
            assert not leaked(screen), screen
        assert not leaked(term.output())
        assert not leaked(read_recording(record))
        with open(log, "rb") as handle:
            logged = handle.read()
        assert b"connected to" in logged and not leaked(logged)
    finally:
        double.stop()
