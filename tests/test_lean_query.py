"""proxytop.polling.lean_query against the real MariaDB: the rows as PyMySQL reads them, and
errors, a lost connection and other statements on the same connection as PyMySQL has them."""
from __future__ import annotations

import pymysql
import pytest

from proxytop.polling.connection import Endpoint, open_mysql, run_query
from proxytop.polling.lean_query import query_packet, text_rows


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
