"""The header's rows of the global status and the connection pool read with one query when both
are due (collectors.folded): the figures stay those of two separate readings.

The engine runs on this thread with a fake clock (tests.benchmark.Stepper), against the
ProxySQL admin test double, whose tables are changed so that every reading brings known
numbers: Questions grows by 1,000 and one backend's Queries by 500 per reading of its table.
"""
from __future__ import annotations

import contextlib
import re
import time

import pymysql
import pytest

from proxytop.core import Table
from proxytop.polling.connection import Folding
from proxytop.collectors.proxysql import ConnectionPool, HeaderStatus
from proxytop.ui import view
from tests.benchmark import Stepper
from tests.proxysql_double import ProxySQLDouble, Recording

POOL = "select * from stats_mysql_connection_pool"
COMBINED = "select 'pool', count(*), group_concat(\"hostgroup\""  # the pool's part of a combined query


def counting(column_name, key_column, key, step):
    """A transform that sets ``column_name`` of the row whose ``key_column`` is ``key`` to
    ``step`` times the number of readings of the table so far."""
    readings = [0]

    def transform(columns, rows):
        readings[0] += 1
        at, by = columns.index(column_name), columns.index(key_column)
        rows = [list(r) for r in rows]
        for row in rows:
            if str(row[by]) == key:
                row[at] = str(step * readings[0])
        return columns, rows

    return transform


@pytest.fixture
def counted_double():
    double = ProxySQLDouble(recording=Recording.load("2.7"))
    double.transforms["stats_mysql_global"] = counting("Variable_Value", "Variable_Name", "Questions", 1000)
    double.transforms["stats_mysql_connection_pool"] = counting("Queries", "srv_port", "3311", 500)
    double.start()
    yield double
    double.stop()


def test_one_query_serves_the_header_and_the_pool_with_the_same_figures(counted_double):
    stepper = Stepper(["-P", str(counted_double.port), "--screen", "connpool", "-d", "1", "--no-discover"])
    try:
        stepper.connect()
        for _ in range(5):
            *_, lines = stepper.cycle()
        text = view.screen_text(lines)
        sent = counted_double.queries("admin")
        combined = [q for q in sent if q.startswith(COMBINED)]
        # the first batch learns the pool's columns with two plain queries; every later one sends one
        assert sent.count(HeaderStatus().sql()) == 1 and sent.count(POOL) == 1
        assert len(combined) == 4
        # 1,000 questions and 500 queries a reading, one reading a second of the fake clock
        assert re.search(r"Q/s 1.0k\b", text), text
        row = next(line for line in text.splitlines() if "127.0.0.1:3311" in line)
        assert " 500 " in row, row
        engine = stepper.engine
        header, pool = engine.latest(HeaderStatus.name), engine.latest(ConnectionPool.name)
        assert header.taken_at == pool.taken_at  # the pool's part stamped with the query that read it
        before = engine.last_two(HeaderStatus.name)[0]
        assert int(header.data["Questions"]) - int(before.data["Questions"]) == 1000 and len(pool.data.rows) == 3
    finally:
        stepper.close()


@contextlib.contextmanager
def connpool_after_three_batches(transform, table="stats_mysql_connection_pool"):
    """(the double, the stepper) of ConnPool three batches in, the double's ``table``
    answering through ``transform``."""
    double = ProxySQLDouble(recording=Recording.load("2.7"))
    double.transforms[table] = transform
    double.start()
    stepper = Stepper(["-P", str(double.port), "--screen", "connpool", "-d", "1", "--no-discover"])
    try:
        stepper.connect()
        for _ in range(3):
            stepper.cycle()
        yield double, stepper
    finally:
        stepper.close()
        double.stop()


def test_the_pool_read_in_one_concatenated_row_is_the_table_select_star_gives():
    first = []

    def frozen(columns, rows):  # every reading answers the first frame: the two reads compare
        if not first:
            first.append((columns, [list(r) for r in rows]))
        return first[0]

    with connpool_after_three_batches(frozen) as (double, stepper):
        assert sum(q.startswith(COMBINED) for q in double.queries("admin")) == 2  # the batches after the first
        pool = stepper.engine.latest(ConnectionPool.name).data
        assert pool == stepper.handles["proxysql"].query(POOL) and len(pool.rows) == 3


def test_a_null_in_the_pool_has_it_read_by_itself_for_that_reading():
    """A NULL makes its row's joined values NULL, which group_concat leaves out: the
    pool is read by itself in that batch, and its rows are the plain query's."""
    def null_latency(columns, rows):
        rows = [list(r) for r in rows]
        rows[1][columns.index("Latency_us")] = None
        return columns, rows

    with connpool_after_three_batches(null_latency) as (double, stepper):
        sent = double.queries("admin")
        combined = [i for i, q in enumerate(sent) if q.startswith(COMBINED)]
        assert len(combined) == 2 and all(sent[i + 1] == POOL for i in combined), sent
        pool = stepper.engine.latest(ConnectionPool.name).data
        assert pool.rows[1][pool.columns.index("Latency_us")] is None and len(pool.rows) == 3
        assert pool.columns == stepper.handles["proxysql"].query(POOL).columns


