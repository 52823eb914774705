"""TLS as the mysql client does it, against the ProxySQL double offering TLS (certificates
made by tests/certificates.py) and a MariaDB server started with ssl_cert/ssl_key/ssl_ca.

The double and MariaDB say what was negotiated from their side (the double's tls_sessions,
MariaDB's Ssl_version), so a mark on the screen is checked against the wire."""
from __future__ import annotations

import re
import subprocess

import pytest

from proxytop import errors
from proxytop.collectors.innodb import MySQLSource
from proxytop import options
from proxytop.config import tls
from proxytop.polling.connection import Endpoint, ProxySQLSource, open_admin
from tests.certificates import make_certificates
from tests.mariadb import running_server
from tests.proxysql_double import ProxySQLDouble
from tests.terminal import proxytop_command
from tests.test_innodb_live import monitor, screen_text, server_screen, wait


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(str(tmp_path_factory.mktemp("certs")))


@pytest.fixture
def tls_double(recording, certs):
    double = ProxySQLDouble(recording=recording, tls=certs.server_context()).start()
    yield double
    double.stop()


@pytest.fixture
def self_signed_double(recording, certs):
    double = ProxySQLDouble(recording=recording, tls=certs.server_context(self_signed=True)).start()
    yield double
    double.stop()


def admin(double, **settings) -> Endpoint:
    return Endpoint(port=double.port, tls=tls.settings(settings.get("mode"), settings.get("ca"),
                                                        settings.get("cert"), settings.get("key")))


def failure(endpoint: Endpoint) -> str:
    with pytest.raises(Exception) as info:
        open_admin(endpoint)
    assert errors.is_connection_error(info.value)  # retried, like any connection problem
    return errors.describe(info.value, password=endpoint.password)


# ----- the modes against the double ------------------------------------------------------------

def test_each_mode_against_a_double_that_offers_tls(tls_double, certs):
    for mode, ca, expected in (("PREFERRED", None, "TLSv1"), ("REQUIRED", None, "TLSv1"),
                               ("VERIFY_CA", certs.ca, "TLSv1"), ("VERIFY_IDENTITY", certs.ca, "TLSv1"),
                               ("DISABLED", None, None)):
        session = open_admin(admin(tls_double, mode=mode, ca=ca))
        try:
            assert (session.encryption or "").startswith(expected or "x") if expected else session.encryption is None
            assert session.version_text.startswith("2.7.2")  # the admin queries ran over it
        finally:
            session.conn.close()
    assert len(tls_double.tls_sessions) == 4  # the double saw four TLS handshakes, not five


def test_ssl_ca_alone_means_verify_ca_and_a_self_signed_certificate_is_one_line(self_signed_double, certs):
    endpoint = admin(self_signed_double, ca=certs.ca)
    assert endpoint.tls.mode == tls.VERIFY_CA
    line = failure(endpoint)
    assert line == "TLS: certificate verify failed for 127.0.0.1: self-signed certificate"
    assert self_signed_double.queries() == []  # nothing was sent to a server that could not be verified
    # PREFERRED and REQUIRED don't check the certificate: they connect
    session = open_admin(admin(self_signed_double, mode="REQUIRED"))
    assert session.encryption
    session.conn.close()


def test_verify_identity_checks_the_name_connected_to(tls_double, recording, certs):
    by_name = Endpoint(host="localhost", port=tls_double.port, tls=tls.settings("VERIFY_IDENTITY", certs.ca, None, None))
    session = open_admin(by_name)
    assert session.encryption
    session.conn.close()
    # the certificate names 127.0.0.1 and localhost, not 127.0.0.2 (also this machine's loopback)
    try:
        other = ProxySQLDouble(host="127.0.0.2", recording=recording, tls=certs.server_context()).start()
    except OSError:
        pytest.skip("127.0.0.2 is not a loopback address here")
    try:
        wrong = Endpoint(host="127.0.0.2", port=other.port, tls=tls.settings("VERIFY_IDENTITY", certs.ca, None, None))
        line = failure(wrong)
        assert line.startswith("TLS: certificate verify failed for 127.0.0.2: ") and "mismatch" in line, line
        only_ca = Endpoint(host="127.0.0.2", port=other.port, tls=tls.settings("VERIFY_CA", certs.ca, None, None))
        session = open_admin(only_ca)  # VERIFY_CA checks the signature, not the name
        assert session.encryption
        session.conn.close()
    finally:
        other.stop()


