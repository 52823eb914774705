"""Shared fixtures: the ProxySQL admin test double and the terminal harness."""
from __future__ import annotations

import os

import pytest

from tests.proxysql_double import ProxySQLDouble, Recording
from tests.terminal import Terminal
from tests.mariadb import mariadb  # noqa: F401

pytest.register_assert_rewrite("tests.test_safety")
from tests.test_safety import install_statement_audit, move_suite_checks_last  # noqa: E402

install_statement_audit()  # every double's and MariaDB's statements of the run are checked (test_safety)


def pytest_collection_modifyitems(session, config, items):
    move_suite_checks_last(items)  # the suite-wide statement checks run after every other test


@pytest.fixture(scope="session")
def recording():
    return Recording.load()


@pytest.fixture
def proxysql_double(recording):
    double = ProxySQLDouble(recording=recording).start()
    yield double
    double.stop()


@pytest.fixture
def proxytop_term(tmp_path):
    """Factory: proxytop_term(*args, cols=120, rows=40, env=None) -> Terminal (closed at teardown)."""
    started = []

    def start(*args, cols=120, rows=40, env=None):
        environment = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": os.environ.get("HOME", str(tmp_path))}
        environment.update(env or {})
        term = Terminal(list(args), cols=cols, rows=rows, env=environment)
        started.append(term)
        return term

    yield start
    for term in started:
        term.close()
