"""proxytop @NAME -p and proxytop -p @NAME mean the same: ask for the password, connect to the
endpoint [node:NAME] of the configuration file. A password that starts with @ is given attached."""
from __future__ import annotations

import re
import subprocess

from proxytop import options
from proxytop.config import mysql_options
from tests.terminal import proxytop_command

CONFIG = "[node:prod-1]\nhost = 10.0.0.5\nport = 7032\nuser = radmin\n[node:prod-2]\nhost = 10.0.0.6\n"


def environment(tmp_path):
    folder = tmp_path / ".config" / "proxytop"
    folder.mkdir(parents=True)
    (folder / "proxytop.cnf").write_text(CONFIG, encoding="utf-8")
    return {"HOME": str(tmp_path)}


def parsed(argv, environ):
    asked = []
    config = options.parse(argv, environ, prompt=lambda text: asked.append(text) or "typed-pw")
    endpoint = config.endpoint
    return (endpoint.host, endpoint.port, endpoint.user, endpoint.password), asked


def test_the_endpoint_before_or_after_a_bare_p_is_the_same(tmp_path):
    environ = environment(tmp_path)
    before, asked_before = parsed(["@prod-1", "-p"], environ)
    after, asked_after = parsed(["-p", "@prod-1"], environ)
    assert before == after == ("10.0.0.5", 7032, "radmin", "typed-pw")
    assert len(asked_before) == len(asked_after) == 1  # the password was asked for, once
    assert parsed(["--password", "@prod-2", "--batch"], environ)[0][:2] == ("10.0.0.6", 6032)


def test_a_password_given_is_still_the_password(tmp_path):
    environ = environment(tmp_path)
    assert parsed(["-p", "s3cret", "@prod-1"], environ) == (("10.0.0.5", 7032, "radmin", "s3cret"), [])
    assert parsed(["@prod-1", "-p", "s3cret"], environ)[0][3] == "s3cret"
    # attached, a password may start with @ (no endpoint @x is looked for)
    assert parsed(["-p@x"], environ) == (("127.0.0.1", 6032, "admin", "@x"), [])
    assert parsed(["--password=@x", "@prod-1"], environ)[0] == ("10.0.0.5", 7032, "radmin", "@x")


def test_the_mysql_password_prompt_before_the_endpoint(tmp_path):
    environ = environment(tmp_path)
    config = options.parse(["--mysql", "db1", "--mysql-password", "@prod-1"], environ, prompt=lambda text: "typed")
    assert config.endpoint.host == "10.0.0.5"
    assert config.args.mysql_password is mysql_options.PROMPT  # asked for, not "@prod-1"


def test_print_defaults_with_p_before_the_endpoint(tmp_path):
    result = subprocess.run(list(proxytop_command()) + ["-p", "@prod-1", "--print-defaults"], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL,
                            env=dict(environment(tmp_path), PATH=__import__("os").environ["PATH"]))
    assert result.returncode == 0, result.stderr
    assert re.search(r"host\s+10\.0\.0\.5\s+\[node:prod-1\]", result.stdout)
    assert re.search(r"password\s+\(asked at start\)", result.stdout)
