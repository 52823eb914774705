"""The Errors screen (key 9): pure rows with worked numbers, then end to end against the double
serving node 1 of the recorded 2.7.2 cluster (errors 1064, 1146, 1062, 1290; refused logins;
`reporting` at its max_connections of 5), live, in batch and for the stats user."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from proxytop.core import Snapshot, Table
from screens.errors import error_detail, errors_rows, refused_per_second, user_rows
from tests.proxysql_double import ProxySQLDouble, Recording
from tests.terminal import ENTER, ESC, proxytop_command

COLUMNS = ("hostgroup", "hostname", "port", "username", "client_address", "schemaname", "errno", "count_star",
           "first_seen", "last_seen", "last_error")


def reading(rows, at, wall):
    return Snapshot("proxysql.errors", Table(COLUMNS, tuple(tuple(r) for r in rows)), at, 0.01, wall_time=wall)


def row(errno, count, last_seen, port="3332", text="boom"):
    return ("20", "127.0.0.1", port, "sbtest", "10.0.0.1", "sbtest", str(errno), str(count), "1000", str(last_seen), text)


def test_rates_names_and_ages_worked_numbers():
    before = reading([row(1146, 10, 1990), row(1064, 4, 1500)], at=100.0, wall=2000.0)
    after = reading([row(1146, 16, 2001), row(1064, 4, 1500), row(1062, 2, 2001, port="3331")], at=102.0, wall=2002.0)
    rows = {r["errno"]: r for r in errors_rows(before, after)}
    assert rows[1146]["errors_s"] == 3.0  # (16 - 10) / 2 s
    assert rows[1064]["errors_s"] == 0.0
    assert rows[1062]["errors_s"] == 1.0  # a new row: its count over the interval
    assert rows[1146]["errno_name"] == "ER_NO_SUCH_TABLE" and rows[1062]["errno_name"] == "ER_DUP_ENTRY"
    assert rows[1146]["last_seen_age"] == 1.0 and rows[1064]["last_seen_age"] == 502.0
    assert rows[1146]["server"] == "127.0.0.1:3332" and rows[1146]["hostgroup"] == 20
    # a last_seen ahead of the clock is "now", never a negative age
    assert errors_rows(None, reading([row(1146, 1, 5000)], 1.0, 2000.0))[0]["last_seen_age"] == 0.0
    # a counter that went down (stats_mysql_errors was reset) has no rate
    reset = reading([row(1146, 2, 2003)], at=104.0, wall=2004.0)
    assert errors_rows(after, reset)[0]["errors_s"] is None


def test_first_reading_has_no_rates_and_odd_values_are_kept():
    odd = reading([("20", "127.0.0.1", "3332", "u", "c", "s", "9999", None, None, None, "caf\ufffd \ufffd")], 1.0, 10.0)
    rows = errors_rows(None, odd)
    assert rows[0]["errors_s"] is None and rows[0]["errno_name"] is None and rows[0]["last_seen_age"] is None


def test_users_fullest_first_and_refused_logins_per_second():
    users = Table(("username", "frontend_connections", "frontend_max_connections"),
                  (("sbtest", "45", "500"), ("reporting", "5", "5"), ("etl", "0", "0")))
    out = user_rows(Snapshot("proxysql.users", users, 1.0, 0.0))
    assert [(u["user"], u["used_pct"]) for u in out] == [("reporting", 100.0), ("sbtest", 9.0), ("etl", None)]
    a = Snapshot("g", {"Access_Denied_Wrong_Password": "10", "Access_Denied_Max_User_Connections": "30"}, 10.0, 0.0)
    b = Snapshot("g", {"Access_Denied_Wrong_Password": "14", "Access_Denied_Max_User_Connections": "30"}, 12.0, 0.0)
    assert refused_per_second(a, b) == {"Access_Denied_Wrong_Password": 2.0, "Access_Denied_Max_User_Connections": 0.0}


def test_detail_shows_the_whole_error_and_the_same_errno_elsewhere():
    long_text = "Table 'sbtest.no_such_table' doesn't exist " + "x" * 150
    now = reading([row(1146, 16, 2001, text=long_text), row(1146, 5, 1900, port="3333"), row(1064, 4, 1500)], 1.0, 2002.0)
    rows = errors_rows(None, now)
    detail = error_detail(rows[0], rows)
    text = "\n".join("".join(t for t, _ in line) for line in detail.lines)
    assert "ER_NO_SUCH_TABLE" in text and "x" * 150 in text.replace("\n", "")  # nothing cut off
    elsewhere = text.split("Same errno elsewhere")[1]
    assert "127.0.0.1:3333" in elsewhere and "1064" not in elsewhere


@pytest.fixture(scope="module")
def cluster():
    return Recording.load("cluster", node="127.0.0.1:6042")


def test_errors_screen_live(proxytop_term, cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=100).start()
    try:
        term = proxytop_term("-P", str(double.port), "--screen", "errors", cols=160, rows=40)
        screen = term.wait_until(lambda s: re.search(r"refused logins/s wrong password [\d.]+", s) is not None
                                 and "ER_NO_SUCH_TABLE" in s, timeout=20, what="errors with rates and refused logins")
        for name in ("ER_PARSE_ERROR", "ER_DUP_ENTRY", "ER_OPTION_PREVENTS_ST"):
            assert name in screen
        assert "sort Errors/s \u2193" in screen
        assert re.search(r"users reporting \d/5 \(\d+%\)", screen)
        assert not any("stats_mysql_errors_reset" in q for q in double.queries())
        # Enter on the first row: the whole last error and where else the errno happens
        term.send(ENTER)
        screen = term.wait_for(r"Error \d+ on 127\.0\.0\.1:\d+", timeout=10)
        assert "Last error" in screen and "first seen" in screen and "Same errno elsewhere" in screen
        term.send(ESC)
        term.wait_until(lambda s: "Errno" in s and "Last error" in s, what="the table again")
    finally:
        double.stop()


def test_the_users_line_highlights_a_user_at_its_cap(proxytop_term, cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=100).start()
    double.transforms["stats_mysql_users"] = lambda c, r: (c, [["reporting", "5", "5"], ["sbtest", "3", "500"]])
    try:
        term = proxytop_term("-P", str(double.port), "--screen", "errors", cols=160, rows=40)
        term.wait_for(r"users reporting 5/5 \(100%\)", timeout=20)
        y = next(i for i in range(40) if "users reporting" in term.line(i))
        start = term.line(y).index("5/5")
        with term._lock:
            cell = term.screen.buffer[y][start]
        assert cell.fg == "red" or cell.bold, cell  # highlighted from 90 %
    finally:
        double.stop()


def test_errors_in_batch_json(cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=100).start()
    try:
        result = subprocess.run([*proxytop_command(), "--batch", "--screen", "errors", "--format", "json", "--count", "1",
                                 "-P", str(double.port)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        record = json.loads(result.stdout.splitlines()[-1])
        assert record["screen"] == "errors" and record["sort"] == "errors_s" and record["descending"]
        names = {r["errno"]: r["errno_name"] for r in record["rows"]}
        assert names[1146] == "ER_NO_SUCH_TABLE" and names[1290] == "ER_OPTION_PREVENTS_STATEMENT"
        assert all(isinstance(r["errors_s"], (int, float)) for r in record["rows"])  # two readings: rates
        assert any(n.startswith("users reporting") for n in record["notes"])
    finally:
        double.stop()


def test_the_stats_user_reads_errors_and_users(proxytop_term, cluster):
    double = ProxySQLDouble(recording=cluster, start_frame=100).start()
    try:
        term = proxytop_term("-P", str(double.port), "-u", "stats", "-p", "stats", "--screen", "errors",
                             cols=160, rows=40)
        term.wait_until(lambda s: "ER_NO_SUCH_TABLE" in s and "users reporting" in s, timeout=20,
                        what="errors and users for the stats user")
    finally:
        double.stop()
