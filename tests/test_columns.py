"""Results read as columns (proxytop.polling.columns) give what a row-by-row read gives, value for
value: the digest and the processlist from the ProxySQL admin double (NULL and malformed
counters, non-UTF-8 and huge texts, empty texts, NULL keys), typed columns from a real
MariaDB, and only the changed rows converted again on the next reading."""
from __future__ import annotations

from array import array
from decimal import Decimal

import pytest

from proxytop.collectors.digest import QueryDigest
from proxytop.collectors.proxysql_stats import ProcessList
from proxytop.metrics import digests
from proxytop.polling.columns import decimals_to_columns, decode_column, query_columns
from proxytop.polling.connection import Endpoint, open_admin, open_mysql, run_query
from tests.proxysql_double import ProxySQLDouble, Recording, lenenc_str
from tests.scale_digests import DIGEST_COLUMNS

DIGEST = "stats_mysql_query_digest"
SQL = f"select * from {DIGEST}"


def digest_row(n: int, **changes):
    row = dict(zip(DIGEST_COLUMNS, ("10", "shop", "app", "", f"0x{n:016X}", f"SELECT * FROM t{n} WHERE id=?",
                                    str(5 * n + 1), "1795385000", "1795385100", str(1000 * n + 7), "90", "4000",
                                    "0", str(n))))
    row.update(changes)
    return [row[name] for name in DIGEST_COLUMNS]


# (case, rows): each served as the whole digest table
CASES = [
    ("plain", [digest_row(n) for n in range(50)]),
    ("no rows", []),
    ("a NULL counter", [digest_row(1), digest_row(2, sum_time=None), digest_row(3, count_star=None)]),
    ("a negative counter", [digest_row(1, sum_rows_affected="-1"), digest_row(2)]),
    ("leading zeros", [digest_row(1, max_time="007")]),
    ("a fraction", [digest_row(1, min_time="1.5")]),
    ("an empty counter", [digest_row(1, sum_rows_sent="")]),
    ("beyond 64 bits", [digest_row(1, sum_time="99999999999999999999")]),
    ("a length byte that is a digit", [digest_row(1, sum_time="1" * 49)]),
    ("text in a counter", [digest_row(1, count_star="many")]),
    ("non-UTF-8 text", [digest_row(1, digest_text=b"SELECT '\xff\xfe' FROM t"), digest_row(2, username=b"caf\xe9")]),
    ("a 1 MB digest text", [digest_row(1, digest_text="SELECT " + "x, " * 350_000 + "1"), digest_row(2)]),
    ("a text of 300 bytes", [digest_row(1, digest_text="SELECT " + "y" * 293)]),
    ("an empty digest text", [digest_row(1, digest_text=""), digest_row(2)]),
    ("a NULL digest text", [digest_row(1, digest_text=None), digest_row(2)]),
    ("a NULL key", [digest_row(1, schemaname=None), digest_row(2)]),
    ("one digest, two texts", [digest_row(1), digest_row(1, hostgroup="20", digest_text="select 2")]),
    ("a key twice", [digest_row(1), digest_row(1, count_star="99")]),
    ("a NUL inside a text", [digest_row(1, digest_text="SELECT '\x00'")]),
]
# the cases whose columns give back exactly the rows read (the others are kept as rows)


class Fixed:
    """A transform serving ``rows`` as the digest table, whatever the frame."""

    def __init__(self, rows):
        self.rows = rows

    def __call__(self, _columns, _rows):
        return list(DIGEST_COLUMNS), [list(r) for r in self.rows]


@pytest.fixture(scope="module")
def served():
    double = ProxySQLDouble(recording=Recording.load("cluster", node="127.0.0.1:6042"), start_frame=30)
    fixed = Fixed([])
    double.transforms[DIGEST] = fixed
    double.start()
    session = open_admin(Endpoint(port=double.port, user="admin", password="admin", timeout=30))
    yield session, fixed, double
    session.conn.close()
    double.stop()


@pytest.mark.parametrize("case, rows", CASES, ids=[c for c, _ in CASES])
def test_the_digest_as_columns_is_the_digest_as_rows(served, case, rows):
    session, fixed, _double = served
    fixed.rows = rows
    expected = run_query(session.conn, SQL)
    result = query_columns(session.conn, SQL, numeric=digests.COUNTERS)
    assert result.table() == expected


