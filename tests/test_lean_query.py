"""proxytop.polling.lean_query against the real MariaDB: the rows as PyMySQL reads them, and
errors, a lost connection and other statements on the same connection as PyMySQL has them."""
from __future__ import annotations

import datetime
from decimal import Decimal

import pymysql
import pytest

from proxytop.polling.connection import Endpoint, open_mysql, run_query
from proxytop.polling.lean_query import query_packet, text_result, text_rows


@pytest.fixture
def conn(mariadb):
    connection = open_mysql(Endpoint(host=mariadb.host, port=mariadb.port, user=mariadb.user,
                                     password=mariadb.password))
    yield connection
    connection.close()


def test_rows_as_text_as_pymysql_reads_them(conn):
    sql = ("SELECT VARIABLE_NAME, VARIABLE_VALUE, NULL, 'caf\u00e9', REPEAT('x', 300) "
           "FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME LIKE 'INNODB_BUFFER_POOL%' ORDER BY 1")
    lean = text_rows(conn, query_packet(sql))
    assert len(lean) > 10
    expected = tuple(tuple(None if v is None else str(v) for v in row) for row in run_query(conn, sql).rows)
    assert lean == expected
    assert lean[0][2] is None and lean[0][3] == "caf\u00e9" and lean[0][4] == "x" * 300


@pytest.mark.parametrize("sql", [
    "SELECT 1 AS one, 2.50 AS d, NULL AS n, 'caf\u00e9' AS t, CAST('2024-01-02' AS DATE) AS day, x'00ff' AS b",
    "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES ORDER BY 1",
    "SELECT ID, USER, TIME_MS FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
    "SELECT 'b' AS b FROM DUAL WHERE 1 = 0",
    "SET autocommit = 1",  # no result set (a statement open_mysql itself sends: the audit allows it)
])
def test_a_typed_result_is_the_table_run_query_reads(conn, sql):
    """The admin session's reading (text_result): the same column names and values, of the
    same types, as PyMySQL's cursor gives (run_query), twice (the definitions kept)."""
    for _ in range(2):
        expected = run_query(conn, sql)
        names, rows = text_result(conn, query_packet(sql))
        if "PROCESSLIST" in sql:  # TIME_MS moves on between the two readings
            rows, expected_rows = [r[:2] for r in rows], [r[:2] for r in expected.rows]
        else:
            expected_rows = expected.rows
        assert names == expected.columns and list(rows) == list(expected_rows)
        assert [tuple(type(v) for v in r) for r in rows] == [tuple(type(v) for v in r) for r in expected_rows]
    if sql.startswith("SELECT 1"):
        assert rows == ((1, Decimal("2.50"), None, "caf\u00e9", datetime.date(2024, 1, 2), "\x00\ufffd"),)  # as run_query decodes bytes


@pytest.mark.parametrize("columns", [3, 300])
def test_column_definitions_in_one_buffer_or_over_several(conn, columns):
    """A few definitions are whole in the read buffer and are looked up as one text; three
    hundred (some 20 KB, their sequence numbers past 255) come over several reads and are
    taken one packet at a time: the same names and values either way, twice (kept)."""
    sql = "SELECT " + ", ".join(f"{n} AS a_rather_long_column_alias_{n:03d}" for n in range(columns))
    for _ in range(2):
        names, rows = text_result(conn, query_packet(sql))
        expected = run_query(conn, sql)
        assert names == expected.columns and rows == expected.rows and len(names) == columns
        assert text_result(conn, query_packet("SELECT 7 AS seven")) == (("seven",), ((7,),))  # the next is whole


def test_a_result_larger_than_the_read_buffer(conn):
    """Rows that come in many reads (the buffer holds a few kilobytes): every one, in order."""
    sql = ("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, REPEAT('y', 3000) FROM information_schema.COLUMNS "
           "ORDER BY 1, 2, 3")
    rows = text_rows(conn, query_packet(sql))
    assert len(rows) > 300 and all(len(row[3]) == 3000 for row in rows)
    assert rows == tuple(tuple(str(v) for v in row) for row in run_query(conn, sql).rows)
    big = text_rows(conn, query_packet("SELECT REPEAT('z', 100000)"))  # one value over many buffers
    assert big == (("z" * 100000,),)


def test_statements_before_and_after_on_the_same_connection(conn):
    assert run_query(conn, "SELECT 1").rows == ((1,),)
    for _ in range(3):
        assert text_rows(conn, query_packet("SELECT 'a', 2")) == (("a", "2"),)
        assert run_query(conn, "SELECT @@version").rows[0][0]
    assert text_rows(conn, query_packet("SET autocommit = 1")) == ()  # no result set (what open_mysql sets)
    assert text_rows(conn, query_packet("SELECT 'b' FROM DUAL WHERE 1 = 0")) == ()
    assert conn.server_status is not None and run_query(conn, "SELECT 3").rows == ((3,),)


def test_a_server_error_is_pymysqls_and_the_connection_stays_usable(conn):
    with pytest.raises(pymysql.err.MySQLError) as raised:
        text_rows(conn, query_packet("SELECT * FROM information_schema.no_such_table_here"))
    assert raised.value.args[0] in (1109, 1146)  # unknown table, as PyMySQL raises it
    with pytest.raises(pymysql.err.MySQLError):
        text_rows(conn, query_packet("SELECT NOT VALID SQL"))
    assert text_rows(conn, query_packet("SELECT 'still here'")) == (("still here",),)


def test_a_lost_connection_is_pymysqls_connection_error(mariadb, conn):
    from proxytop import errors

    own_id = run_query(conn, "SELECT CONNECTION_ID()").rows[0][0]
    mariadb.query(f"KILL CONNECTION {own_id}")
    with pytest.raises(pymysql.err.OperationalError) as raised:
        text_rows(conn, query_packet("SELECT 1"))
        text_rows(conn, query_packet("SELECT 1"))  # the first may still find the socket open
    assert errors.is_connection_error(raised.value)
    with pytest.raises(pymysql.err.MySQLError):
        text_rows(conn, query_packet("SELECT 1"))  # closed: as PyMySQL says of a closed connection
