"""The command line as a user meets it: usage errors, no terminal, small and resized terminals."""
import re
import subprocess
import sys

import pytest

from tests.terminal import proxytop_command


def run(*args, **kwargs):
    return subprocess.run(list(proxytop_command()) + list(args), capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL, **kwargs)


def test_version_and_help():
    result = run("--version")
    assert result.returncode == 0 and re.match(r"proxytop \d+\.\d+", result.stdout)
    result = run("--help")
    assert result.returncode == 0 and "--defaults-file" in result.stdout and "-d SECONDS" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--delay", "fast"], "argument -d/--delay: 'fast' is not a number of seconds"),
    (["-P", "notaport"], "argument -P/--port: 'notaport' is not a port number"),
    (["-d", "0"], "argument -d/--delay: the interval must be between 0.1 and 3600 seconds"),
    (["--screen", "foo"], "argument --screen: unknown screen 'foo'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_option_is_one_line_on_stderr_exit_2(args, message):
    """The line that matters and where to read more, not argparse's usage of every option."""
    result = run(*args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "usage:" not in result.stderr
    assert result.stderr.startswith(f"proxytop: error: {message}")
    assert result.stderr.endswith(" (see proxytop --help)\n")


def test_no_terminal_is_one_line_and_no_traceback():
    result = run("-P", "1")
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a terminal" in lines[0]
    assert "Traceback" not in result.stderr


def test_python_dash_m_works_too():
    result = subprocess.run([sys.executable, "-m", "proxytop", "--version"], capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 0 and "proxytop" in result.stdout


def test_80x24_fits_and_columns_give_way(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), cols=80, rows=24)
    screen = term.wait_for("127.0.0.1:3313")
    lines = screen.splitlines()
    assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
    header = next(line for line in lines if "Server" in line and "Status" in line)
    assert "Queries/s" in header and "Comment" not in header  # low-priority columns gave way
    assert "q quit" in lines[-1]


def test_resize_while_running(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), cols=120, rows=30)
    term.wait_for("127.0.0.1:3313")
    term.resize(40, 10)
    # the program's own 40-column rendering: every tab's key, the current one's title
    screen = term.wait_until(lambda s: "1:ConnPool 2 3 4 5 6 7 8 9 0 T E\n" in s
                             and "q quit" in s.splitlines()[-1], what="small screen")  # the whole frame drawn
    assert len(screen.splitlines()) == 10 and "q quit" in screen.splitlines()[-1]
    term.resize(200, 50)
    # the wide terminal shows every column again
    term.wait_until(lambda s: "Comment" in s and "reader-a" in s, what="all columns")
    term.send("q")
    assert term.wait_exit(5) == 0


def test_an_unexpected_error_is_one_line_without_traceback(proxytop_term, proxysql_double):
    # A terminal type curses cannot drive makes the UI fail at start-up: the error must come
    # out as one plain line, not a traceback.
    term = proxytop_term("-P", str(proxysql_double.port), env={"TERM": "no-such-terminal-type"})
    code = term.wait_exit(10)
    out = term.output().decode("utf-8", "replace")
    assert code == 1
    assert "Traceback" not in out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("proxytop: error:"), out