def test_the_processlist_as_columns_is_the_processlist_as_rows(served):
    session, _fixed, double = served
    columns = ["ThreadID", "SessionID", "user", "db", "cli_host", "cli_port", "hostgroup", "l_srv_host", "l_srv_port",
               "srv_host", "srv_port", "command", "time_ms", "info", "status_flags", "extended_info"]
    sessions = [[str(n % 4), str(n + 1), f"app{n % 3}", "shop", "10.0.0.9", str(40000 + n), "10", "10.0.0.1",
                 "6033", None if n % 2 else "10.0.0.2", None if n % 2 else "3306", "Sleep" if n % 2 else "Query",
                 str(n * 17), None if n % 2 else ("SELECT '\xe9' /* " + "z" * (n * 40) + " */").encode("latin-1"),
                 "0", None] for n in range(40)]
    double.transforms["stats_mysql_processlist"] = lambda _c, _r: (columns, [list(s) for s in sessions])
    expected = run_query(session.conn, "select * from stats_mysql_processlist")
    got = ProcessList().collect(session)
    assert got == expected
    users = [row[2] for row in got.rows]
    assert users[0] is users[3]  # a repeated short value is one str


def test_typed_columns_from_mariadb_are_converted_as_pymysql_does(mariadb):
    conn = open_mysql(Endpoint(host=mariadb.host, port=mariadb.port, user=mariadb.user,
                               password=mariadb.password or "", timeout=10))
    try:
        sql = ("select 1 as n, 'caf\u00e9' as t, NULL as z, cast(2.5 as double) as d, cast('2024-01-02' as date) as day, "
               "x'ff00' as b, cast(18446744073709551615 as unsigned) as big union all "
               "select 2, '', 'x', NULL, NULL, NULL, cast(0 as unsigned)")
        expected = run_query(conn, sql)
        got = query_columns(conn, sql, numeric=("big",))
        assert got.table() == expected
        assert got.numbers("n") is None  # typed: PyMySQL's converters, not the decimal reader
        assert run_query(conn, "select 3").rows == ((3,),)  # the connection reads on as usual
    finally:
        conn.close()


def test_decimal_columns_from_mariadb_are_decimals(mariadb):
    """MariaDB sends DECIMAL for sums and for columns such as PROCESSLIST.TIME_MS; PyMySQL's
    own converter takes text, not the bytes proxytop asks for."""
    conn = open_mysql(Endpoint(host=mariadb.host, port=mariadb.port, user=mariadb.user,
                               password=mariadb.password or "", timeout=10))
    try:
        sql = "select 1.5 as a, cast(-2 as decimal(10,3)) as b, sum(1) as c, cast(NULL as decimal) as z"
        assert run_query(conn, sql).rows == ((Decimal("1.5"), Decimal("-2.000"), Decimal(1), None),)
        assert query_columns(conn, sql).table().rows == ((Decimal("1.5"), Decimal("-2.000"), Decimal(1), None),)
        time_ms = run_query(conn, "select TIME_MS from information_schema.PROCESSLIST where ID = CONNECTION_ID()")
        assert isinstance(time_ms.rows[0][0], Decimal)
    finally:
        conn.close()


@pytest.mark.parametrize("block, width, expected", [
    (b"\x0212\x010", 2, [[12], [0]]),
    (b"\x0212\x010\x013\x014", 2, [[12, 3], [0, 4]]),
    (b"\x139223372036854775807", 1, [[9223372036854775807]]),
    (b"\x139223372036854775808", 1, None),  # beyond int64
    (b"\x0201", 1, None),  # a leading zero: str() would not give it back
    (b"\x00", 1, None),  # empty
    (b"\xfb", 1, None),  # NULL
    (b"\x02-1", 1, None),
    (b"\x031.5", 1, None),
    (b"\x011\x012\x013", 2, None),  # not whole rows
    (b"\x0312", 1, None),  # a length longer than its digits
    (b"\x01" + b"1" * 3, 1, None),  # digits beyond the length
])
def test_decimal_blocks(block, width, expected):
    got = decimals_to_columns(block, width)
    assert (None if got is None else [list(c) for c in got]) == expected
    if got is not None:
        assert all(isinstance(c, array) and c.typecode == "q" for c in got)


