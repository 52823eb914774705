"""The Replication screen behind the ProxySQL double: a real MariaDB primary and replica (started
here, shared by the module) listed in the double's runtime_mysql_servers with a
max_replication_lag, and monitor.mysql_server_replication_lag_log rows this test writes, in
the shape of ProxySQL's source (see tests/proxysql_double.py): they are not a real ProxySQL's
checks. The replica's own lag is real (MASTER_DELAY makes it grow)."""
from __future__ import annotations

import re
import time
from typing import List

import pytest

from tests.mariadb import start_or_skip
from tests.test_replication import REPL_PASSWORD, REPL_USER, caught_up, change_master, running, unlogged, wait
from tests.test_servers import row_of

READER = 20


@pytest.fixture(scope="module")
def pair():
    """A primary and one replica (GTID), each on a free port."""
    servers = []
    try:
        for n, name in enumerate(("pxrepl-primary", "pxrepl-replica"), start=1):
            servers.append(start_or_skip({"server_id": str(n), "gtid_domain_id": str(n - 1)}, name=name))
        primary, replica = servers
        unlogged(primary, f"CREATE USER '{REPL_USER}'@'%' IDENTIFIED BY '{REPL_PASSWORD}'",
                 f"GRANT REPLICATION SLAVE ON *.* TO '{REPL_USER}'@'%'")
        change_master(replica, primary)
        primary.query("CREATE DATABASE px")
        primary.query("CREATE TABLE px.t (id INT PRIMARY KEY)")
        wait(lambda: running(replica), what="the replica running")
        wait(lambda: caught_up(primary, replica), what="the replica to catch up")
        yield primary, replica
    finally:
        for server in servers:
            server.stop()


def behind(double, primary, replica, max_lag: int) -> List[list]:
    """The double lists the primary (writer hostgroup 10) and the replica (reader hostgroup 20,
    max_replication_lag ``max_lag``); returns the replica's lag log, which the test fills."""
    def servers(columns, rows):
        template = dict(zip(columns, rows[0]))
        made = []
        for hostgroup, server, limit in ((10, primary, 0), (READER, replica, max_lag)):
            row = dict(template, hostgroup_id=str(hostgroup), hostname=server.host, port=str(server.port),
                       status="ONLINE", max_replication_lag=str(limit))
            made.append([row[c] for c in columns])
        return columns, made

    checks: List[list] = []
    double.transforms["runtime_mysql_servers"] = servers
    double.transforms["mysql_server_replication_lag_log"] = lambda columns, rows: (columns, rows + list(checks))
    return checks


def check(replica, lag, seconds_ago: float = 0.5) -> list:
    """A row of ProxySQL's lag log: hostname, port, time_start_us, success_time_us, repl_lag, error."""
    return [replica.host, replica.port, int((time.time() - seconds_ago) * 1e6), 700, lag, None]


def start(proxytop_term, double, primary):
    return proxytop_term("-P", str(double.port), "--mysql-user", primary.user, "--mysql-password", primary.password,
                         "-d", "1", "--screen", "replication", cols=400, rows=24)


def alarm_of(screen: str) -> str:
    return next((line for line in screen.splitlines()[:6] if line.startswith("! ")), "")


def test_agreeing_lags_show_hostgroup_max_replication_lag_and_both_lags(pair, proxytop_term, proxysql_double):
    primary, replica = pair
    checks = behind(proxysql_double, primary, replica, max_lag=30)
    checks += [check(replica, 0, 10.5), check(replica, 0)]
    term = start(proxytop_term, proxysql_double, primary)
    # Server, Channel, Source, IO, SQL, Lag 0, trend, Relay, SQL<IO, Trx<IO, HG/Status, MaxLag, PxLag
    shape = re.compile(rf"\(default\)\s+{re.escape(primary.address)}\s+Yes\s+Yes\s+0s?\s.*\b{READER} ONLINE\s+30s?\s+0s?\b")
    screen = term.wait_until(lambda s: shape.search(row_of(s, replica.address)) is not None, timeout=30,
                             what="the replica's row with ProxySQL's view")
    row = row_of(screen, replica.address)
    assert "ProxySQL" not in row, row  # they agree: nothing to say
    assert "lag" not in alarm_of(screen)
    term.send("q")
    assert term.wait_exit(5) == 0


def test_proxysql_lag_stuck_at_null_or_far_from_the_replicas_is_said(pair, proxytop_term, proxysql_double):
    primary, replica = pair
    checks = behind(proxysql_double, primary, replica, max_lag=30)
    checks.append(check(replica, None))  # the monitor user without SLAVE MONITOR: no number
    term = start(proxytop_term, proxysql_double, primary)
    screen = term.wait_until(lambda s: "ProxySQL measures no lag (NULL)" in row_of(s, replica.address), timeout=30,
                             what="the NULL lag said on the row")
    row = row_of(screen, replica.address)
    assert re.search(rf"\b{READER} ONLINE\s+30s?\s+NULL\s", row), row
    assert "while the replica says 0 s: its monitor user may lack REPLICATION CLIENT (MySQL) / SLAVE MONITOR" in row
    checks.append(check(replica, 60))  # a number far from the replica's own 0
    screen = term.wait_until(lambda s: "ProxySQL measured 60 s" in row_of(s, replica.address), timeout=15,
                             what="the far lag said on the row")
    row = row_of(screen, replica.address)
    # (the replica's own lag is 0 s, or 1 s on a busy machine: what is said is that 60 s is far from it)
    assert re.search(r"ProxySQL measured 60 s \d+ s ago, the replica says [01] s: more than the \d+ s between them",
                     row), row
    term.send("q")
    assert term.wait_exit(5) == 0


def test_a_lag_heading_past_max_replication_lag_is_the_header_alarm(pair, proxytop_term, proxysql_double):
    primary, replica = pair
    behind(proxysql_double, primary, replica, max_lag=3)
    replica.query("STOP SLAVE")
    replica.query("CHANGE MASTER TO MASTER_DELAY = 12")
    replica.query("START SLAVE")
    try:
        wait(lambda: running(replica), what="the delayed replica running")
        term = start(proxytop_term, proxysql_double, primary)
        term.wait_until(lambda s: re.search(rf"\b{READER} ONLINE\s+3s?\s", row_of(s, replica.address)) is not None,
                        timeout=30, what="the replica's row with max_replication_lag 3")
        primary.query("INSERT INTO px.t VALUES (1)")  # held back 12 s: the replica's lag grows past 3
        screen = term.wait_until(
            lambda s: re.search(rf"! .*{re.escape(replica.address)} lag \d+ s (of 3 s, rising|past "
                                r"max_replication_lag 3 s)", alarm_of(s)) is not None,
            timeout=30, what="the lag alarm")
        assert replica.address in alarm_of(screen)
        term.send("q")
        assert term.wait_exit(5) == 0
    finally:
        replica.query("STOP SLAVE")
        replica.query("CHANGE MASTER TO MASTER_DELAY = 0")
        replica.query("START SLAVE")
    wait(lambda: running(replica) and caught_up(primary, replica), timeout=30, what="the replica caught up")
