"""Queries through proxytop.polling.connection (PyMySQL's cursor): values as text or as their
types, invalid UTF-8 read with replacement characters, and errors, a lost connection and a
server that stops answering as the engine needs them (a connection error: reconnect)."""
from __future__ import annotations

import datetime
from decimal import Decimal

import pymysql
import pytest

from proxytop import errors
from proxytop.collectors.innodb import TAG  # what proxytop's statements to a MySQL server start with
from proxytop.polling.connection import Endpoint, open_admin, open_mysql, run_query


@pytest.fixture
def conn(mariadb):
    connection = open_mysql(Endpoint(host=mariadb.host, port=mariadb.port, user=mariadb.user,
                                     password=mariadb.password))
    yield connection
    connection.close()


def test_text_as_str_with_invalid_utf8_replaced_and_other_types_converted(conn):
    table = run_query(conn, TAG + "SELECT 1 AS one, 2.50 AS d, NULL AS n, 'caf\u00e9' AS t, "
                            "CAST('2024-01-02' AS DATE) AS day, x'00ff' AS b, SUM(3) AS total")
    assert table.columns == ("one", "d", "n", "t", "day", "b", "total")
    assert table.rows == ((1, Decimal("2.50"), None, "caf\u00e9", datetime.date(2024, 1, 2), "\x00\ufffd", Decimal(3)),)
    time_ms = run_query(conn, TAG + "SELECT TIME_MS FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
    assert isinstance(time_ms.rows[0][0], Decimal)  # MariaDB's DECIMAL column


def test_a_server_error_leaves_the_connection_usable(conn):
    with pytest.raises(pymysql.err.MySQLError) as raised:
        run_query(conn, TAG + "SELECT * FROM information_schema.no_such_table_here")
    assert raised.value.args[0] in (1109, 1146) and not errors.is_connection_error(raised.value)
    assert run_query(conn, TAG + "SELECT 'still here'").rows == (("still here",),)


def test_a_lost_connection_is_a_connection_error(mariadb, conn):
    mariadb.query(f"KILL CONNECTION {conn.thread_id()}")
    with pytest.raises(pymysql.err.MySQLError) as raised:
        for _ in range(3):  # the first may still find the socket open
            run_query(conn, TAG + "SELECT 1")
    assert errors.is_connection_error(raised.value)


def test_a_server_that_stops_answering_is_a_connection_error(proxysql_double):
    session = open_admin(Endpoint(port=proxysql_double.port, timeout=0.5))
    try:
        assert session.query("select 1").rows
        proxysql_double.hang(True)
        with pytest.raises(pymysql.err.MySQLError) as raised:
            session.query("select * from stats_mysql_global")
        assert errors.is_connection_error(raised.value)  # the engine closes it and connects again
    finally:
        proxysql_double.hang(False)
        session.conn.close()


def test_reset_tables_are_never_read(proxysql_double):
    session = open_admin(Endpoint(port=proxysql_double.port))
    try:
        before = session.queries
        with pytest.raises(errors.UnsafeQuery):
            session.query("select * from stats_mysql_query_digest_reset")
        assert session.queries == before
    finally:
        session.conn.close()
