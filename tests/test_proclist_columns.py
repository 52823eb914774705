"""ProcList's rows built from the processlist the collector reads are the rows the row-by-row
path built, in the same order: on generated sessions served by the ProxySQL admin double, with
NULLs, queries too long for a one-byte length, non-numeric times and ids, non-UTF-8 text and
the PostgreSQL column set."""
from __future__ import annotations

from collections import Counter
from itertools import product
from operator import itemgetter
from typing import Any, List

import pytest

from proxytop.core import Table
from proxytop.collectors.proxysql_stats import ProcessList
from proxytop.polling.connection import Endpoint, admin_statement, open_admin, run_query
from proxytop.screens.filters import parse
from proxytop.screens.table import TableState, sort_rows
from screens.proclist import IDLE, ProcListScreen, session_rows, summary
from tests.benchmark import Generated
from tests.proxysql_double import ProxySQLDouble, Recording

TABLE = "stats_mysql_processlist"
SQL = f"select * from {TABLE}"
PGSQL_COLUMNS = ["ThreadID", "SessionID", "user", "database", "cli_host", "cli_port", "hostgroup", "l_srv_host",
                 "l_srv_port", "srv_host", "srv_port", "backend_pid", "backend_state", "command", "time_ms", "info",
                 "status_flags", "extended_info"]


def _int(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def reference_rows(table: Table, show_idle: bool = False) -> List[dict]:
    """The rows as the row-by-row path built them (every value from the row tuple)."""
    at = {name: i for i, name in enumerate(table.columns)}
    if "database" in at:
        at.setdefault("db", at["database"])
    pick = itemgetter(*(at.get(name, len(table.columns)) for name in (
        "SessionID", "user", "db", "cli_host", "cli_port", "hostgroup", "srv_host", "srv_port", "command", "time_ms",
        "info")))
    rows = []
    for raw in table.rows:
        sid, user, db, cli_host, cli_port, hostgroup, srv_host, srv_port, command, time_ms, info = pick(raw + (None,))
        if command == IDLE and not show_idle:
            continue
        rows.append({
            "_id": _int(sid), "id": _int(sid), "user": user, "db": db,
            "client": (f"{cli_host}:{cli_port}" if cli_port else cli_host) if cli_host else None,
            "hostgroup": _int(hostgroup),
            "backend": (f"{srv_host}:{srv_port}" if srv_port and srv_port != "0" else srv_host) if srv_host else None,
            "command": command, "time_ms": _int(time_ms), "info": info, "_raw": raw, "_columns": tuple(table.columns),
        })
    return rows


def generated(count: int):
    """Sessions as the benchmark generates them, with the awkward values real proxies send."""
    def transform(columns, rows):
        columns, rows = Generated(count, 10, 40).processlist(columns, rows)
        rows = [list(r) for r in rows]
        at = {name: i for i, name in enumerate(columns)}
        rows[3][at["info"]] = "SELECT /* " + "x" * 70_000 + " */ 1"  # a three-byte length
        rows[5][at["info"]] = "UPDATE t SET c = '" + "y" * 300 + "'"  # a two-byte length
        rows[7][at["time_ms"]] = None
        rows[8][at["hostgroup"]] = None
        rows[10][at["user"]] = "caf\xe9".encode("latin-1")  # not UTF-8
        rows[11][at["time_ms"]] = rows[12][at["time_ms"]]  # a tie: the session id decides
        rows[13][at["db"]] = ""
        return columns, rows
    return transform


@pytest.fixture(scope="module")
def served():
    double = ProxySQLDouble(recording=Recording.load("2.7"))
    double.start()
    session = open_admin(Endpoint(port=double.port, user="admin", password="admin", timeout=30))
    yield session, double
    session.conn.close()
    double.stop()


def both(served, transform):
    """The processlist as the collector reads it and as a plain query reads it."""
    session, double = served
    frozen = []

    def once(columns, rows):  # the same reading for both reads
        if not frozen:
            frozen.append(transform(columns, rows))
        return frozen[0]
    double.transforms[TABLE] = once
    columns = ProcessList().collect(session)
    rows = run_query(session.conn, admin_statement(SQL))  # as proxytop sends any statement
    assert columns == rows
    return columns, rows


@pytest.mark.parametrize("show_idle", [False, True])
def test_rows_from_columns_are_the_row_by_row_rows(served, show_idle):
    columns, rows = both(served, generated(600))
    expected = reference_rows(rows, show_idle)
    assert len(expected) == (600 if show_idle else 480)
    assert session_rows(columns, show_idle) == expected
    assert session_rows(rows, show_idle) == expected  # a replayed reading is a plain Table
    assert summary(columns) == summary(rows) == (Counter(r[11] for r in rows.rows),
                                                 Counter(_int(r[6]) for r in rows.rows))


@pytest.mark.parametrize("key, descending", list(product(("time_ms", "id", "hostgroup"), (True, False))))
def test_sorted_on_columns_in_the_row_by_row_order(served, key, descending):
    columns, rows = both(served, generated(600))
    screen = ProcListScreen()
    arranged = screen.arrange(session_rows(columns), TableState(sort_key=key, descending=descending))
    expected = sort_rows(reference_rows(rows), key, descending, ("id",))
    assert [r["_id"] for r in arranged] == [r["_id"] for r in expected]
    assert arranged[:40] == expected[:40]


@pytest.mark.parametrize("text", ["app3", "user:app3", "time>60s", "sbtest7", "hg=2"])
def test_filtered_or_text_sorted_as_the_row_by_row_rows(served, text):
    columns, rows = both(served, generated(600))
    screen = ProcListScreen()
    for key in ("time_ms", "user", "info"):
        state = TableState(sort_key=key, descending=True, filter=parse(text, screen.columns))
        got = screen.arrange(session_rows(columns), state)
        expected = screen.arrange(reference_rows(rows), state)
        assert got == expected and got, (text, key)


def test_pgsql_column_set_with_backend_pid_and_state(served):
    def pgsql(_columns, _rows):
        sessions = [[str(n % 2), str(n + 1), "app", f"db{n % 3}", "10.0.0.9", str(50000 + n), "20", "10.0.0.1",
                     "6133", None if n % 4 == 3 else "10.0.0.2", None if n % 4 == 3 else "5432",
                     None if n % 4 == 3 else str(9000 + n), None if n % 4 == 3 else "active",
                     "Sleep" if n % 4 == 3 else "Query", str(n * 31 % 500), f"SELECT {n}", "0", None]
                    for n in range(60)]
        return PGSQL_COLUMNS, sessions
    columns, rows = both(served, pgsql)
    expected = reference_rows(rows)
    for row in expected:
        row["backend_pid"] = _int(row["_raw"][PGSQL_COLUMNS.index("backend_pid")])
        row["backend_state"] = row["_raw"][PGSQL_COLUMNS.index("backend_state")]
    assert session_rows(columns, extra=("backend_pid", "backend_state")) == expected
    assert {r["db"] for r in expected} == {"db0", "db1", "db2"}
