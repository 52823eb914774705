"""--batch: every screen in every format (structure and columns, not exact numbers), sort and
filter, exit statuses, a terminal's rich tables, pipes, and --record / --replay in batch."""
from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import time
from typing import Dict, List

import pytest

from proxytop.screens import all_screens
from proxytop.ui import batch
from tests.mariadb import free_port
from tests.proxysql_double import ProxySQLDouble
from tests.terminal import proxytop_command

SCREENS = {s.key: s for s in all_screens() if s.built}  # fresh instances: columns may change with data
MUST_HAVE_ROWS = ("connpool", "queryrules", "glostat", "proclist", "comcount", "innodb")


def command(*args: str) -> List[str]:
    return list(proxytop_command()) + list(args)


def run(*args: str, env=None, timeout: float = 60) -> subprocess.CompletedProcess:
    environment = dict(os.environ, **(env or {}))
    environment.pop("NO_COLOR", None)
    return subprocess.run(command(*args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=environment)


@pytest.fixture(scope="module")
def double(recording):
    started = ProxySQLDouble(recording=recording).start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def all_formats(double, mariadb, tmp_path_factory) -> Dict[str, str]:
    """`--batch --count 1 --screen all` in the three formats (run side by side), with the
    InnoDB screen watching the test MariaDB as well as the backends ProxySQL lists."""
    env = dict(os.environ, MYSQL_PWD=mariadb.password, XDG_STATE_HOME=str(tmp_path_factory.mktemp("state")))
    env.pop("NO_COLOR", None)
    started = {}
    for fmt in batch.FORMATS:
        started[fmt] = subprocess.Popen(
            command("--batch", "--count", "1", "--screen", "all", "--format", fmt, "-P", str(double.port),
                    "--mysql", mariadb.address, "--mysql-user", mariadb.user),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
    outputs = {}
    for fmt, process in started.items():
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, f"{fmt}: {err}"
        assert "Traceback" not in err
        outputs[fmt] = out
    return outputs


def screen_records(text: str) -> List[dict]:
    """The reports of JSON --batch output, without the events' own records (a MySQL server the
    double lists that cannot be reached is an event: docs/events.md)."""
    return [record for record in map(json.loads, text.splitlines()) if "screen" in record]


def json_reports(text: str) -> Dict[str, dict]:
    return {record["screen"]: record for record in screen_records(text)}


# ----- every screen, every format -----------------------------------------------------------

def test_json_has_every_screen_with_its_columns_and_raw_values(all_formats):
    reports = json_reports(all_formats["json"])
    assert set(reports) == set(SCREENS)
    for key, record in reports.items():
        declared = [c.key for c in SCREENS[key].columns]
        assert record["columns"] and len(set(record["columns"])) == len(record["columns"]), key
        assert record["columns"][0] == declared[0]
        assert record["title"] == SCREENS[key].title
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$", record["time"])
        for row in record["rows"]:
            assert list(row) == record["columns"]
            assert all(v is None or isinstance(v, (int, float, str, bool, list)) for v in row.values())
        if key in MUST_HAVE_ROWS:
            assert record["rows"], f"{key} has no rows"
    pool = reports["connpool"]["rows"]
    assert {r["server"] for r in pool} == {"127.0.0.1:3311", "127.0.0.1:3312", "127.0.0.1:3313"}
    assert all(isinstance(r["queries_s"], (int, float)) for r in pool)  # rates already, raw numbers
    assert reports["connpool"]["sort"] == "hostgroup" and not reports["connpool"]["descending"]
    innodb = {r["server"]: r for r in reports["innodb"]["rows"]}
    assert any(r["state"] == "DOWN" for r in innodb.values())  # the recording's backends don't exist here
    mariadb_row = [r for r in innodb.values() if r["flavour"] and "MariaDB" in r["flavour"]]
    assert mariadb_row and isinstance(mariadb_row[0]["age"], (int, float))


def test_csv_has_a_header_per_screen_and_raw_values(all_formats):
    rows = list(csv.reader(io.StringIO(all_formats["csv"])))
    header_lines = [r for r in rows if r[:2] == ["time", "screen"]]
    assert len(header_lines) == len(SCREENS)
    headers: Dict[str, List[str]] = {}
    data: Dict[str, List[List[str]]] = {}
    current = None
    for row in rows:  # with --count 1 each screen's header comes right before its rows
        if row[:2] == ["time", "screen"]:
            current = row
            continue
        headers.setdefault(row[1], current)
        data.setdefault(row[1], []).append(row)
    reports = json_reports(all_formats["json"])
    for key in MUST_HAVE_ROWS:
        assert headers[key][2:] == reports[key]["columns"], key  # the same columns as JSON
        assert all(len(r) == len(headers[key]) for r in data[key])
    pool = [dict(zip(headers["connpool"], r)) for r in data["connpool"]]
    assert all(re.fullmatch(r"-?\d+(\.\d+)?(e[+-]?\d+)?", r["queries_s"]) for r in pool)  # no units in CSV
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", r["time"]) for r in pool)


def test_plain_text_when_piped_shows_every_screen_with_titles_units_and_sort(all_formats):
    text = all_formats["table"]
    assert "\x1b[" not in text  # no colour codes in a pipe
    lines = text.splitlines()
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  proxytop 127\.0\.0\.1:\d+  ProxySQL 2\.7\.2", lines[0])
    reports = json_reports(all_formats["json"])
    for key, screen in SCREENS.items():
        title_line = next((i for i, line in enumerate(lines) if line.startswith(screen.title + "  sort ")), None)
        assert title_line is not None, f"no {screen.title} block"
        titles = {c.key: c.title.strip() for c in screen.columns}
        wanted = [titles[k] for k in reports[key]["columns"] if k in titles]
        header = next(line for line in lines[title_line:] if all(t in line for t in wanted[:3]))
        assert all(t in header for t in wanted), (key, header)
        assert "\u2191" in header or "\u2193" in header  # the sort column is marked
    pool = "\n".join(lines)
    assert re.search(r"127\.0\.0\.1:3311\s+ONLINE", pool)
    assert re.search(r"hostgroup 20 total", pool)  # subtotals as in the live view
    assert re.search(r"\d+(\.\d)?[KMG]? ", pool)


def test_rich_tables_on_a_terminal(proxytop_term, proxysql_double):
    # a double of its own: 127.0.0.1:3313 is shunned a minute into the recording
    term = proxytop_term("--batch", "--count", "1", "--screen", "connpool", "-P", str(proxysql_double.port), cols=150)
    assert term.wait_exit(30) == 0
    raw = term.output().decode("utf-8", "replace")
    assert "\x1b[" in raw  # styled
    screen = term.text()
    assert "ConnPool  sort HG asc  3 rows" in screen
    assert re.search(r"HG\u2191\s+Server\s+Status\s+Used", screen)
    assert "\u2500\u2500" in screen  # rich's rule under the titles
    assert re.search(r"127\.0\.0\.1:3313\s+ONLINE", screen)


# ----- sort, filter, count, interval --------------------------------------------------------

def test_sort_and_filter_as_in_the_live_view(double):
    result = run("--batch", "--count", "1", "--screen", "connpool", "--format", "json", "-P", str(double.port),
                 "--sort", "server:desc", "--filter", "hg=20")
    assert result.returncode == 0, result.stderr
    [record] = screen_records(result.stdout)
    assert [r["server"] for r in record["rows"]] == ["127.0.0.1:3313", "127.0.0.1:3312"]
    assert record["sort"] == "server" and record["descending"] and record["filter"] == "hg=20"


def test_count_reports_one_interval_apart(double):
    started = time.monotonic()
    result = run("--batch", "--count", "3", "--delay", "0.5", "--screen", "comcount", "--format", "json",
                 "--sort", "Count/s", "-P", str(double.port))
    assert result.returncode == 0, result.stderr
    records = screen_records(result.stdout)
    assert len(records) == 3 and all(r["screen"] == "comcount" for r in records)
    stamps = [r["timestamp"] for r in records]
    assert all(0.2 < b - a < 1.5 for a, b in zip(stamps, stamps[1:]))
    assert records[0]["sort"] == "rate" and records[0]["descending"]  # a numeric column: largest first
    rates = [r["rate"] for r in records[-1]["rows"] if r["rate"] is not None]
    assert rates == sorted(rates, reverse=True) and rates
    assert time.monotonic() - started < 15


def test_a_filter_for_some_screens_applies_where_it_fits(proxysql_double):
    # a double of its own: 127.0.0.1:3313 is shunned a minute into the recording
    result = run("--batch", "--count", "1", "--screen", "all", "--format", "json", "-P", str(proxysql_double.port),
                 "--filter", "status:SHUNNED", "--no-discover")
    assert result.returncode == 0, result.stderr
    reports = json_reports(result.stdout)
    assert reports["connpool"]["rows"] == [] and reports["connpool"]["filter"] == "status:SHUNNED"
    assert reports["glostat"]["rows"] and reports["glostat"]["filter"] is None


@pytest.mark.parametrize("args, message", [
    (["--batch", "--screen", "connpool", "--sort", "nosuch"], "no column 'nosuch'"),
    (["--batch", "--screen", "connpool", "--filter", "server:("], "bad regular expression"),
    (["--batch", "--screen", "all", "--sort", "nosuch"], "--sort nosuch"),
    (["--batch", "--count", "0"], "at least 1"),
    (["--count", "3"], "--count needs --batch"),
    (["--screen", "all"], "--screen all needs --batch"),
    (["--batch", "--format", "xml"], "invalid choice"),
    (["--format", "json"], "needs --batch"),
    (["--record", "a.gz", "--replay", "b.gz"], "can't be combined"),
    (["--speed", "2"], "--speed needs --replay"),
])
def test_usage_errors_exit_2(args, message):
    result = run(*args, "-P", "1")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("proxytop: error: ") and message in result.stderr
    assert result.stderr.endswith("(see proxytop --help)\n") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr and result.stdout == ""


# ----- exit statuses, pipes ---------------------------------------------------------------------

def test_cannot_connect_exits_1_with_the_reason_in_one_line():
    port = free_port()
    started = time.monotonic()
    result = run("--batch", "--count", "1", "-P", str(port), timeout=60)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"cannot connect to ProxySQL at 127.0.0.1:{port} after 3 attempts: connection refused" in lines[0]
    assert result.stdout == "" and time.monotonic() - started < 20


def test_every_mysql_server_down_exits_1_with_each_reason(mariadb):
    down = free_port()
    result = run("--batch", "--count", "1", "--mysql", f"127.0.0.1:{down}", "--mysql-user", "root", timeout=90)
    assert result.returncode == 1 and result.stdout == "", result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot connect to MySQL at 127.0.0.1:{down} after 3 attempts: " in lines[0], lines
    # one that answers: its rows, the other's row says it is down
    result = run("--batch", "--count", "1", "--format", "json", "--mysql", f"127.0.0.1:{down}",
                 "--mysql", mariadb.address, "--mysql-user", mariadb.user, "--mysql-password", mariadb.password,
                 timeout=90)
    assert result.returncode == 0, result.stderr


def test_a_screen_that_needs_no_proxysql_runs_without_it():
    result = run("--batch", "--count", "1", "--screen", "iostat", "-P", str(free_port()))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split("  ")[1].startswith("proxytop ")
    assert "IOstat  sort %util desc" in result.stdout and "avg-cpu" in result.stdout


def test_a_closed_pipe_ends_quietly(double):
    process = subprocess.Popen(command("--batch", "--screen", "glostat", "-P", str(double.port), "--delay", "0.5"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    first = process.stdout.readline()
    process.stdout.close()  # like `| head -1`
    _, err = process.communicate(timeout=20)
    assert first and process.returncode == 0
    assert b"Traceback" not in err and err == b""


def test_no_terminal_message_points_to_batch():
    result = run("-P", "1")
    assert result.returncode == 1 and "--batch" in result.stderr


# ----- recordings in batch ------------------------------------------------------------------------

def test_record_in_batch_then_replay_in_batch(double, tmp_path):
    path = str(tmp_path / "b.rec.gz")
    live = run("--batch", "--count", "3", "--screen", "connpool", "--format", "json", "-P", str(double.port),
               "--record", path)
    assert live.returncode == 0, live.stderr
    replayed = run("--replay", path, "--batch", "--screen", "connpool", "--format", "json")
    assert replayed.returncode == 0, replayed.stderr
    live_records = screen_records(live.stdout)
    replay_records = screen_records(replayed.stdout)
    assert len(replay_records) >= 2
    # the last live report and the replay's report at the same recorded moment agree (the
    # recording may end with a reading taken after that report: not necessarily the last one)
    assert live_records[-1]["rows"] in [r["rows"] for r in replay_records]
    assert replay_records[-1]["columns"] == live_records[-1]["columns"]
    missing = run("--replay", str(tmp_path / "nope.gz"), "--batch")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "cannot read the recording" in missing.stderr


def test_record_never_appends_to_a_file_that_is_not_a_recording(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("my notes\n")
    result = run("--batch", "--count", "1", "--record", str(path), "-P", str(free_port()))
    assert result.returncode == 2 and "is not a proxytop recording" in result.stderr
    assert result.stderr.count("\n") == 1 and path.read_text() == "my notes\n"


def test_worked_examples_in_the_docstrings():
    import doctest

    import proxytop.ui.batch as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_trends_in_batch_keep_the_charts_order(double):
    result = run("--batch", "--count", "1", "--screen", "trends", "--format", "json", "-P", str(double.port))
    assert result.returncode == 0, result.stderr
    [record] = screen_records(result.stdout)
    figures = [r["figure"] for r in record["rows"]]
    assert figures[:4] == ["Queries/s", "Latency p50 ms", "Latency p95 ms", "Client connections"], figures
    assert [r["place"] for r in record["rows"]] == list(range(1, len(figures) + 1))


def test_trends_read_the_disks_whatever_iostat_shows(double):
    # IOstat in its space view lists filesystems: Trends' busiest disk still comes from the devices
    result = run("--batch", "--count", "2", "--delay", "0.5", "--screen", "trends", "--format", "json",
                 "--iostat-view", "space", "-P", str(double.port))
    assert result.returncode == 0, result.stderr
    last = screen_records(result.stdout)[-1]
    figures = {r["figure"]: r["now"] for r in last["rows"]}
    assert isinstance(figures["Busiest disk %util"], (int, float)), figures
