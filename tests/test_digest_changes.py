"""The digest's next reading, parsed from the rows whose counters changed, gives what parsing
every row gives: the interval's deltas worked out where the reading is parsed equal
digests.deltas of the rows read one by one, and the Queries screen sorted on its columns
shows the rows in the order the full rows sort in — across ties, NULL counters, resets,
counters that go down, ProxySQL's first_seen jitter and a new digest (readings from the
ProxySQL admin double)."""
from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxytop.collectors.digest import QueryDigest, parsed
from proxytop.metrics import digests
from proxytop.polling.columns import counted_decimals, decimals_to_lists, plain_decimals, query_columns
from proxytop.polling.connection import Endpoint, open_admin, run_query
from proxytop.screens import queries
from proxytop.screens.table import TableState
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


# ----- the counters of the changed rows, checked by counts alone ---------------------------------

def length_encoded(values) -> bytes:
    return b"".join(bytes((len(v),)) + v if len(v) < 251 else b"\xfc" + len(v).to_bytes(2, "little") + v
                    for v in values)


# bytes a counter could hold, weighted toward those that make a block look plain
COUNTER_BYTES = st.sampled_from(list(b"0123456789") * 6 + [0, 1, 2, 19, 20, 21, 45, 48, 57, 0xFB, 0xFF])
# 48 to 57 bytes: a length byte that is a digit ("0" to "9"), its digits split by a few small bytes
LONG_BYTES = st.sampled_from(list(b"0123456789") * 4 + [0, 1, 8, 19, 20])
COUNTER = st.one_of(st.integers(0, 2 ** 64).map(lambda n: str(n).encode()),
                    st.binary(max_size=3).map(lambda b: b"7" + b),
                    st.lists(COUNTER_BYTES, max_size=60).map(bytes),
                    st.lists(LONG_BYTES, min_size=48, max_size=57).map(bytes))
