"""Property-based tests: the parsers proxytop feeds with text it does not control.

SHOW ENGINE INNODB STATUS (any server, any version, truncated or odd), /proc/diskstats (any
kernel, any line) and the filter typed after ``/`` (anything a person can type): thousands of
generated inputs, and never an exception other than the one meant for the user.
"""
from __future__ import annotations

import math
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxytop.collectors.diskstats import parse_diskstats, parse_line
from proxytop.metrics.innodb import StatusText, parse_status_text
from proxytop.metrics.iostat import DiskCounters, device_stats
from proxytop.screens.connpool import ConnPoolScreen
from proxytop.screens.proclist import ProcListScreen, filter_sessions
from proxytop.screens import filters, table

# The same inputs on every run (a CI run never fails on an input no earlier run saw); run with
# HYPOTHESIS_RANDOM=1 to explore new ones.
SETTINGS = dict(deadline=None, derandomize=not os.environ.get("HYPOTHESIS_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
DATA = os.path.join(os.path.dirname(__file__), "data")

# ----- SHOW ENGINE INNODB STATUS ------------------------------------------------------------------

SECTIONS = ("LOG", "BUFFER POOL AND MEMORY", "TRANSACTIONS", "FILE I/O", "SEMAPHORES", "ROW OPERATIONS",
            "INSERT BUFFER AND ADAPTIVE HASH INDEX", "BACKGROUND THREAD", "INDIVIDUAL BUFFER POOL INFO")
LINES = (  # what the parser looks for, and near misses
    "Log sequence number {a}", "Log sequence number {a} {b}", "Log flushed up to   {a}", "Pages flushed up to {a}",
    "Last checkpoint at  {a}", "Max checkpoint age    {a}", "Checkpoint age target {a}", "Modified age          {a}",
    "Checkpoint age        {a}", "{a} pending log flushes, {b} pending chkp writes",
    "{a} pending log writes, {b} pending chkp writes", "{a} log i/o's done, {b}.00 log i/o's/second",
    "Buffer pool size   {a}", "Free buffers       {a}", "Database pages     {a}", "Modified db pages  {a}",
    "Pending reads      {a}", "Pending writes: LRU {a}, flush list {b}, single page {c}",
    "Pending writes: LRU {a}, flush list {b}", "History list length {a}",
    "Pending flushes (fsync) log: {a}; buffer pool: {b}", "Pending flushes (fsync): {a}", "Pending flushes (fsync) {a}",
    "---BUFFER POOL {a}", "Log sequence number", "Log sequence number -{a}", "Buffer pool size {a} {b}",
    "Total large memory allocated {a}", "Trx id counter {a}",
)

numbers = st.one_of(st.integers(0, 2 ** 64), st.integers(0, 999), st.text("0123456789", min_size=1, max_size=30))
line_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


@st.composite
def status_line(draw):
    if draw(st.integers(0, 4)) == 0:
        return draw(line_text)
    template = draw(st.sampled_from(LINES))
    text = template.format(a=draw(numbers), b=draw(numbers), c=draw(numbers))
    return draw(st.sampled_from(("", "  ", "\t"))) + text + draw(st.sampled_from(("", " ", "\r")))


@st.composite
def status_document(draw):
    parts = ["", "=====================================", f"{draw(line_text)} INNODB MONITOR OUTPUT",
             "====================================="]
    for _ in range(draw(st.integers(0, 6))):
        title = draw(st.one_of(st.sampled_from(SECTIONS), line_text))
        rule = draw(st.sampled_from(("---", "--------", "===", "-", "")))
        parts += [rule, title, rule]
        parts += draw(st.lists(status_line(), max_size=12))
    if draw(st.booleans()):
        parts.append("END OF INNODB MONITOR OUTPUT")
    text = "\n".join(parts)
    cut = draw(st.integers(0, len(text)))
    return text if draw(st.booleans()) else text[:cut]  # servers truncate long outputs


def real_status_texts():
    texts = []
    for name in sorted(os.listdir(os.path.join(DATA, "innodb"))):
        with open(os.path.join(DATA, "innodb", name), encoding="utf-8", errors="replace") as handle:
            texts.append(handle.read())
    return texts


REAL_STATUS = real_status_texts()


def check_status(result: StatusText) -> None:
    assert isinstance(result, StatusText)
    for name in ("lsn", "flushed_lsn", "pages_flushed_lsn", "checkpoint_lsn", "pool_pages", "free_pages",
                 "database_pages", "modified_pages", "pending_reads", "pending_lru", "pending_flush_list",
                 "history_list_length", "pending_fsyncs"):
        value = getattr(result, name)
        assert value is None or (isinstance(value, int) and value >= 0), (name, value)
    assert result.age is None or result.age >= 0
    assert result.modified_age_computed is None or result.modified_age_computed >= 0


@settings(max_examples=900, **SETTINGS)
@given(status_document())
def test_innodb_status_parser_never_raises_on_generated_documents(text):
    check_status(parse_status_text(text))


@settings(max_examples=600, **SETTINGS)
@given(st.sampled_from(REAL_STATUS), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 40), line_text), max_size=8))
def test_innodb_status_parser_never_raises_on_damaged_real_outputs(text, edits):
    for where, cut, insert in edits:  # delete a stretch and insert something else, at random places
        at = int(where * len(text))
        text = text[:at] + insert + text[at + cut:]
    check_status(parse_status_text(text))


