"""The digest read by its collector from the ProxySQL admin double, reading after reading:
each row's rate follows the reset rules (a reset row, ProxySQL's first_seen jitter, rows
affected going down, a NULL counter, a new digest), and what the collector keeps of older
readings gives every digest's figures."""
from __future__ import annotations

import dataclasses

import pytest

from proxytop.collectors.digest import QueryDigest
from proxytop.metrics import digests
from proxytop.polling.connection import Endpoint, open_admin
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
        if hasattr(self, "fixed"):  # these rows, whatever the reading
            return list(DIGEST_COLUMNS), [list(r) for r in self.fixed]
        rows = reading_rows(self.reading)
        if hasattr(self, "odd"):  # one changed row's rows sent, as given
            rows[13][DIGEST_COLUMNS.index("sum_rows_sent")] = self.odd
        return list(DIGEST_COLUMNS), rows


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


def readings_of(served, count: int = 8):
    """The collector's readings 1..count, parsed."""
    session, readings = served
    collector = QueryDigest()
    parsed = []
    for reading in range(1, count + 1):
        readings.reading = reading
        parsed.append(dataclasses.replace(collector.collect(session), wall_time=FIRST_SEEN + 5.0 * reading))
    return parsed


def key(n: int, username: str = "") -> digests.RowKey:
    values = row(n, 1)
    return (values["hostgroup"], "shop", username or values["username"], "", values["digest"])


def test_each_rows_rate_follows_the_reset_rules(served):
    parsed = readings_of(served)
    changes = [digests.deltas(before, now) for before, now in zip(parsed, parsed[1:])]  # from reading 2 on
    assert changes[0][key(1)] == (3, 700, 3, 3)  # runs a little: 3 queries, 700 µs each interval
    assert changes[0][key(0)] == (0, 0, 0, 0)  # never runs: a rate of 0, not None
    assert key(5) not in changes[0] and key(5) in changes[1]  # reset at reading 2: no rate, then again
    assert changes[0][key(9)] == (0, 0, 0, 0)  # first_seen moved by ProxySQL's jitter: the same row, idle
    assert changes[1][key(8)] == (6, 1400, 0, 6)  # runs a lot: 6 queries, 1,400 µs each interval
    assert key(11) not in changes[2] and key(11) not in changes[3]  # a NULL sum_time: no rate on either side
    new = ("10", "shop", "app9", "", "0x00000000000000FF")
    assert changes[4][new] == (6, 5000, 0, 0) and changes[5][new] == (1, 0, 0, 0)  # new in the interval: all its counts
    assert [digests.resets(b, n) for b, n in zip(parsed, parsed[1:])] == [1, 0, 0, 0, 0, 0, 0]
    assert not any(digests.mass_reset(b, n) for b, n in zip(parsed, parsed[1:]))


def test_readings_shrunk_for_the_history_keep_every_digests_figures(served):
    """What the collector keeps of older readings gives each digest's sum_time and first_seen
    as the rows read, across the jitter, the NULL, the reset and the new digest."""
    session, readings = served
    collector = QueryDigest()
    for reading in range(1, 9):
        readings.reading = reading
        reference = collector.collect(session)
        kept = collector.shrink(reference)
        for row_key, entry in reference.entries.items():
            assert kept.get(row_key[4]) == (entry[digests.SUM_TIME] or 0, entry[digests.FIRST]), (reading, row_key)
        assert len(kept.digests) == len(reference.texts)


@pytest.mark.parametrize("text, shown", [("SELECT a FROM t WHERE id=?", "SELECT a FROM t WHERE id=?"),
                                         ("SELECT a\n  FROM t\tWHERE id=?", "SELECT a FROM t WHERE id=?")])
def test_the_table_shows_each_digest_text_on_one_line(text, shown):
    rows = [[None if v is None else str(v) for v in (row(n, 1)[c] for c in DIGEST_COLUMNS)] for n in range(3)]
    rows[1][DIGEST_COLUMNS.index("digest_text")] = text
    reading = digests.parse(DIGEST_COLUMNS, rows, 1.0)
    assert sorted(r["text"] for r in digests.digest_rows(None, reading, None)) == sorted([rows[0][5], shown, rows[2][5]])
