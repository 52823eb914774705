"""The digest's next reading, parsed from the rows whose counters changed, gives what parsing
every row gives: the interval's deltas worked out where the reading is parsed equal
digests.deltas of the rows read one by one, and the Queries screen sorted on its columns
shows the rows in the order the full rows sort in — across ties, NULL counters, resets,
counters that go down, ProxySQL's first_seen jitter and a new digest (readings from the
ProxySQL admin double)."""
from __future__ import annotations

import pytest

from proxytop.collectors.digest import QueryDigest, parsed
from proxytop.metrics import digests
from proxytop.polling.connection import Endpoint, open_admin, run_query
from proxytop.screens import queries
from proxytop.ui.table import TableState
from tests.proxysql_double import ProxySQLDouble, Recording
from tests.scale_digests import DIGEST_COLUMNS

DIGEST = "stats_mysql_query_digest"
SQL = f"select * from {DIGEST}"
FIRST_SEEN = 1_795_385_000
ROWS = 60


def row(n: int, reading: int) -> dict:
    """Digest n at a reading: a third never runs, a third runs a little, a third a lot; the
    lifetime sum_time of many rows ties (n % 5)."""
    pace = n % 3
    count = 10 + n % 5 + pace * 3 * reading
    return dict(hostgroup="-1" if n % 7 == 0 else str(10 * (1 + n % 2)), schemaname="shop", username=f"app{n % 4}",
                client_address="", digest=f"0x{n:016X}", digest_text=f"SELECT * FROM t{n} WHERE id=?",
                count_star=count, first_seen=FIRST_SEEN, last_seen=FIRST_SEEN + 5 * reading * (pace > 0),
                sum_time=1000 * (n % 5) + 700 * pace * reading, min_time=90, max_time=4000 + (n == 4) * reading,
                sum_rows_affected=(n % 2) * count, sum_rows_sent=count)


def reading_rows(reading: int) -> list:
    rows = []
    for n in range(ROWS):
        values = row(n, reading)
        if n == 5 and reading >= 2:  # reset: counts start again, first_seen moves to its next query
            values.update(count_star=reading - 1, sum_time=30 * (reading - 1), first_seen=FIRST_SEEN + 100)
        if n == 9 and reading == 2:  # ProxySQL's epoch conversion moves first_seen by a second
            values.update(first_seen=FIRST_SEEN + 1)
        if n == 8 and reading == 3:  # rows affected down, the rest up: rated, affected 0
            values.update(sum_rows_affected=0)
        if n == 11 and reading == 4:  # a NULL counter: this reading is read value by value
            values.update(sum_time=None)
        rows.append([None if values[c] is None else str(values[c]) for c in DIGEST_COLUMNS])
    if reading >= 6:  # a new digest: the rows before the counters are no longer the same
        rows.append(["10", "shop", "app9", "", "0x00000000000000FF", "DELETE FROM t WHERE id=?", str(reading),
                     str(FIRST_SEEN + 30), str(FIRST_SEEN + 30), "5000", "9", "900", "0", "0"])
    return rows


class Readings:
    def __init__(self):
        self.reading = 0

    def __call__(self, _columns, _rows):
        return list(DIGEST_COLUMNS), reading_rows(self.reading)


@pytest.fixture(scope="module")
def served():
    double = ProxySQLDouble(recording=Recording.load("cluster", node="127.0.0.1:6042"), start_frame=30)
    readings = Readings()
    double.transforms[DIGEST] = readings
    double.start()
    session = open_admin(Endpoint(port=double.port, user="admin", password="admin", timeout=30))
    yield session, readings
    session.conn.close()
    double.stop()


def both_ways(served, count: int = 8):
    """[(the collector's reading, the same rows parsed one by one)] for readings 1..count."""
    session, readings = served
    collector = QueryDigest()
    pairs = []
    for reading in range(1, count + 1):
        readings.reading = reading
        table = collector.collect(session)
        mine = parsed(table, 0.0)
        rows = run_query(session.conn, SQL)
        pairs.append((mine, digests.parse(rows.columns, rows.rows, mine.wall_time)))
    return pairs


def deltas_as_lists(change: digests.Deltas):
    return [list(change.rated), list(change.count), list(change.sum_time), list(change.affected), list(change.sent)]


def test_deltas_from_the_changed_rows_are_the_deltas_of_every_row(served):
    pairs = both_ways(served)
    worked_out = []
    for reading, ((before, reference_before), (now, reference_now)) in enumerate(zip(pairs, pairs[1:]), 2):
        assert now.keys == reference_now.keys
        assert [list(c) for c in now.columns] == [list(c) for c in reference_now.columns]
        if now.change is not None:
            worked_out.append(reading)
            assert now.change[0]() is before
        assert deltas_as_lists(digests.deltas(before, now)) == \
            deltas_as_lists(digests.deltas(reference_before, reference_now))
    # 4 has a NULL (read value by value), 5 follows it, 6 brings a new digest: the others
    # follow a plain reading of the same rows
    assert worked_out == [2, 3, 7, 8]
    resets = [digests.resets(b, n) for (b, _), (n, _) in zip(pairs, pairs[1:])]
    assert resets == [digests.resets(b, n) for (_, b), (_, n) in zip(pairs, pairs[1:])] and resets[0] == 1


NUMERIC = [c.key for c in queries.COLUMNS if c.numeric]


@pytest.mark.parametrize("descending", [True, False])
def test_sorted_on_columns_in_the_order_of_the_full_rows(served, descending):
    screen = queries.QueriesScreen()
    pairs = both_ways(served)
    for (before, reference_before), (now, reference_now) in zip(pairs, pairs[1:]):
        frame = digests.digest_columns(before, now, 5.0)
        full = digests.digest_rows(reference_before, reference_now, 5.0)
        for key in NUMERIC:
            state = TableState(key, descending)
            arranged = screen.arrange(queries.ShownRows(frame, frame.order), state)
            assert isinstance(arranged, queries.ShownRows)  # sorted without building every row
            expected = screen.arrange(full, state)
            assert [r["_id"] for r in arranged] == [r["_id"] for r in expected], key
            assert arranged.filled() == expected, key
