"""The MySQL servers' half: the Servers screen over real MariaDB servers, proxytop with only
--mysql (no ProxySQL looked for), and M between the halves (from a backend's row to its server)."""
from __future__ import annotations

import json
import re
import subprocess

from proxytop.collectors.mysql_server import Channel, ServerReading, channels_from
from proxytop.core import Table
from proxytop.screens.servers import channel_problems, replication_text, role
from tests.mariadb import MariaDBServer
from tests.terminal import DOWN, proxytop_command


def mysql_args(*servers) -> list:
    args = []
    for server in servers:
        args += ["--mysql", server.address]
    return args + ["--mysql-user", servers[0].user, "--mysql-password", servers[0].password]


def row_of(screen: str, address: str) -> str:
    return next((line for line in screen.splitlines() if line.startswith(address)), "")


def test_only_mysql_named_shows_the_servers_half_alone(proxytop_term, mariadb):
    term = proxytop_term(*mysql_args(mariadb), "-d", "1", cols=160, rows=24)
    screen = term.wait_until(lambda s: re.search(r"MariaDB 10\.\d+\.\d+\s+primary", row_of(s, mariadb.address))
                             is not None, timeout=15, what="the server's row")
    lines = screen.splitlines()
    # one server: the header names it
    assert re.match(rf"proxytop MySQL {re.escape(mariadb.address)}  MariaDB 10\.", lines[0]) and "ProxySQL" not in lines[0]
    assert lines[2].startswith("1:Servers 2:Sessions 3:Locks 4:Statements 5:Status 6:Commands 7:Replication 8:Galera 9:InnoDB 0:IOstat") and "ConnPool" not in screen
    assert "disconnected" not in screen  # no ProxySQL is looked for
    # Questions/s from two readings: proxytop's own statements at least
    term.wait_until(lambda s: re.search(r"primary\s+\S+\s+[\d.]+k?\s+\d+\s+\d+", row_of(s, mariadb.address)) is not None,
                    what="a Q/s rate")
    term.send("M")
    term.wait_for("only the MySQL servers are watched: no ProxySQL was named")
    term.go("InnoDB")
    term.wait_until(lambda s: "CkptAge" in s and mariadb.address in s, what="the InnoDB screen of the half")
    term.send("q")
    assert term.wait_exit(5) == 0