@settings(max_examples=300, **SETTINGS)
@given(st.integers(0, 2 ** 62), st.integers(0, 2 ** 62), st.sampled_from(("\n", "\r\n")))
def test_innodb_checkpoint_age_is_lsn_minus_checkpoint(lsn, checkpoint, newline):
    text = newline.join(["---", "LOG", "---", f"Log sequence number {lsn}", f"Last checkpoint at  {checkpoint}", ""])
    result = parse_status_text(text)
    assert (result.lsn, result.checkpoint_lsn) == (lsn, checkpoint)
    assert result.age == max(0, lsn - checkpoint)


# ----- /proc/diskstats -----------------------------------------------------------------------------

counter = st.integers(0, 2 ** 64 - 1)


@st.composite
def diskstats_line(draw):
    """A line as some kernel might print it, or something that only looks like one."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(line_text), None
    count = draw(st.sampled_from((0, 1, 3, 4, 7, 10, 11, 12, 14, 15, 16, 17, 18, 20, 25)))
    values = draw(st.lists(counter, min_size=count, max_size=count))
    name = draw(st.from_regex(r"\A(sd[a-z]{1,2}\d{0,2}|nvme\dn\d(p\d)?|dm-\d{1,3}|loop\d{1,2}|md\d|zram\d)\Z"))
    major, minor = draw(st.integers(0, 300)), draw(st.integers(0, 2 ** 20))
    space = draw(st.sampled_from((" ", "  ", "\t", "   ")))
    fields = [str(major), str(minor), name] + [str(v) for v in values]
    if kind == 1 and fields:  # one field spoiled
        at = draw(st.integers(0, len(fields) - 1))
        fields[at] = draw(st.text("x-.,0123456789abc", min_size=1, max_size=6))
        return space + space.join(fields), None
    return space + space.join(fields), (name, major, minor, values)


@settings(max_examples=1500, **SETTINGS)
@given(diskstats_line())
def test_diskstats_line_parser_reads_what_is_there_and_never_raises(case):
    line, expected = case
    parsed = parse_line(line)
    if expected is None:
        if parsed is not None:  # a spoiled field that still reads as a number is fine
            assert isinstance(parsed, DiskCounters)
        return
    name, major, minor, values = expected
    if len(values) == 4:
        assert (parsed.rd_ios, parsed.rd_sectors, parsed.wr_ios, parsed.wr_sectors) == tuple(values)
        assert parsed.fields == 4
    elif len(values) < 11:
        assert parsed is None
    else:
        assert (parsed.name, parsed.major, parsed.minor) == (name, major, minor)
        assert parsed.fields == (17 if len(values) >= 17 else 15 if len(values) >= 15 else 11)
        assert (parsed.rd_ios, parsed.rd_merges, parsed.rd_sectors, parsed.rd_ticks) == tuple(values[:4])
        assert (parsed.wr_ios, parsed.io_ticks, parsed.rq_ticks) == (values[4], values[9], values[10])
        assert parsed.fl_ticks == (values[16] if len(values) >= 17 else None)


@settings(max_examples=400, **SETTINGS)
@given(st.lists(diskstats_line(), max_size=40))
def test_diskstats_file_parser_keeps_every_good_device(cases):
    text = "\n".join(line for line, _ in cases)
    devices = parse_diskstats(text)
    for line, expected in cases:
        if expected is not None and (len(expected[3]) == 4 or len(expected[3]) >= 11):
            assert expected[0] in devices


def counters(draw, name="sda"):
    def value():
        return draw(st.one_of(counter, st.integers(0, 10 ** 6)))

    fields = draw(st.sampled_from((4, 11, 15, 17)))
    optional = fields >= 11
    return DiskCounters(
        name, 8, 0, fields, rd_ios=value(), rd_merges=value() if optional else None, rd_sectors=value(),
        rd_ticks=value() if optional else None, wr_ios=value(), wr_merges=value() if optional else None,
        wr_sectors=value(), wr_ticks=value() if optional else None, in_flight=value() if optional else None,
        io_ticks=value() if optional else None, rq_ticks=value() if optional else None,
        dc_ios=value() if fields >= 15 else None, dc_merges=value() if fields >= 15 else None,
        dc_sectors=value() if fields >= 15 else None, dc_ticks=value() if fields >= 15 else None,
        fl_ios=value() if fields >= 17 else None, fl_ticks=value() if fields >= 17 else None)


@settings(max_examples=800, **SETTINGS)
# Intervals come from monotonic stamps a poll apart: never NaN, never a microsecond.
@given(st.data(), st.one_of(st.none(), st.just(0.0), st.floats(-5, 0), st.floats(0.001, 3600)))
def test_iostat_arithmetic_on_any_two_readings_is_finite_or_absent(data, seconds):
    before, after = counters(data.draw), counters(data.draw)
    stats = device_stats(before, after, seconds)
    if stats is None:
        return
    for name, value in vars(stats).items():
        if isinstance(value, float):
            assert math.isfinite(value) and value >= 0, (name, value)


# ----- the filter language -------------------------------------------------------------------------

FILTER_ALPHABET = st.sampled_from(list("abcdefghijklmnopqrstuvwxyzHGST0123456789 :<>=!.-_/%'\"\\()[]{}*+?^$|k")
                                  + ["é", "\u00a0", "\t", "\x00", "ß", "\u2192"])
filter_text = st.one_of(
    st.text(FILTER_ALPHABET, max_size=40),
    st.builds(lambda col, op, num: f"{col}{op}{num}",
              st.sampled_from(("hg", "HG", "status", "queries/s", "Used%", "server", "nosuch", "conn", "time", "")),
              st.sampled_from((">", "<", ">=", "<=", "=", "!=", ":", "")),
              st.one_of(st.text("0123456789.-kKmMgG", max_size=12), st.text(FILTER_ALPHABET, max_size=10))),
)
text_cell = st.one_of(st.none(), st.text(max_size=20), st.sampled_from(("Query", "Sleep", "app", "10.0.0.5:40001")))
cell = st.one_of(st.none(), st.integers(-10 ** 12, 10 ** 12), st.floats(allow_nan=True, allow_infinity=True),
                 st.text(max_size=20), st.sampled_from(("ONLINE", "SHUNNED", "12.5", "NaN", "inf", "-0", "1e400")))


@settings(max_examples=1500, **SETTINGS)
@given(filter_text, st.lists(st.fixed_dictionaries({c.key: cell for c in ConnPoolScreen.columns}), max_size=5))
def test_filter_parser_accepts_or_explains_and_matching_never_raises(text, rows):
    columns = ConnPoolScreen.columns
    try:
        parsed = filters.parse(text, columns)
    except filters.FilterError as exc:
        assert str(exc) and "\n" not in str(exc)  # one line for the footer
        return
    assert parsed.text == text.strip()
    kept = table.filter_rows(rows, columns, parsed)
    assert all(row in rows for row in kept)
    arranged = table.arrange(rows, columns, table.TableState("hostgroup", filter=parsed), group_key="hostgroup",
                             subtotal_label=lambda g: ("server", f"{g} total"))
    assert len([r for r in arranged if r.get("_kind") != "subtotal"]) == len(kept)


@settings(max_examples=500, **SETTINGS)
@given(filter_text.filter(str.isprintable), st.lists(st.fixed_dictionaries({  # the types session_rows makes
    "_id": st.integers(), "id": st.one_of(st.integers(0, 10 ** 6), st.text(max_size=6)), "user": text_cell,
    "db": text_cell, "client": text_cell, "hostgroup": st.one_of(st.none(), st.integers(-1, 999), st.text(max_size=4)),
    "backend": text_cell, "command": text_cell, "time_ms": st.one_of(st.none(), st.integers(0, 10 ** 9), st.text(max_size=4)),
    "info": st.one_of(st.none(), st.text(max_size=60))}), max_size=4))
def test_session_filter_keeps_the_rows_the_generic_filter_keeps(text, rows):
    # Printable text only, as the filter input takes (a NUL could match across ProcList's cells).
    columns = ProcListScreen.columns
    try:
        parsed = filters.parse(text, columns)
    except filters.FilterError:
        return
    fast = filter_sessions(rows, columns, parsed)
    generic = table.filter_rows(rows, columns, parsed)
    assert [r["_id"] for r in fast] == [r["_id"] for r in generic]


def test_filter_examples_that_once_needed_care():
    columns = ConnPoolScreen.columns
    for text in ("hg>1e400", "hg>--1", "status:(", "status:[", "'unterminated", "hg>=1.2.3", "Used%>5", "x:y:z",
                 "\\", "hg=", ":", "queries/s>1k", "a b  c"):
        try:
            parsed = filters.parse(text, columns)
        except filters.FilterError as exc:
            assert re.match(r"^\S", str(exc))
        else:
            table.filter_rows([{"hostgroup": 1, "status": "ONLINE", "queries_s": 1500.0}], columns, parsed)


# ----- numbers in text ----------------------------------------------------------------------------

def _number_as_python_reads_it(text):
    """to_number's meaning, without its shortcut for texts that can't be numbers."""
    for parse in (int, float):
        try:
            number = parse(text)
        except ValueError:
            continue
        return None if isinstance(number, float) and (math.isnan(number) or math.isinf(number)) else number
    return None


@settings(max_examples=3000, **SETTINGS)
@given(st.one_of(st.text(), st.from_regex(r"\s*[-+]?(\d+(\.\d*)?|inf(inity)?|nan)(e\d+)?\s*", fullmatch=True),
                 st.sampled_from(["ONLINE", "Infinity", "NaN", "-inf", " 12 ", "1_000", "0x10", "", "10.0.0.1:3306"])))
def test_to_number_is_what_int_or_float_read(text):
    from proxytop.metrics.rates import to_number

    assert to_number(text) == _number_as_python_reads_it(text)


@settings(max_examples=1000, **SETTINGS)
@given(st.lists(st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6),
                          st.sampled_from(["10", "9", "b", "B", "a1"])), max_size=12))
def test_text_sort_values_kept_sort_as_worked_out(values):
    """sort_value keeps the value of each text seen: the order is the same the second time
    and the same as worked out afresh."""
    from proxytop.metrics.rates import to_number

    def fresh(value):
        if value is None:
            return (2, 0)
        number = to_number(value)
        return (0, number) if number is not None else (1, str(value).lower())

    for _ in range(2):
        assert [table.sort_value(v) for v in values] == [fresh(v) for v in values]


_sortable = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=False, min_value=-5, max_value=5),
                      st.booleans(), st.sampled_from(["10", "9", "b", "B", "a1", ""]))


@settings(max_examples=1000, **SETTINGS)
@given(st.lists(st.dictionaries(st.sampled_from(["n", "m", "name"]), _sortable), max_size=10),
       st.sampled_from(["n", "m", "name"]), st.booleans(), st.sampled_from([(), ("name",), ("m", "name")]))
def test_sort_rows_orders_as_sort_value_does(rows, key, descending, tiebreak):
    """sort_rows takes numbers as they are when a whole column is numbers: the same order as
    sorting every row by sort_value, missing values last, ties kept in the tiebreak's order."""
    for i, row in enumerate(rows):
        row["_id"] = i  # rows equal in every value are still told apart

    def by(name):
        return lambda row: table.sort_value(row.get(name))

    expected = list(rows)
    for extra in reversed(tiebreak):
        expected.sort(key=by(extra))
    present = [r for r in expected if r.get(key) is not None]
    present.sort(key=by(key), reverse=descending)
    expected = present + [r for r in expected if r.get(key) is None]
    assert [r["_id"] for r in table.sort_rows(rows, key, descending, tiebreak)] == [r["_id"] for r in expected]


