"""The configuration file ([proxytop] defaults, [node:NAME] endpoints and proxytop @NAME),
login paths from an encrypted ~/.mylogin.cnf, --print-defaults, and the precedence of
command line > environment > login path > option files > configuration file > defaults."""
from __future__ import annotations

import re
import subprocess

import pytest

from proxytop import options
from proxytop.config import config_file
from proxytop.config.mysql_options import resolve_credentials
from proxytop.errors import OptionError
from tests.login_paths import write_login_file
from tests.terminal import proxytop_command

NODE_SECRET = "N0de-s3cret-PW"
LOGIN_SECRET = "L0gin-s3cret-PW"
MYSQL_LOGIN_SECRET = "MyL0gin-s3cret-PW"
CONFIG_MYSQL_SECRET = "Cfg-My5ql-s3cret"
SECRETS = (NODE_SECRET, LOGIN_SECRET, MYSQL_LOGIN_SECRET, CONFIG_MYSQL_SECRET)


@pytest.fixture
def home(tmp_path):
    """A home with a configuration file and a login file; the environment to run in."""
    (tmp_path / ".config" / "proxytop").mkdir(parents=True)
    return tmp_path


def env_for(home, **extra):
    environ = {"HOME": str(home)}
    environ.update(extra)
    return environ


def write_config(home, text: str):
    path = home / ".config" / "proxytop" / "proxytop.cnf"
    path.write_text(text, encoding="utf-8")
    return path