@pytest.mark.parametrize("values", [
    [b"app", b"app", None, b""],
    [b"caf\xc3\xa9", b"\xff", b"\xe2\x82", b"\xe2\x82\xac", b"a\x00b"],
    [b"%d" % n for n in range(500)],
    [None] * 5,
    [],
])
def test_decode_column_is_each_value_decoded(values):
    assert decode_column(values) == [None if v is None else v.decode("utf-8", "replace") for v in values]


def lenenc(value):
    """A text-protocol value as the double sends it; 0xFB for NULL."""
    return b"\xfb" if value is None else lenenc_str(value)


@pytest.mark.parametrize("rows", [
    [[b"a", None, b""], [b"b", b"c", b"d"]],
    [[b"x" * 250, b"y" * 251, b"z" * 70_000], [None, None, None]],
    [[b"q" * (1 << 16), b"1", None]],
])
def test_split_values_reads_every_length_encoding_as_the_row_reader_does(rows):
    from proxytop.polling.columns import split_values
    from proxytop.polling.textrows import read_row

    packets = [b"".join(map(lenenc, row)) for row in rows]
    columns = split_values(packets, 3)
    as_rows = [read_row(p, 0, [(None, None)] * 3) for p in packets]
    assert [tuple(decode_column(c)) for c in columns] == [tuple(col) for col in zip(*as_rows)]
    # a row that ends early reads NULL for the rest
    assert split_values([packets[0][:len(lenenc(rows[0][0]))]], 3) == [[rows[0][0]], [None], [None]]


def test_column_definitions_are_parsed_once_and_read_as_pymysql_reads_them(served):
    import pymysql

    from proxytop.polling import textrows

    session, fixed, double = served
    fixed.rows = [digest_row(1)]
    textrows._described.clear()
    first = session.conn.cursor()
    first.execute("select * from stats_mysql_global")
    again = session.conn.cursor()
    again.execute("select * from stats_mysql_global")
    assert again.description == first.description and len(textrows._described) == 1
    assert again._result.fields[0] is first._result.fields[0]  # the definitions parsed once
    run_query(session.conn, SQL)  # other columns: parsed for themselves
    assert len(textrows._described) == 2
    plain = pymysql.connect(host="127.0.0.1", port=double.port, user="admin", password="admin")
    try:
        with plain.cursor() as cursor:
            cursor.execute("select * from stats_mysql_global")
            assert cursor.description == again.description  # as PyMySQL itself reads them
            cursor.execute(SQL)
            names = tuple(d[0] for d in cursor.description)
        assert query_columns(session.conn, SQL, numeric=digests.COUNTERS).names == names
    finally:
        plain.close()


def test_large_results_read_as_columns_over_tls(tmp_path):
    """Through an encrypted connection (PyMySQL's buffered reader over TLS) the digest and the
    processlist read as columns are the rows, across many TLS records."""
    from proxytop.polling import tls
    from tests.certificates import make_certificates
    from tests.scale_digests import ScaleDigests

    certs = make_certificates(str(tmp_path))
    recording = Recording.load("cluster", node="127.0.0.1:6042")
    double = ProxySQLDouble(recording=recording, start_frame=30, tls=certs.server_context())
    frame = ScaleDigests(recording, digests=3000).frame(1)
    double.transforms[DIGEST] = lambda _c, _r: (list(DIGEST_COLUMNS), [list(r) for r in frame])
    columns = ["SessionID", "user", "command", "time_ms", "info"]
    sessions = [[str(n), f"app{n % 7}", "Query", str(n * 3), "SELECT " + "x" * (n % 400)] for n in range(2000)]
    double.transforms["stats_mysql_processlist"] = lambda _c, _r: (columns, [list(s) for s in sessions])
    double.start()
    try:
        session = open_admin(Endpoint(port=double.port, timeout=30, tls=tls.settings("REQUIRED", None, None, None)))
        try:
            assert session.encryption
            expected = run_query(session.conn, SQL)
            assert len(expected.rows) == 3000
            got = QueryDigest().collect(session)
            assert got == expected
            listed = ProcessList().collect(session)
            assert listed == run_query(session.conn, "select * from stats_mysql_processlist")
            assert len(listed.rows) == 2000
        finally:
            session.conn.close()
    finally:
        double.stop()