_id_or_count = st.one_of(st.integers(min_value=0, max_value=10**12).map(str),
                         st.sampled_from(["007", " 7", "+7", "1_000", "1.0", "1.5", "", "x", "\u00b2", "\u0661\u0662", None, 7]))


@settings(max_examples=1000, **SETTINGS)
@given(st.lists(_id_or_count, max_size=8))
def test_whole_numbers_are_what_to_number_reads(values):
    """The one-pass ints of QueryRules' ids and hits are to_number's, or the general path is taken."""
    from proxytop.metrics.rates import counter_total, to_number, to_numbers, whole_numbers

    numbers = whole_numbers(values)
    assert numbers is None or (numbers == [to_number(v) for v in values] and all(type(n) is int for n in numbers))
    assert to_numbers(values) == [to_number(v) for v in values]
    assert counter_total(values) == sum(to_number(v) or 0 for v in values)
    if all(isinstance(v, str) and v.isascii() and v.isdigit() for v in values):
        assert numbers is not None  # the usual case takes the fast path


@settings(max_examples=1000, **SETTINGS)
@given(st.lists(_id_or_count, max_size=8))
def test_rule_keys_in_one_pass_are_each_rule_key(values):
    from proxytop.screens import queryrules

    assert queryrules._keys(values) == [queryrules._key(v) for v in values]