def parse_error(argv, environ, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        options.parse(argv, environ)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


# ----- [proxytop] -------------------------------------------------------------------------------

def test_proxytop_group_gives_defaults_for_long_options(home):
    write_config(home, "[proxytop]\ndelay = 2.5\nscreen = innodb\nno-color\nssl-mode = disabled\n"
                       "mysql = db1:3307, db2\nconnect_timeout = 5\n")
    config = options.parse([], env_for(home))
    assert (config.delay, config.screen, config.color) == (2.5, "innodb", False)
    assert config.endpoint.tls.mode == "DISABLED" and config.endpoint.timeout == 5.0
    assert config.args.mysql == [("db1", 3307), ("db2", 3306)]
    assert config.origins["ssl-mode"] == "configuration file"
    # the command line wins
    config = options.parse(["-d", "1", "--screen", "conn", "--ssl-mode", "REQUIRED"], env_for(home))
    assert (config.delay, config.screen, config.endpoint.tls.mode) == (1.0, "connpool", "REQUIRED")
    assert config.origins["ssl-mode"] == "command line"


def test_xdg_config_home_and_config_option_choose_the_file(home, tmp_path_factory):
    other = tmp_path_factory.mktemp("xdg")
    (other / "proxytop").mkdir()
    (other / "proxytop" / "proxytop.cnf").write_text("[proxytop]\ndelay = 7\n")
    write_config(home, "[proxytop]\ndelay = 3\n")
    assert options.parse([], env_for(home)).delay == 3
    assert options.parse([], env_for(home, XDG_CONFIG_HOME=str(other))).delay == 7
    named = other / "elsewhere.cnf"
    named.write_text("[proxytop]\ndelay = 9\n")
    assert options.parse(["--config", str(named)], env_for(home)).delay == 9


@pytest.mark.parametrize("text, message", [
    ("[proxytop]\nbogus = 1\n", "[proxytop] has no option 'bogus'"),
    ("[proxytop]\ndelay = soon\n", "delay: 'soon' is not a number of seconds"),
    ("[proxytop]\nscreen = nosuch\n", "screen: unknown screen 'nosuch'"),
    ("[proxytop]\nno-color = maybe\n", "no-color: 'maybe' is not on or off"),
    ("[proxytop]\nssl-mode = sometimes\n", "ssl-mode (configuration file): unknown TLS mode 'sometimes'"),
    ("[proxytop]\ndelay = 1\ndelay = 2\n", "option 'delay' in section 'proxytop' already exists"),
    ("delay = 1\n", "File contains no section headers"),
    ("[node:a]\nhostname = x\n", "[node:a] has no setting 'hostname'"),
    ("[node:a]\nport = 99999\n", None),  # only an error when @a is used (below)
])
def test_bad_configuration_files_are_one_line_usage_errors(home, capsys, text, message):
    write_config(home, text)
    if message is None:
        assert options.parse([], env_for(home)).endpoint.port == 6032
        line = parse_error(["@a"], env_for(home), capsys)
        assert "port ([node:a]): '99999' is not a port number" in line
        return
    line = parse_error([], env_for(home), capsys)
    assert message in line and (str(home) in line or "(configuration file)" in line)


def test_a_missing_file_is_fine_unless_named(home, capsys):
    assert options.parse([], env_for(home)).endpoint.port == 6032
    line = parse_error(["--config", str(home / "nope.cnf")], env_for(home), capsys)
    assert "configuration file not found" in line


# ----- named endpoints -----------------------------------------------------------------------------

def test_at_name_connects_to_a_node_and_the_command_line_and_environment_win(home, capsys):
    write_config(home, f"[proxytop]\nssl-mode = REQUIRED\nuser = fallback\n"
                       f"[node:prod-1]\nhost = 10.0.0.5\nport = 7032\nuser = radmin\npassword = \"{NODE_SECRET}\"\n"
                       f"[node:prod-2]\nhost = 10.0.0.6\n")
    config = options.parse(["@prod-1"], env_for(home))
    endpoint = config.endpoint
    assert (endpoint.host, endpoint.port, endpoint.user, endpoint.password) == ("10.0.0.5", 7032, "radmin", NODE_SECRET)
    assert endpoint.tls.mode == "REQUIRED"  # [proxytop] beneath the node
    assert config.origins["host"] == "[node:prod-1]" and config.origins["ssl-mode"] == "configuration file"
    assert options.parse(["@prod-2"], env_for(home)).endpoint.user == "fallback"
    config = options.parse(["@prod-1", "-P", "6032"], env_for(home, PROXYTOP_ADMIN_PASSWORD="from-env"))
    assert (config.endpoint.port, config.endpoint.password) == (6032, "from-env")
    assert config.origins["password"] == "environment"
    line = parse_error(["@prod-9"], env_for(home), capsys)
    assert "no endpoint @prod-9" in line and "endpoints there: prod-1, prod-2" in line
    line = parse_error(["prod-1"], env_for(home), capsys)
    assert "written @NAME" in line


def test_named_endpoint_for_other_code_with_a_login_path(home):
    write_login_file(str(home / ".mylogin.cnf"), {"proxysql-b": {"user": "lpuser", "password": LOGIN_SECRET,
                                                                 "host": "lp-host"}})
    write_config(home, "[proxytop]\nssl-mode = DISABLED\n"
                       "[node:a]\nhost = 10.0.0.5\nport = 6032\n"
                       "[node:b]\nhost = 10.0.0.6\nport = 6042\nlogin-path = proxysql-b\n")
    loaded = config_file.load(config_file.default_path(env_for(home)))
    assert loaded.node_names() == ["a", "b"]
    endpoints = [config_file.named_endpoint(name, env_for(home), config=loaded) for name in loaded.node_names()]
    assert [(e.host, e.port, e.user, e.tls.mode) for e in endpoints] == [
        ("10.0.0.5", 6032, "admin", "DISABLED"), ("10.0.0.6", 6042, "lpuser", "DISABLED")]
    assert endpoints[1].password == LOGIN_SECRET  # the node's host beats its login path's
    assert LOGIN_SECRET not in repr(endpoints[1])
    with pytest.raises(OptionError, match="no endpoint @c"):
        config_file.named_endpoint("c", env_for(home), config=loaded)


# ----- login paths ---------------------------------------------------------------------------------

def test_login_path_for_proxysql_and_for_the_mysql_servers(home, capsys):
    write_login_file(str(home / ".mylogin.cnf"), {
        "admin-lp": {"host": "10.1.1.1", "port": 16032, "user": "lpadmin", "password": LOGIN_SECRET},
        "mysql-lp": {"user": "lpdba", "password": MYSQL_LOGIN_SECRET},
    })
    config = options.parse(["--login-path", "admin-lp"], env_for(home))
    endpoint = config.endpoint
    assert (endpoint.host, endpoint.port, endpoint.user, endpoint.password) == ("10.1.1.1", 16032, "lpadmin",
                                                                                LOGIN_SECRET)
    assert config.origins["user"] == "login path admin-lp"
    assert options.parse(["--login-path", "admin-lp", "-u", "cli"], env_for(home)).endpoint.user == "cli"
    args = options.parse(["--mysql-login-path", "mysql-lp"], env_for(home)).args
    credentials = resolve_credentials(args, {}, home=str(home))
    assert (credentials.user, credentials.password, credentials.given) == ("lpdba", MYSQL_LOGIN_SECRET, True)
    assert credentials.origin == "login path mysql-lp"
    line = parse_error(["--login-path", "nosuch"], env_for(home), capsys)
    assert "login path 'nosuch' is not in" in line
    line = parse_error(["--login-path", "x"], env_for(home, MYSQL_TEST_LOGIN_FILE=str(home / "none.cnf")), capsys)
    assert "none.cnf not found" in line
    (home / "broken.cnf").write_bytes(b"\0\0\0\0" + b"k" * 20 + b"\x10\0\0\0" + b"x" * 7)
    line = parse_error(["--login-path", "x"], env_for(home, MYSQL_TEST_LOGIN_FILE=str(home / "broken.cnf")), capsys)
    assert line.startswith("proxytop: error: login path 'x'")


def test_mysql_credentials_from_the_configuration_file_rank_below_my_cnf_and_mysql_pwd(home):
    write_config(home, f"[proxytop]\nmysql-user = cfguser\nmysql-password = {CONFIG_MYSQL_SECRET}\n")
    args = options.parse([], env_for(home)).args
    credentials = resolve_credentials(args, {}, home=str(home))
    assert (credentials.user, credentials.password, credentials.origin) == ("cfguser", CONFIG_MYSQL_SECRET,
                                                                            "configuration file")
    assert resolve_credentials(args, {"MYSQL_PWD": "env-pw"}, home=str(home)).password == "env-pw"
    (home / ".my.cnf").write_text("[client]\nuser = mycnf\n")
    assert resolve_credentials(args, {}, home=str(home)).user == "mycnf"
    cli = options.parse(["--mysql-user", "cli"], env_for(home)).args
    assert resolve_credentials(cli, {}, home=str(home)).user == "cli"


# ----- --print-defaults ----------------------------------------------------------------------------

def run(*argv, environ):
    return subprocess.run(list(proxytop_command()) + list(argv), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=dict(environ, PATH=__import__("os").environ["PATH"]))


def test_print_defaults_shows_every_setting_and_its_origin_never_a_password(home):
    write_login_file(str(home / ".mylogin.cnf"), {"mysql-lp": {"user": "lpdba", "password": MYSQL_LOGIN_SECRET}})
    write_config(home, f"[proxytop]\ndelay = 2\nscreen = innodb\nmysql-login-path = mysql-lp\n"
                       f"[node:prod-1]\nhost = 10.0.0.5\nuser = radmin\npassword = {NODE_SECRET}\n")
    result = run("@prod-1", "--print-defaults", "--ssl-mode", "required", "--mysql", "db1",
                 environ=env_for(home, PROXYTOP_ADMIN_PASSWORD=LOGIN_SECRET))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"configuration file: {home}/.config/proxytop/proxytop.cnf" in out
    assert re.search(r"host\s+10\.0\.0\.5\s+\[node:prod-1\]", out)
    assert re.search(r"port\s+6032\s+default", out)
    assert re.search(r"password\s+\*\*\*\s+environment", out)
    assert re.search(r"ssl-mode\s+REQUIRED\s+command line", out)
    assert re.search(r"mysql-user\s+lpdba\s+login path mysql-lp", out)
    assert re.search(r"mysql-password\s+\*\*\*\s+login path mysql-lp", out)
    assert re.search(r"delay\s+2 s\s+configuration file", out)
    assert re.search(r"screen\s+innodb\s+configuration file", out)
    assert re.search(r"mysql\s+db1:3306\s+command line", out)
    assert not [secret for secret in SECRETS if secret in out + result.stderr]
    assert "others can read it" in out  # written with the default umask: 0644
    (home / ".config" / "proxytop" / "proxytop.cnf").chmod(0o600)
    private = run("--print-defaults", environ=env_for(home))
    assert private.returncode == 0 and "others can read it" not in private.stdout
    prompt = run("--print-defaults", "-p", environ=env_for(home))
    assert prompt.returncode == 0 and re.search(r"password\s+\(asked at start\)", prompt.stdout)


def test_at_name_in_the_terminal_with_the_password_from_a_login_path(home, proxysql_double, proxytop_term):
    write_login_file(str(home / ".mylogin.cnf"), {"double": {"user": "radmin", "password": "radmin"}})
    write_config(home, f"[node:local]\nhost = 127.0.0.1\nport = {proxysql_double.port}\nlogin-path = double\n")
    term = proxytop_term("@local", env={"HOME": str(home)})
    term.wait_until(lambda s: f"127.0.0.1:{proxysql_double.port}" in s and "connected" in s
                    and "127.0.0.1:3311" in s, timeout=15, what="the node's connection pool")
    term.send("q")
    assert term.wait_exit(10) == 0
    assert proxysql_double.queries("radmin")


def test_connection_files_are_not_recorded_and_a_replay_does_not_need_them(home):
    from proxytop.recordings.recording import recorded_options
    from proxytop.screens.innodb import InnoDBScreen

    write_login_file(str(home / ".mylogin.cnf"), {"mysql-lp": {"user": "lpdba", "password": MYSQL_LOGIN_SECRET}})
    config = options.parse(["--mysql", "db1", "--mysql-login-path", "mysql-lp", "--ssl-mode", "DISABLED"],
                           env_for(home))
    recorded = recorded_options(config.args)
    assert recorded["mysql"] == [["db1", 3306]]
    assert not {"mysql_login_path", "ssl_mode", "configured", "given", "config_file"} & set(recorded)
    (home / ".mylogin.cnf").unlink()  # replayed elsewhere: the login path is gone
    screen = InnoDBScreen(config)
    assert list(screen.servers) == ["db1:3306"] and MYSQL_LOGIN_SECRET not in repr(screen.credentials)
