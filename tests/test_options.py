import pytest

from proxytop import options
from proxytop.ui.controller import step_interval


def write(tmp_path, text):
    path = tmp_path / "my.cnf"
    path.write_text(text)
    return str(path)


def test_built_in_defaults():
    config = options.parse([], {})
    endpoint = config.endpoint
    assert (endpoint.host, endpoint.port, endpoint.user, endpoint.password) == ("127.0.0.1", 6032, "admin", "admin")
    assert config.delay == 1.0 and config.screen == "connpool" and config.color


def test_defaults_file_groups_later_wins(tmp_path):
    path = write(tmp_path, "[client]\nuser=ignored\n[proxysqladmin]\nhost=10.0.0.5\nport=7032\nuser=radmin\n"
                           "password=\"from file\"\n[proxytop]\nport=6033\n")
    endpoint = options.parse(["-f", path], {}).endpoint
    assert (endpoint.host, endpoint.port, endpoint.user, endpoint.password) == ("10.0.0.5", 6033, "radmin", "from file")


def test_precedence_command_line_over_environment_over_file(tmp_path):
    path = write(tmp_path, "[proxysqladmin]\npassword=file\nuser=fileuser\n")
    env = {"PROXYTOP_ADMIN_PASSWORD": "env"}
    assert options.parse(["-f", path], {}).endpoint.password == "file"
    config = options.parse(["-f", path], env)
    assert config.endpoint.password == "env" and config.origins["password"] == "environment"
    config = options.parse(["-f", path, "-p", "cli", "-u", "cliuser"], env)
    assert config.endpoint.password == "cli" and config.endpoint.user == "cliuser"
    assert config.origins["user"] == "command line"


def test_password_prompt_when_p_has_no_value():
    asked = []
    config = options.parse(["-p"], {}, prompt=lambda text: asked.append(text) or "typed")
    assert config.endpoint.password == "typed" and asked


def test_password_is_not_in_the_endpoint_repr():
    config = options.parse(["-p", "s3cret"], {})
    assert "s3cret" not in repr(config.endpoint)


def test_no_color_flag_and_environment():
    assert not options.parse(["--no-color"], {}).color
    assert not options.parse([], {"NO_COLOR": "1"}).color


@pytest.mark.parametrize("argv", [["-P", "99999"], ["-P", "abc"], ["-d", "0"], ["-d", "x"],
                                  ["--screen", "nosuch"], ["--bogus"]])
def test_bad_options_exit_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) as info:
        options.parse(argv, {})
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("proxytop: error: ") and err.endswith(" (see proxytop --help)\n") and err.count("\n") == 1


def test_missing_defaults_file_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        options.parse(["-f", "/nonexistent/x.cnf"], {})
    assert info.value.code == 2
    assert "defaults file not found" in capsys.readouterr().err


def test_screen_names_accept_prefixes_and_fractions_of_seconds():
    config = options.parse(["--screen", "conn", "-d", "0.5"], {})
    assert config.screen == "connpool" and config.delay == 0.5


def test_interval_ladder():
    assert step_interval(0.5, -1) == 0.5
    assert step_interval(60, +1) == 60
    assert step_interval(1, -1, minimum=2.0) == 2.0