def test_required_refuses_a_server_without_tls(proxysql_double):
    line = failure(admin(proxysql_double, mode="REQUIRED"))
    assert line == "TLS: the server does not offer TLS (required by --ssl-mode)"
    assert proxysql_double.queries() == []  # refused before logging in: nothing was sent
    session = open_admin(admin(proxysql_double))  # PREFERRED: plain text is fine
    assert session.encryption is None
    session.conn.close()


def test_client_certificate_is_presented_when_the_server_asks(recording, certs):
    double = ProxySQLDouble(recording=recording, tls=certs.server_context(client_ca=True)).start()
    try:
        source = ProxySQLSource(admin(double, mode="REQUIRED"))
        with pytest.raises(Exception) as info:
            source.connect()
        assert source.describe_error(info.value) == \
            "TLS: 127.0.0.1 asks for a client certificate (--ssl-cert and --ssl-key)"
        session = open_admin(admin(double, mode="VERIFY_CA", ca=certs.ca, cert=certs.client_cert, key=certs.client_key))
        assert session.encryption
        session.conn.close()
    finally:
        double.stop()


# ----- options ------------------------------------------------------------------------------------

def test_tls_options_and_their_errors(certs, tmp_path, capsys):
    config = options.parse(["--ssl-ca", certs.ca, "--ssl-cert", certs.client_cert, "--ssl-key", certs.client_key], {})
    assert config.endpoint.tls == tls.TLSSettings("VERIFY_CA", certs.ca, certs.client_cert, certs.client_key)
    assert options.parse(["--ssl-mode", "disabled"], {}).endpoint.tls.mode == "DISABLED"
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cases = {
        ("--ssl-mode", "sometimes"): "unknown TLS mode 'sometimes'",
        ("--ssl-ca", "/nonexistent/ca.pem"): "file not found: /nonexistent/ca.pem",
        ("--ssl-mode", "VERIFY_IDENTITY"): "--ssl-mode VERIFY_IDENTITY needs --ssl-ca",
        ("--ssl-ca", str(garbage)): f"TLS: cannot load the CA file {garbage}",
        ("--ssl-cert", str(garbage), "--ssl-key", certs.client_key): "TLS: cannot load the client certificate",
        ("--mysql-ssl-mode", "VERIFY_CA"): "--mysql-ssl-mode VERIFY_CA needs --mysql-ssl-ca",
    }
    for argv, message in cases.items():
        with pytest.raises(SystemExit) as info:
            options.parse(list(argv), {"HOME": str(tmp_path)})
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err


def test_tls_settings_from_option_files(certs, tmp_path, monkeypatch):
    defaults = tmp_path / "admin.cnf"
    defaults.write_text(f"[proxysqladmin]\nssl-mode = REQUIRED\nssl-ca = {certs.ca}\n")
    assert options.parse(["-f", str(defaults)], {}).endpoint.tls.mode == "REQUIRED"
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".my.cnf").write_text(f"[client]\nssl-ca = {certs.ca}\nssl-cert = {certs.client_cert}\n"
                                      f"ssl-key = {certs.client_key}\n")
    from proxytop.config.mysql_options import resolve_credentials

    credentials = resolve_credentials(options.parse([], {}).args, {})
    assert credentials.tls == tls.TLSSettings("VERIFY_CA", certs.ca, certs.client_cert, certs.client_key)
    assert credentials.origins["ssl-ca"] == "defaults file"


# ----- the program ------------------------------------------------------------------------------

def test_header_shows_tls_and_a_bad_certificate_is_one_line(tls_double, self_signed_double, certs, proxytop_term):
    term = proxytop_term("-P", str(tls_double.port), "--ssl-ca", certs.ca, cols=140)
    screen = term.wait_until(lambda s: re.search(r"ProxySQL 2\.7\.2\s+TLS", s) and "connected" in s, timeout=15,
                             what="the TLS mark in the header")
    assert "127.0.0.1:3311" in term.wait_for("127.0.0.1:3311", timeout=15)
    term.send("q")
    assert term.wait_exit(10) == 0
    assert tls_double.tls_sessions
    plain = proxytop_term("-P", str(tls_double.port), "--ssl-mode", "DISABLED", cols=140)
    screen = plain.wait_until(lambda s: "connected" in s and "ProxySQL 2.7.2" in s, timeout=15, what="connected")
    assert not re.search(r"ProxySQL 2\.7\.2\s+TLS", screen)
    plain.send("q")
    plain.wait_exit(10)
    bad = proxytop_term("-P", str(self_signed_double.port), "--ssl-ca", certs.ca, cols=160)
    screen = bad.wait_for("TLS: certificate verify failed for 127.0.0.1: self-signed certificate", timeout=15)
    assert "disconnected, retrying in" in screen and "Traceback" not in screen
    bad.send("q")
    assert bad.wait_exit(10) == 0
    assert "Traceback" not in bad.output().decode("utf-8", "replace")


