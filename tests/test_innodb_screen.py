"""InnoDB screen options and credentials, and the installed proxytop in a pseudo-terminal:
discovery through the ProxySQL double, the password prompt, and no password anywhere."""
from __future__ import annotations

import argparse
import re

import pytest

from proxytop import options
from proxytop.config.mysql_options import PROMPT, resolve_credentials, server_address
from proxytop.screens.innodb import InnoDBScreen
from tests.test_innodb_live import point_double_at


def namespace(**given):
    values = dict(mysql_user=None, mysql_password=None, mysql_defaults_file=None)
    values.update(given)
    return argparse.Namespace(**values)


def write_cnf(path, body):
    path.write_text(body, encoding="utf-8")
    return str(path)


# ----- credentials as the mysql client takes them ------------------------------------------------

def test_command_line_beats_defaults_file_beats_mysql_pwd(tmp_path):
    cnf = write_cnf(tmp_path / "my.cnf", "[client]\nuser = filer\npassword = from-file\n[mysql]\nuser = ignored\n")
    env = {"MYSQL_PWD": "from-env"}
    both = resolve_credentials(namespace(mysql_user="cli", mysql_password="from-cli", mysql_defaults_file=cnf), env)
    assert (both.user, both.password, both.given, both.origin) == ("cli", "from-cli", True, "command line")
    from_file = resolve_credentials(namespace(mysql_defaults_file=cnf), env)
    assert (from_file.user, from_file.password, from_file.origin) == ("filer", "from-file", "defaults file")
    user_only = resolve_credentials(namespace(mysql_user="cli"), env, home=str(tmp_path / "none"))
    assert (user_only.user, user_only.password) == ("cli", "from-env")


def test_home_my_cnf_is_read_and_nothing_given_means_not_given(tmp_path):
    write_cnf(tmp_path / ".my.cnf", "[client]\npassword = home-secret\n")
    found = resolve_credentials(namespace(), {}, home=str(tmp_path))
    assert found.password == "home-secret" and found.given
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = resolve_credentials(namespace(), {}, home=str(empty))
    assert not nothing.given and nothing.password == "" and nothing.user  # the login name
    assert "home-secret" not in repr(found)


def test_password_without_a_value_prompts_once(tmp_path):
    asked = []

    def prompt(text):
        asked.append(text)
        return "typed-secret"

    found = resolve_credentials(namespace(mysql_password=PROMPT, mysql_user="dba"), {"MYSQL_PWD": "x"}, prompt,
                                home=str(tmp_path))
    assert asked == ["MySQL password: "] and found.password == "typed-secret"