@pytest.mark.parametrize("odd_value", ["1,5", None])
def test_a_header_value_that_does_not_split_has_the_header_read_by_itself(odd_value):
    """The header's values come joined by commas too: one with a comma (or a NULL, which
    group_concat leaves out) would shift the values after it, so the header's rows are read by
    themselves in that batch, and the header is what the plain query gives."""
    def odd(columns, rows):
        rows = [list(r) for r in rows]
        name_at, value_at = columns.index("Variable_Name"), columns.index("Variable_Value")
        for row in rows:
            if row[name_at] == "Active_Transactions":
                row[value_at] = odd_value
        return columns, rows

    with connpool_after_three_batches(odd, "stats_mysql_global") as (double, stepper):
        sent = double.queries("admin")
        combined = [i for i, q in enumerate(sent) if q.startswith(COMBINED)]
        assert len(combined) == 2 and all(sent[i + 1] == HeaderStatus().sql() for i in combined), sent
        header = stepper.engine.latest(HeaderStatus.name).data
        assert set(header) == set(HeaderStatus.variables) and header["Active_Transactions"] == odd_value
        assert header["Questions"].isdigit()
        assert len(stepper.engine.latest(ConnectionPool.name).data.rows) == 3  # the pool from the combined query


def test_the_pool_alone_is_read_plainly_when_the_header_is_not_due(counted_double):
    """On a screen that doesn't show the pool, the header alarm reads it every 2 s while the
    header reads every second: the header's query never carries the pool when it isn't due."""
    stepper = Stepper(["-P", str(counted_double.port), "--screen", "comcount", "-d", "1", "--no-discover"])
    try:
        stepper.connect()
        for _ in range(6):
            stepper.cycle()
        sent = counted_double.queries("admin")
        combined = [q for q in sent if q.startswith(COMBINED)]
        narrow = sent.count(HeaderStatus().sql())
        # six batches of the header, three of the pool (every other second), one plain of each first
        assert len(combined) + sent.count(POOL) == 3 and len(combined) + narrow == 6
        assert len(combined) == 2
    finally:
        stepper.close()


class RefusingSession:
    """A connection to a ProxySQL whose admin interface refuses the combined query."""

    def __init__(self):
        self.folding = Folding()
        self.sent = []

    def query(self, sql):
        self.sent.append(sql)
        if "union all" in sql:
            raise RuntimeError("ProxySQL Admin Error: near \"union\": syntax error")
        if "stats_mysql_global" in sql:
            return Table(("Variable_Name", "Variable_Value"), (("Questions", "7"),))
        return Table(("hostgroup", "srv_host", "srv_port", "status"), (("10", "db1", "3306", "ONLINE"),))


def test_a_refused_combined_query_leaves_two_plain_queries_from_then_on():
    session, header, pool = RefusingSession(), HeaderStatus(), ConnectionPool()
    for _ in range(3):
        session.folding.plan([header.name, pool.name])
        assert header.collect(session) == {"Questions": "7"}
        assert pool.collect(session).rows == (("10", "db1", "3306", "ONLINE"),)
    assert [sql.startswith(COMBINED) for sql in session.sent] == [False, False, True, False, False, False, False]


class LockedOnceSession(RefusingSession):
    """A ProxySQL whose admin database is locked for the first combined query only."""

    def query(self, sql):
        if sql.startswith(COMBINED) and not any(q.startswith(COMBINED) for q in self.sent):
            self.sent.append(sql)
            raise pymysql.err.OperationalError(1205, "database is locked")
        if sql.startswith(COMBINED):
            self.sent.append(sql)
            return Table(("kind", "n", "joined"), (("pool", "1", "10,db1,3306,ONLINE"), ("header", "1", "Questions,7")))
        return super().query(sql)


def test_a_locked_admin_database_fails_the_reading_and_keeps_the_combined_query():
    """"database is locked" (1205) says nothing of the query: that reading fails as any
    reading does, and the next batch combines the two again."""
    session, header, pool = LockedOnceSession(), HeaderStatus(), ConnectionPool()
    session.folding.plan([header.name, pool.name])
    header.collect(session), pool.collect(session)  # the first batch: plain, the pool's columns learnt
    session.folding.plan([header.name, pool.name])
    with pytest.raises(pymysql.err.OperationalError):
        header.collect(session)
    for _ in range(2):
        session.folding.plan([header.name, pool.name])
        assert header.collect(session) == {"Questions": "7"}
        assert pool.collect(session).rows == (("10", "db1", "3306", "ONLINE"),)
    assert not session.folding.refused
    assert [sql.startswith(COMBINED) for sql in session.sent] == [False, False, True, True, True]


def test_after_a_screen_switch_the_header_and_the_pool_are_read_together(proxytop_term, proxysql_double):
    """Back on ConnPool from GloStat (where the header reads the whole global status and the
    pool keeps the header alarm's 2 s pace), the header's narrow reading starts anew: the two
    share their batches again (one query, one wake-up and one frame a second), not a fraction
    of a second apart for good."""
    term = proxytop_term("-P", str(proxysql_double.port), "--screen", "glostat", "-d", "1", cols=140, rows=36)
    term.wait_until(lambda s: "Per second" in s and "data " in s, what="GloStat's rates")
    time.sleep(1.3)  # the pool's alarm reading a moment before or after the switch, as it happens
    term.send("1")
    term.wait_until(lambda s: "Queries/s" in s, what="ConnPool")
    start = len(proxysql_double.queries("admin"))

    def combined():
        return [i for i, q in enumerate(proxysql_double.queries("admin")[start:]) if q.startswith(COMBINED)]

    term.wait_until(lambda s: len(combined()) >= 3, timeout=20, what="three combined readings")
    since = proxysql_double.queries("admin")[start:][combined()[0]:]
    assert HeaderStatus().sql() not in since and POOL not in since, since
    assert "Traceback" not in term.text()