def test_batch_says_what_failed_in_one_line(self_signed_double, certs):
    result = subprocess.run(list(proxytop_command()) + ["--batch", "--count", "1", "-P", str(self_signed_double.port),
                                                         "--ssl-ca", certs.ca, "--connect-timeout", "2"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    assert "TLS: certificate verify failed for 127.0.0.1: self-signed certificate" in result.stderr
    assert "Traceback" not in result.stderr


# ----- a MariaDB server with TLS -----------------------------------------------------------------

@pytest.fixture(scope="module")
def tls_mariadb(certs):
    with running_server({"ssl_cert": certs.server_cert, "ssl_key": certs.server_key, "ssl_ca": certs.ca},
                        name="tls") as server:
        server.query("CREATE USER 'x509dba'@'%' IDENTIFIED BY 'x509-pass' REQUIRE X509")
        server.query("GRANT PROCESS ON *.* TO 'x509dba'@'%'")
        yield server


def mysql_endpoint(server, user="x509dba", password="x509-pass", **settings) -> Endpoint:
    return Endpoint(host=server.host, port=server.port, user=user, password=password,
                    tls=tls.settings(settings.get("mode"), settings.get("ca"), settings.get("cert"), settings.get("key")))


def server_side_tls(session) -> str:
    """What MariaDB itself says about this connection's TLS."""
    rows = session.query("SHOW SESSION STATUS LIKE 'Ssl_version'").rows
    return rows[0][1] if rows else ""


def test_mariadb_with_tls_and_a_require_x509_user(tls_mariadb, certs):
    source = MySQLSource(mysql_endpoint(tls_mariadb, ca=certs.ca, cert=certs.client_cert, key=certs.client_key))
    session = source.connect()
    try:
        assert session.encryption and server_side_tls(session) == session.encryption
    finally:
        source.close(session)
    without_cert = MySQLSource(mysql_endpoint(tls_mariadb, ca=certs.ca))
    with pytest.raises(Exception) as info:
        without_cert.connect()
    assert without_cert.describe_error(info.value).startswith("access denied: Access denied for user 'x509dba'")
    root = MySQLSource(mysql_endpoint(tls_mariadb, tls_mariadb.user, tls_mariadb.password, mode="DISABLED"))
    session = root.connect()
    try:
        assert session.encryption is None and server_side_tls(session) == ""
    finally:
        root.close(session)


def test_required_refuses_the_plain_shared_mariadb(mariadb):
    source = MySQLSource(mysql_endpoint(mariadb, mariadb.user, mariadb.password, mode="REQUIRED"))
    with pytest.raises(Exception) as info:
        source.connect()
    assert source.describe_error(info.value) == "TLS: 127.0.0.1 does not offer TLS (required by --ssl-mode)"


def test_innodb_screen_reads_a_tls_server_with_a_client_certificate(tls_mariadb, certs, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    key = tls_mariadb.address
    with monitor("-P", "1", "--screen", "innodb", "--no-discover", "--mysql", key, "--mysql-user", "x509dba",
                 "--mysql-password", "x509-pass", "--mysql-ssl-ca", certs.ca, "--mysql-ssl-cert", certs.client_cert,
                 "--mysql-ssl-key", certs.client_key) as (engine, controller):
        wait(lambda: re.search(re.escape(key) + r".*MariaDB 10\.\d+\s+OK", screen_text(controller)), 20,
             "the TLS server's row")
        screen = server_screen(controller)
        lines = screen.detail_lines(screen.servers[key], controller.view)
        text = "\n".join("".join(part for part, _style in line) for line in lines)
        assert re.search(r"user x509dba\s+TLS TLSv1\.[23]", text), text
        assert engine.source(f"mysql:{key}").session.encryption.startswith("TLSv1")