SETTINGS = dict(deadline=None, derandomize=not os.environ.get("HYPOTHESIS_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=3000, **SETTINGS)
@given(st.lists(COUNTER, max_size=12))
def test_counts_accept_a_block_exactly_when_each_value_is_a_plain_decimal(values):
    """The changed rows' counters are checked by counts alone (columns.counted_decimals): that
    accepts a block exactly when reading it value by value does (plain_decimals)."""
    block = length_encoded(values)
    strict = plain_decimals(block)
    assert counted_decimals(block, len(values)) == (strict[0] if strict is not None else None)
    digits = all((not v or v.isdigit()) and len(v) <= 20 for v in values)
    assert (strict is not None) == (bool(values) and digits)
    plain = bool(values) and digits and all(v and str(int(v)).encode() == v and int(v) < 2 ** 63 for v in values)
    assert decimals_to_lists(block, 1, len(values)) == ([[int(v) for v in values]] if plain else None)


def test_a_value_whose_length_byte_is_a_digit_is_refused():
    # 48 bytes (its length byte is "0") of 45 digits and three bytes below 21 whose values
    # (plus one each) add up to 49: the sums agree, but read by its separators it would be
    # four values, more than the count
    sneaky = b"1" * 15 + b"\x13" + b"2" * 15 + b"\x13" + b"3" * 15 + b"\x08"
    block = length_encoded([b"9", sneaky])
    assert len(sneaky) == 48 and block[2:3] == b"0"
    assert counted_decimals(block, 2) is None and plain_decimals(block) is None


ODD_COUNTERS = [("negative", "-1"), ("leading zeros", "007"), ("a fraction", "1.5"), ("empty", ""),
                ("beyond 64 bits", "99999999999999999999"), ("a length byte that is a digit", "1" * 49),
                ("text", "many"), ("a control byte", "1\x012"), ("NULL", None)]


@pytest.mark.parametrize("case, value", ODD_COUNTERS, ids=[c for c, _ in ODD_COUNTERS])
def test_an_odd_counter_in_a_changed_row_reads_as_the_rows_read(served, case, value):
    """The next reading with one changed row holding an odd counter: the collector gives what
    parsing the rows gives (read value by value), never a number made up from a misread."""
    session, readings = served
    collector = QueryDigest()
    readings.reading = 2
    first = parsed(collector.collect(session), 0.0)
    first_rows = run_query(session.conn, SQL)
    readings.reading = 3
    readings.odd = value
    try:
        table = collector.collect(session)
        rows = run_query(session.conn, SQL)
    finally:
        del readings.odd
    mine = parsed(table, 0.0)
    reference = digests.parse(rows.columns, rows.rows, mine.wall_time)
    assert mine.change is None  # not worked out from a misread
    assert [list(c) for c in mine.columns] == [list(c) for c in reference.columns]
    assert tuple(table.rows) == rows.rows
    reference_first = digests.parse(first_rows.columns, first_rows.rows, first.wall_time)
    assert deltas_as_lists(digests.deltas(first, mine)) == deltas_as_lists(digests.deltas(reference_first, reference))


def test_readings_shrunk_for_the_history_keep_every_digests_figures(served):
    """What the collector keeps of older readings (position shared while the rows are the
    same, columns shared, sum_time as differences) gives each digest's sum_time and first_seen
    as the rows read, across the jitter, the NULL, the reset and the new digest."""
    session, readings = served
    collector = QueryDigest()
    for reading in range(1, 9):
        readings.reading = reading
        table = collector.collect(session)
        rows = run_query(session.conn, SQL)
        kept = collector.shrink(table)
        reference = digests.parse(rows.columns, rows.rows, 0.0)
        for key, n in reference.index.items():
            sum_time, first = reference.entry(n)[digests.SUM_TIME], reference.entry(n)[digests.FIRST]
            kept_sum, kept_first = kept.get(key[4])
            # first_seen: within ProxySQL's jitter (an older array stands for the readings it matches)
            assert kept_sum == (sum_time or 0) and digests.first_seen_kept(first, kept_first), (reading, key)
        assert len(kept.position) == len(reference.keys)


READ_AGAIN = [  # (case, how the next reading's rows differ from the last one's), read on one connection
    ("the same rows", lambda rows: rows),
    ("the rows in another order", lambda rows: rows[::-1]),
    ("one text a byte longer", lambda rows: rows[:7] + [rows[7][:5] + [rows[7][5] + " "] + rows[7][6:]] + rows[8:]),
    ("one schema a byte shorter", lambda rows: rows[:7] + [rows[7][:1] + ["sho"] + rows[7][2:]] + rows[8:]),
    ("a NULL user", lambda rows: rows[:3] + [rows[3][:2] + [None] + rows[3][3:]] + rows[4:]),
    ("a row more", lambda rows: rows + [rows[0][:4] + ["0x00000000000000EE"] + rows[0][5:]]),
    ("a row less", lambda rows: rows[1:]),
    ("rows more in the middle", lambda rows: rows[:10] + [rows[0][:4] + ["0x00000000000000ED"] + rows[0][5:]] + rows[10:30]
     + [rows[1][:4] + ["0x00000000000000EC"] + rows[1][5:]] + rows[30:]),
    ("a row more and a row less", lambda rows: rows[:5] + [rows[0][:4] + ["0x00000000000000EB"] + rows[0][5:]]
     + rows[5:20] + rows[21:]),
]


@pytest.mark.parametrize("case, change", READ_AGAIN, ids=[c for c, _ in READ_AGAIN])
def test_rows_cut_where_the_last_result_was_cut_are_the_rows_read(served, case, change):
    """The reader cuts each row where the same row of the last result was cut, and walks the
    rows again when they are not the same rows: the columns are the row-by-row read's."""
    session, readings = served
    readings.reading = 2
    query_columns(session.conn, SQL, numeric=digests.COUNTERS)  # the cuts to follow
    served_rows = [list(r) for r in change(reading_rows(3))]
    readings.fixed = served_rows
    try:
        result = query_columns(session.conn, SQL, numeric=digests.COUNTERS)
        expected = run_query(session.conn, SQL)
    finally:
        del readings.fixed
    assert result.table() == expected
    assert result.heads_digest == digests.fingerprint([h for h in result.heads])
    assert [list(c) for c in digests.parse_columns(result, 1.0).columns] == \
        [list(c) for c in digests.parse(expected.columns, expected.rows, 1.0).columns]


@pytest.mark.parametrize("text, shown", [("SELECT a FROM t WHERE id=?", "SELECT a FROM t WHERE id=?"),
                                         ("SELECT a\n  FROM t\tWHERE id=?", "SELECT a FROM t WHERE id=?")])
def test_the_table_shows_each_digest_text_on_one_line(text, shown):
    rows = [[None if v is None else str(v) for v in (row(n, 1)[c] for c in DIGEST_COLUMNS)] for n in range(3)]
    rows[1][DIGEST_COLUMNS.index("digest_text")] = text
    reading = digests.parse(DIGEST_COLUMNS, rows, 1.0)
    frame = digests.digest_columns(None, reading, None)
    assert [frame.row(n)["text"] for n in range(3)] == [rows[0][5], shown, rows[2][5]]
    assert sorted(r["text"] for r in digests.digest_rows(None, reading, None)) == sorted([rows[0][5], shown, rows[2][5]])


# ----- new digests among the same rows: only the new rows decoded ------------------------------

def new_digest(n: int, first_seen: int, username: str = "app9", digest: str = "", text: str = "") -> list:
    values = row(n, 2)
    values.update(username=username, digest=digest or f"0x{0xA000 + n:016X}",
                  digest_text=text or f"INSERT INTO n{n} VALUES (?)", first_seen=first_seen, count_star=3,
                  sum_time=900)
    return [None if values[c] is None else str(values[c]) for c in DIGEST_COLUMNS]


def inserted(rows: list, at_rows: dict) -> list:
    """``rows`` with ``at_rows[position]`` inserted before each position (positions of ``rows``)."""
    out = []
    for n, r in enumerate(rows + [None]):
        out.extend(at_rows.get(n, []))
        if r is not None:
            out.append(r)
    return out


def just_now() -> int:
    return int(time.time()) + 2  # first seen after the previous reading: its counts are the interval's


NEW_ROWS = [  # (case, the next reading's rows from the last one's, worked out from the new rows alone)
    ("new digests at the start, in the middle and at the end",
     lambda rows: inserted(rows, {0: [new_digest(1, just_now())], 30: [new_digest(2, just_now())],
                                  len(rows): [new_digest(3, just_now())]}), True),
    ("a new digest whose text spans lines",
     lambda rows: inserted(rows, {15: [new_digest(14, just_now(), text="SELECT a\n  FROM t14\tWHERE id=?")]}), True),
    ("two new digests side by side", lambda rows: inserted(rows, {7: [new_digest(4, just_now()), new_digest(5, just_now())]}),
     True),
    ("a known digest run by another user",
     lambda rows: inserted(rows, {12: [new_digest(6, just_now(), username="app7", digest=rows[4][4], text=rows[4][5])]}), True),
    ("a new row first seen before the last reading (no figure for it)",
     lambda rows: inserted(rows, {20: [new_digest(7, FIRST_SEEN)]}), True),
    ("a known digest with another text",
     lambda rows: inserted(rows, {3: [new_digest(8, just_now(), username="app7", digest=rows[4][4], text="SELECT 1")]}),
     False),
    ("a new row and a row gone", lambda rows: inserted(rows[:10] + rows[11:], {5: [new_digest(9, just_now())]}), False),
    ("a new row and two rows swapped",
     lambda rows: inserted(rows[:2] + [rows[3], rows[2]] + rows[4:], {40: [new_digest(10, just_now())]}), False),
    ("a new row with a NULL user", lambda rows: inserted(rows, {9: [new_digest(11, just_now())[:2] + [None] +
                                                                   new_digest(11, just_now())[3:]]}), False),
    ("a new row without text", lambda rows: inserted(rows, {9: [new_digest(12, just_now())[:5] + [""] +
                                                               new_digest(12, just_now())[6:]]}), False),
    ("the same new key twice", lambda rows: inserted(rows, {9: [new_digest(13, just_now())], 19: [new_digest(13, just_now())]}),
     False),
]


def read_fixed(served, collector: QueryDigest, rows: list):
    """(the collector's reading of these rows, the same rows parsed one by one, its Table, the rows)."""
    session, readings = served
    readings.fixed = [list(r) for r in rows]
    try:
        table = collector.collect(session)
        served_rows = run_query(session.conn, SQL)
    finally:
        del readings.fixed
    mine = parsed(table, 0.0)
    return mine, digests.parse(served_rows.columns, served_rows.rows, mine.wall_time), table, served_rows


@pytest.mark.parametrize("case, change, worked_out", NEW_ROWS, ids=[c for c, _, _ in NEW_ROWS])
def test_new_digests_among_the_same_rows_read_as_the_rows_read(served, case, change, worked_out):
    """A reading with rows inserted among the last reading's rows (new digests: ProxySQL's map
    keeps its order until it grows) is worked out from the new rows alone and gives what
    parsing every row gives: keys, texts, counters and the interval's deltas; anything else
    (a row gone, another order, a NULL, another text for a known digest) is parsed whole."""
    collector = QueryDigest()
    before, reference_before, _, _ = read_fixed(served, collector, reading_rows(2))
    now, reference_now, table, served_rows = read_fixed(served, collector, change(reading_rows(3)))
    assert (now.change is not None) == worked_out
    assert now.keys == reference_now.keys and dict(now.index) == dict(reference_now.index)
    assert dict(now.texts) == dict(reference_now.texts)
    assert [list(c) for c in now.columns] == [list(c) for c in reference_now.columns]
    assert tuple(table.rows) == served_rows.rows
    assert deltas_as_lists(digests.deltas(before, now)) == \
        deltas_as_lists(digests.deltas(reference_before, reference_now))
    if worked_out:
        assert now.heaviest is not None and list(now.heaviest) == digests.heaviest_first(reference_now)
        assert now.inserted is not None and now.inserted[0]() is before
    # what the screen derives from the two readings: rows (texts on one line), alignment, resets
    digests.digest_rows(None, before, None)  # the last reading drawn: its texts made into lines
    assert digests.digest_rows(before, now, 5.0) == digests.digest_rows(reference_before, reference_now, 5.0)
    assert digests.aligned(before, now) == digests.aligned(reference_before, reference_now)
    assert digests.aligned(now, before) == digests.aligned(reference_now, reference_before)
    assert digests.resets(before, now) == digests.resets(reference_before, reference_now)


@settings(max_examples=40, **SETTINGS)
@given(st.lists(st.tuples(st.integers(0, ROWS), st.booleans()), min_size=1, max_size=6))
def test_new_digests_anywhere_read_as_the_rows_read(served, places):
    """New digests at any places, seen just now or long ago, read as parsing every row reads them."""
    collector = QueryDigest()
    added: dict = {}
    for k, (position, recent) in enumerate(places):
        added.setdefault(position, []).append(new_digest(100 + k, just_now() if recent else FIRST_SEEN))
    before, reference_before, _, _ = read_fixed(served, collector, reading_rows(2))
    now, reference_now, _, _ = read_fixed(served, collector, inserted(reading_rows(3), added))
    assert now.change is not None
    assert now.keys == reference_now.keys
    assert deltas_as_lists(digests.deltas(before, now)) == deltas_as_lists(digests.deltas(reference_before, reference_now))