def test_a_proxysql_screen_is_refused_when_only_mysql_is_named(mariadb):
    result = subprocess.run(list(proxytop_command()) + mysql_args(mariadb) + ["--batch", "--screen", "connpool"],
                            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert "--screen connpool is a ProxySQL screen" in result.stderr and len(result.stderr.splitlines()) == 1


def test_batch_all_offers_the_mysql_screens_alone(mariadb):
    result = subprocess.run(list(proxytop_command()) + mysql_args(mariadb)
                            + ["--batch", "--count", "2", "-d", "1", "--screen", "all", "--format", "json"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert {r["screen"] for r in reports} == {"servers", "sessions", "locks", "statements", "status", "commands",
                                              "replication", "galera", "innodb", "iostat", "trends", "events"}
    servers = [r for r in reports if r["screen"] == "servers"][-1]
    row = next(r for r in servers["rows"] if r["server"] == mariadb.address)
    assert row["version"].startswith("MariaDB 10.") and row["role"] == "primary"
    assert row["uptime"] > 0 and row["connected"] >= 1 and row["qps"] is not None


def test_a_server_stopped_mid_run_stays_on_its_row_with_the_reason(proxytop_term, mariadb):
    others = [MariaDBServer(name=f"servers-{n}").start() for n in (2, 3)]
    try:
        doomed = others[1]
        term = proxytop_term(*mysql_args(mariadb, *others), "-d", "1", cols=200, rows=24)
        term.wait_until(lambda s: all("primary" in row_of(s, server.address) for server in [mariadb] + others),
                        timeout=20, what="three servers up")
        doomed.process.kill()  # no clean shutdown: its connection just breaks
        doomed.process.wait(10)
        # the connection lost, then refused when tried again
        screen = term.wait_until(lambda s: re.search(r"DOWN\s+down, retrying (in \d+s|now): connection refused",
                                                     row_of(s, doomed.address)) is not None,
                                 timeout=20, what="the stopped server's row")
        assert "1 of 3 server(s) down" in screen and "1 down" in screen.splitlines()[0]
        for server in (mariadb, others[0]):
            assert "primary" in row_of(screen, server.address)
        term.send("q")
        assert term.wait_exit(5) == 0
    finally:
        for server in others:
            server.stop()


def test_a_read_only_server_says_so(proxytop_term):
    server = MariaDBServer({"read_only": "ON"}, name="servers-ro").start()
    try:
        term = proxytop_term(*mysql_args(server), cols=160, rows=20)
        term.wait_until(lambda s: "read-only" in row_of(s, server.address), timeout=15, what="read-only")
        term.send("c")
        term.wait_for("This server replicates from no source")
    finally:
        server.stop()


def test_m_on_a_backend_row_opens_its_server_and_m_comes_back(proxytop_term, proxysql_double, mariadb):
    term = proxytop_term("-P", str(proxysql_double.port), *mysql_args(mariadb), cols=200, rows=30)
    term.wait_for("127.0.0.1:3313")
    term.send(DOWN)
    term.send(DOWN)  # 127.0.0.1:3313 (10: 3311, then 20: 3312, 3313)
    term.send("M")  # its server, which the Servers screen lists after its first discovery reading
    screen = term.wait_until(lambda s: s.startswith("proxytop 4 MySQL servers") and "1:Servers" in s,
                             what="the Servers screen")
    assert "through ProxySQL 127.0.0.1:" in screen.splitlines()[0]
    term.send("c")
    term.wait_for("Replication of 127.0.0.1:3313")  # the cursor was put on that server
    term.send("M")  # back where it was: ConnPool
    term.wait_until(lambda s: s.splitlines()[2].startswith("1:ConnPool") and "hostgroup 20 total" in s,
                    what="ConnPool again")


def test_m_on_a_digest_opens_the_servers_of_its_hostgroups(proxytop_term, proxysql_double, mariadb):
    term = proxytop_term("-P", str(proxysql_double.port), *mysql_args(mariadb), "--screen", "queries",
                         cols=200, rows=30)
    term.wait_until(lambda s: "SELECT c FROM sbtest1" in s, timeout=20, what="the digests")
    term.send("M")  # on the first digest
    screen = term.wait_until(lambda s: s.splitlines()[2].startswith("1:Servers")
                             and re.search(r"hostgroups? [\d,]+: 127\.0\.0\.1:33\d\d", " ".join(s.split())),
                             timeout=20, what="the Servers screen and the hostgroup's servers named")
    term.send("M")
    term.wait_until(lambda s: s.splitlines()[2].startswith("1:ConnPool") and "Queries" in s, what="Queries again")


def test_h_and_p_pointed_at_a_mysql_server_show_its_mysql_screens(proxytop_term, mariadb):
    """-H/-P name a MariaDB server, not a ProxySQL admin interface: proxytop says what it found
    and watches it as if --mysql had named it, with the credentials given for it (-u, -p)."""
    term = proxytop_term("-H", mariadb.host, "-P", str(mariadb.port), "-u", mariadb.user, "-p", mariadb.password,
                         "-d", "1", cols=200, rows=24)
    screen = term.wait_until(lambda s: re.search(r"MariaDB 10\.\d+\.\d+\s+primary", row_of(s, mariadb.address))
                             is not None, timeout=20, what="the server's row on the Servers screen")
    lines = screen.splitlines()
    assert re.match(rf"proxytop MySQL {re.escape(mariadb.address)}  MariaDB 10\.", lines[0]), lines[0]
    assert lines[2].startswith("1:Servers 2:Sessions") and "ConnPool" not in screen
    assert f"{mariadb.address} is a MySQL server, not a ProxySQL admin interface (10." in " ".join(screen.split())
    assert "disconnected" not in screen and "through ProxySQL" not in screen
    term.send("M")
    term.wait_for("only the MySQL servers are watched: -H/-P named a MySQL server")
    term.send("q")
    assert term.wait_exit(5) == 0


def test_batch_pointed_at_a_mysql_server_says_how_to_watch_it(mariadb):
    result = subprocess.run(list(proxytop_command()) + ["-H", mariadb.host, "-P", str(mariadb.port), "-u", mariadb.user,
                                                        "-p", mariadb.password, "--batch", "--count", "1"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    assert "not a ProxySQL admin interface (server says" in result.stderr
    assert "to watch this MySQL server, use --mysql HOST[:PORT]" in result.stderr


def test_channels_are_read_by_name_from_mysql_8s_show_replica_status():
    """MySQL 8.0.22+ names the fields Replica_/Source_ (MySQL doc "SHOW REPLICA STATUS
    Statement"): a shape written from the documentation, no MySQL 8 runs here."""
    table = Table(("Replica_IO_State", "Source_Host", "Source_Port", "Replica_IO_Running", "Replica_SQL_Running",
                   "Seconds_Behind_Source", "Last_IO_Errno", "Last_IO_Error", "Last_SQL_Errno", "Last_SQL_Error",
                   "Channel_Name"),
                  (("Waiting for source to send event", "10.0.0.1", "3306", "Yes", "Yes", "42", "0", "", "0", "",
                    "europe"),))
    channel = channels_from(table)[0]
    assert (channel.name, channel.source, channel.io_running, channel.sql_running, channel.lag) == \
        ("europe", "10.0.0.1:3306", "Yes", "Yes", 42)
    reading = ServerReading({}, {"read_only": "ON"}, (channel,))
    assert role(reading) == "replica" and replication_text(reading) == "Yes/Yes"
    stopped = Channel("", "db1:3306", "Yes", "No", None, sql_errno=1062, sql_error="Duplicate entry '1'")
    assert channel_problems((stopped,)) == ["SQL error 1062: Duplicate entry '1'"]
