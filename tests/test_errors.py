"""Error classification on real failures: real sockets, the real PyMySQL, the ProxySQL double
and a real MariaDB (for 'not a ProxySQL admin interface')."""
import doctest
import socket

import pymysql
import pytest

from proxytop import errors
from proxytop.polling.connection import Endpoint, open_admin
from tests.proxysql_double import ProxySQLDouble


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def failure(endpoint):
    with pytest.raises(Exception) as info:
        open_admin(endpoint)
    return info.value, errors.describe(info.value, password=endpoint.password)


def test_connection_refused():
    exc, text = failure(Endpoint(port=free_port(), timeout=1))
    assert "connection refused" in text and errors.is_connection_error(exc)


def test_unknown_host():
    exc, text = failure(Endpoint(host="no-such-host.invalid", timeout=1))
    assert "unknown host" in text


def test_timeout_on_a_server_that_never_answers(proxysql_double):
    proxysql_double.hang(True)
    exc, text = failure(Endpoint(port=proxysql_double.port, timeout=0.5))
    # no greeting: it may be another service's port, or a slow server
    assert "did not answer as a MySQL server would" in text and errors.is_connection_error(exc)
    advice = errors.describe(exc, timeout=0.5)
    assert advice == ("the port did not answer as a MySQL server would (nothing in 0.5 s): ProxySQL's admin port is "
                      "usually 6032; a slow server needs a longer --connect-timeout")
    proxysql_double.hang(False)


def test_access_denied_only_when_it_really_is(proxysql_double):
    exc, text = failure(Endpoint(port=proxysql_double.port, password="wrong-pw-123"))
    assert text.startswith("access denied") and "wrong-pw-123" not in text
    assert errors.is_connection_error(exc)
    # the same errno 1045 from a failed admin query is not "access denied"
    session = open_admin(Endpoint(port=proxysql_double.port))
    with pytest.raises(pymysql.err.MySQLError) as info:
        session.query("select * from no_such_table")
    text = errors.describe(info.value)
    assert text == "ProxySQL admin error: no such table: no_such_table"
    assert not errors.is_connection_error(info.value)


def test_reset_tables_are_never_queried(proxysql_double):
    session = open_admin(Endpoint(port=proxysql_double.port))
    with pytest.raises(errors.UnsafeQuery):
        session.query("select * from stats_mysql_connection_pool_reset")
    assert not any("_reset" in q for q in proxysql_double.queries())


def test_a_mysql_server_on_the_admin_port_is_not_proxysql(mariadb):
    exc, text = failure(Endpoint(host="127.0.0.1", port=mariadb.port, user=mariadb.user,
                                 password=mariadb.password or "", timeout=3))
    assert "not a ProxySQL admin interface" in text


def test_session_learns_version_and_user_kind(proxysql_double):
    admin = open_admin(Endpoint(port=proxysql_double.port))
    assert admin.version == (2, 7, 2) and admin.is_admin
    stats = open_admin(Endpoint(port=proxysql_double.port, user="stats", password="stats"))
    assert stats.version == (2, 7, 2) and not stats.is_admin


TRAFFIC_PORT = "not a ProxySQL admin interface (6033 is ProxySQL's traffic port, 6032 the admin port)"


def test_proxysqls_traffic_port_is_not_its_admin_interface(recording):
    # The traffic port answers @@version_comment with "(ProxySQL)" itself and forwards the rest
    # to a MariaDB: only the missing stats schema gives it away.
    traffic = ProxySQLDouble(recording=recording, traffic=True).start()
    try:
        exc, text = failure(Endpoint(port=traffic.port, user="sbtest", password="sbtest"))
        assert text == TRAFFIC_PORT and errors.is_connection_error(exc)
        assert not any("stats_" in q for q in traffic.queries())  # told before reading a stats table
        # admin credentials on the traffic port: ProxySQL itself refuses them
        exc, text = failure(Endpoint(port=traffic.port))
        assert text.startswith("access denied: ProxySQL Error: Access denied for user 'admin'")
    finally:
        traffic.stop()


def test_the_stats_user_still_counts_as_an_admin_interface(proxysql_double):
    session = open_admin(Endpoint(port=proxysql_double.port, user="stats", password="stats"))
    assert "stats_mysql_global" in session.tables and not session.is_admin


def test_admin_credentials_refused_by_a_mysql_server(mariadb):
    # admin/admin against MariaDB: its refusal has no "ProxySQL Error:", so the port is wrong,
    # and the user name is shown even though it equals the password.
    exc, text = failure(Endpoint(host="127.0.0.1", port=mariadb.port, user="admin", password="admin", timeout=3))
    assert text.startswith("not a ProxySQL admin interface (a MySQL server answered: Access denied for user 'admin'@")
    assert "***" not in text and errors.is_connection_error(exc)


@pytest.mark.parametrize("message, password, shown", [
    ("Access denied for user 'admin'@'127.0.0.1' (using password: YES)", "admin",
     "Access denied for user 'admin'@'127.0.0.1' (using password: YES)"),
    ("cannot connect: 127.0.0.1:6032", "127", "cannot connect: 127.0.0.1:6032"),
    ("login as radmin failed", "admin", "login as radmin failed"),
    ("sent password 'Pa$$ (w0rd)' to radmin", "Pa$$ (w0rd)", "sent password '***' to radmin"),
    ("dsn admin:s3cret@db1", "s3cret", "dsn admin:***@db1"),
])
def test_the_password_is_masked_where_it_stands(message, password, shown):
    assert errors.mask_password(message, password) == shown


def test_worked_examples_in_errors():
    result = doctest.testmod(errors)
    assert result.attempted > 0 and result.failed == 0