# ----- ConnPool's rows, read a column at a time ---------------------------------------------------

_POOL_COLUMNS = ("hostgroup", "srv_host", "srv_port", "status", "ConnUsed", "ConnFree", "ConnOK", "ConnERR",
                 "MaxConnUsed", "Queries", "Bytes_data_sent", "Bytes_data_recv", "Latency_us", "Latency_ms")
_pool_value = st.one_of(_id_or_count, st.sampled_from(["ONLINE", "SHUNNED", "db1", "3306", 1.5, True]))


def _pool_rows_by_dict(previous, current, servers):
    """ConnPool's rows as they were made from a dict per row: what pool_rows must give."""
    from proxytop.metrics.rates import to_number
    from proxytop.screens.base import seconds_between
    from proxytop.screens.connpool import COUNTERS, settings_by_key

    def by_key(snapshot):
        rows = {}
        for r in snapshot.data.dicts():
            rows[(str(r.get("hostgroup")), str(r.get("srv_host")), str(r.get("srv_port")))] = r
        return rows

    def latency(r):
        if r.get("Latency_us") is not None:
            value = to_number(r.get("Latency_us"))
            return None if value is None else value / 1000.0
        return to_number(r.get("Latency_ms"))

    seconds = seconds_between(previous, current)
    before = {k: tuple(to_number(r.get(f)) for f in COUNTERS) for k, r in by_key(previous).items()} \
        if seconds and previous is not None else {}
    config = settings_by_key(servers)
    rows = []
    for key, r in by_key(current).items():
        old = before.get(key)
        counts = tuple(to_number(r.get(f)) for f in COUNTERS)
        rates = (None,) * 5 if old is None else tuple(
            None if a is None or b is None or b < a else (b - a) / seconds for a, b in zip(old, counts))
        settings = config.get(key)
        max_conn = to_number(settings.get("max_connections")) if settings else None
        used = to_number(r.get("ConnUsed"))
        rows.append({
            "_id": key, "hostgroup": to_number(r.get("hostgroup")), "server": f"{r.get('srv_host')}:{r.get('srv_port')}",
            "status": r.get("status"), "conn_used": used, "conn_free": to_number(r.get("ConnFree")),
            "conn_ok_s": rates[0], "conn_err_s": rates[1], "max_conn_used": to_number(r.get("MaxConnUsed")),
            "used_pct": (100.0 * used / max_conn) if (used is not None and max_conn) else None,
            "queries_s": rates[2], "sent_s": rates[3], "recv_s": rates[4], "latency_ms": latency(r),
            "weight": to_number(settings.get("weight")) if settings else None, "max_connections": max_conn,
            "comment": settings.get("comment") if settings else None,
        })
    return rows