def test_screen_prompts_at_construction_and_ctrl_c_exits_cleanly(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    config = options.parse(["--mysql", "db1:3307", "--mysql-password"], {})
    screen = InnoDBScreen(config, prompt=lambda text: "p-from-prompt")
    assert screen.servers["db1:3307"].endpoint.password == "p-from-prompt"
    assert "p-from-prompt" not in repr(screen.servers["db1:3307"].endpoint)

    def interrupted(text):
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as exit_info:
        InnoDBScreen(config, prompt=interrupted)
    assert exit_info.value.code == 130


def test_server_addresses_and_option_errors(capsys):
    assert server_address("db-1.example.com:3310") == ("db-1.example.com", 3310)
    assert server_address("[2001:db8::1]") == ("2001:db8::1", 3306)
    for bad in ("db:99999", "db:x", ":3306"):
        with pytest.raises(argparse.ArgumentTypeError):
            server_address(bad)
    with pytest.raises(SystemExit) as exit_info:
        options.parse(["--mysql-defaults-file", "/nonexistent/my.cnf"], {})
    assert exit_info.value.code == 2
    assert "defaults file not found" in capsys.readouterr().err


def test_explicit_servers_become_sources_and_collectors(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    config = options.parse(["-P", "6032", "--mysql", "db1", "--mysql", "db1:3306", "--mysql-socket", "/run/mysqld/mysqld.sock",
                            "--mysql-user", "dba", "--mysql-password", "pw", "--connect-timeout", "2"], {})
    screen = InnoDBScreen(config)
    assert list(screen.servers) == ["db1:3306", "/run/mysqld/mysqld.sock"]  # duplicates merged
    assert [s.name for s in screen.sources()] == ["mysql:db1:3306", "mysql:/run/mysqld/mysqld.sock"]
    names = [c.name for c in screen.collectors()]
    assert names[0] == "innodb.discovery"
    assert "innodb.vars.db1:3306" in names and "innodb.engine./run/mysqld/mysqld.sock" in names
    assert all(s.endpoint.timeout == 2.0 and s.endpoint.user == "dba" for s in screen.servers.values())
    no_discovery = InnoDBScreen(options.parse(["--no-discover"], {}))
    assert [c.name for c in no_discovery.collectors()] == []


def test_the_kept_order_follows_new_rows_and_a_changed_sort(tmp_path, monkeypatch):
    """The order is kept while the sort column's values stay, given to the rows made since;
    a changed value, another sort or a filter arrange again."""
    from proxytop.screens import filters
    from proxytop.screens.table import TableState

    monkeypatch.setenv("HOME", str(tmp_path))
    screen = InnoDBScreen(options.parse(["--no-discover"], {}))

    def made(ages):
        return [{"_id": key, "server": key, "age_pct": age} for key, age in ages.items()]

    by_age = TableState(sort_key="age_pct", descending=True)
    first = made({"db1": 10.0, "db2": 50.0, "db3": 30.0})
    assert [r["_id"] for r in screen.arrange(first, by_age)] == ["db2", "db3", "db1"]
    again = made({"db1": 10.0, "db2": 50.0, "db3": 30.0})  # new rows, same values: the kept order
    arranged = screen.arrange(again, by_age)
    assert [r["_id"] for r in arranged] == ["db2", "db3", "db1"] and all(r in again for r in arranged)
    moved = made({"db1": 90.0, "db2": 50.0, "db3": 30.0})
    assert [r["_id"] for r in screen.arrange(moved, by_age)] == ["db1", "db2", "db3"]
    by_server = TableState(sort_key="server")
    assert [r["_id"] for r in screen.arrange(moved, by_server)] == ["db1", "db2", "db3"]
    assert [r["_id"] for r in screen.arrange(moved, by_age.with_sort("age_pct", False))] == ["db3", "db2", "db1"]
    filtered = TableState(sort_key="server", filter=filters.parse("db2", screen.columns))
    assert [r["_id"] for r in screen.arrange(moved, filtered)] == ["db2"]


# ----- the installed program --------------------------------------------------------------------

def test_terminal_discovers_the_test_mariadb_through_the_double(mariadb, proxysql_double, proxytop_term, tmp_path):
    mariadb.create_user("tmon", "tmon-secret-5", ["USAGE"])
    point_double_at(proxysql_double, mariadb, "tmon", "tmon-secret-5")
    log_file = tmp_path / "proxytop.log"
    term = proxytop_term("-P", str(proxysql_double.port), "--screen", "innodb", "--log-file", str(log_file),
                         cols=200, rows=30, env={"HOME": str(tmp_path), "MYSQL_PWD": ""})
    key = mariadb.address
    # OK comes with the first status reading, "needs PROCESS" with the engine reading after it
    screen = term.wait_until(lambda s: re.search(re.escape(key) + r"\s+10,20 ONLINE\s+MariaDB 10\.\d+\s+OK", s)
                             is not None and "needs PROCESS: PendW, by type" in s
                             and "read as ProxySQL's monitor user 'tmon'" in s,
                             timeout=20, what="the discovered server's row and what needs PROCESS")
    term.send("\r")
    detail = term.wait_until(lambda s: "pending writes" in s and "needs PROCESS" in s, timeout=10,
                             what="the detail panel")
    assert "from runtime_mysql_servers: hostgroup 10 ONLINE, 20 ONLINE" in detail and "user tmon" in detail
    term.send("\x1b")
    term.wait_for("HG/Status")
    term.send("q")
    assert term.wait_exit() == 0
    assert "tmon-secret-5" not in screen + detail
    assert "tmon-secret-5" not in log_file.read_text(encoding="utf-8", errors="replace")
    print("\n" + screen)


def test_terminal_prompts_for_the_mysql_password_before_the_screen(mariadb, proxytop_term, tmp_path):
    key = mariadb.address
    term = proxytop_term("-P", "1", "--screen", "innodb", "--no-discover", "--mysql", key,
                         "--mysql-user", mariadb.user, "--mysql-password", cols=160, rows=24,
                         env={"HOME": str(tmp_path)})
    term.wait_for("MySQL password:")
    term.send(mariadb.password + "\r")
    screen = term.wait_until(lambda s: re.search(re.escape(key) + r".*MariaDB 10\.\d+\s+OK", s) is not None,
                             timeout=15, what="the server's row after the prompt")
    assert mariadb.password not in screen
