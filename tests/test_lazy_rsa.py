"""PyMySQL is loaded without the cryptography package (proxytop/lazy_rsa.py), and a server
that wants the password encrypted with its RSA key (caching_sha2_password's full
authentication without TLS) still gets it: the real program against the ProxySQL double
playing such a server, which decrypts the password with its private key."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.proxysql_double import ProxySQLDouble
from tests.terminal import proxytop_command

rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")

LOADED = """
import sys
import proxytop.polling.connection, proxytop.collectors.innodb, proxytop.ui.batch
import pymysql
print(sorted(m for m in ("pymysql._auth", "cryptography") if m in sys.modules))
"""


def python(code: str) -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=60)
    # Everything the child said, should it fail or print nothing (seen once in a full run
    # beside stress-ng: an empty output with exit status 0, not reproduced in 27 runs since).
    assert result.returncode == 0 and result.stdout.strip(), \
        f"exit {result.returncode}, stdout {result.stdout!r}, stderr {result.stderr[-3000:]!r}"
    return result.stdout.strip()


def test_pymysql_is_loaded_without_cryptography():
    assert python(LOADED) == "['pymysql._auth']"


def test_without_proxytop_pymysql_loads_cryptography():
    """The saving is real: PyMySQL alone loads it (so the test above can fail)."""
    assert python("import sys, pymysql; print('cryptography' in sys.modules)") == "True"


@pytest.fixture(scope="module")
def rsa_double(recording):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    double = ProxySQLDouble(recording=recording, sha2_rsa_key=key).start()
    yield double
    double.stop()


def test_a_server_that_asks_for_the_rsa_encrypted_password(rsa_double):
    before = rsa_double.rsa_logins
    result = subprocess.run(proxytop_command() + ["--batch", "--count", "1", "--screen", "connpool",
                                                  "--format", "json", "-P", str(rsa_double.port)],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[0])
    assert report["screen"] == "connpool" and report["rows"], report
    assert rsa_double.rsa_logins > before  # the password went encrypted with the double's key


def test_a_wrong_password_is_refused_after_the_rsa_exchange(rsa_double):
    before = rsa_double.rsa_logins
    result = subprocess.run(proxytop_command() + ["--batch", "--count", "1", "--screen", "connpool",
                                                  "-P", str(rsa_double.port), "-p", "wrong"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode != 0
    assert "Access denied" in result.stderr and "Traceback" not in result.stderr
    assert rsa_double.rsa_logins > before