@st.composite
def _pool_readings(draw):
    from proxytop.core import Snapshot, Table

    columns = tuple(draw(st.lists(st.sampled_from(_POOL_COLUMNS), min_size=1, max_size=14, unique=True)))
    keys = st.tuples(st.sampled_from(["10", "20", None]), st.sampled_from(["db1", "db2"]), st.sampled_from(["3306", 3306]))

    def reading(at):
        rows = []
        for _ in range(draw(st.integers(0, 4))):
            values = dict(zip(("hostgroup", "srv_host", "srv_port"), draw(keys)))
            row = [values.get(c) if c in values and draw(st.booleans()) else draw(_pool_value) for c in columns]
            cut = draw(st.one_of(st.just(len(row)), st.integers(0, len(row) + 1)))  # short and long rows
            rows.append(tuple(row[:cut]) + (("extra",) if cut > len(row) else ()))
        return Snapshot("proxysql.connection_pool", Table(columns, tuple(rows)), at, 0.0)

    servers = Snapshot("proxysql.runtime_servers", Table(
        ("hostgroup_id", "hostname", "port", "weight", "max_connections", "comment"),
        (("10", "db1", "3306", "1", draw(st.sampled_from(["100", "0", "x", None])), "c"),)), 0.0, 0.0)
    return reading(draw(st.sampled_from([1.0, 2.0]))), reading(3.0), draw(st.sampled_from([None, servers]))


@settings(max_examples=1000, **SETTINGS)
@given(_pool_readings())
def test_pool_rows_read_by_column_are_the_rows_read_by_dict(readings):
    from proxytop.screens.connpool import pool_rows

    previous, current, servers = readings
    assert pool_rows(previous, current, servers) == _pool_rows_by_dict(previous, current, servers)
