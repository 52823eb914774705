"""The filter's figures in the units the screens show: ``time>2s`` on Sessions compares with
2,000 of the column's milliseconds, a bare figure on a duration is seconds, ``free<10GiB`` and
``sent>1MiB/s`` read sizes and rates, a unit of the wrong kind is one error line. The pure
parts first, then Sessions over a real MariaDB in a terminal and in --batch."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import threading
import time
from pathlib import Path

import pymysql
import pytest

from proxytop.metrics.quantities import UnitError, read, unit
from proxytop.screens import filters, table
from proxytop.screens.table import Column
from proxytop.ui.view import column_help
from tests.terminal import ENTER, proxytop_command
from tests.test_sessions import mysql_args, session_line

SCREENS = Path(__file__).resolve().parent.parent / "screens"


# ----- reading a figure in a column's unit --------------------------------------------------------

@pytest.mark.parametrize("typed, column_unit, expected, shown", [
    ("2s", "ms", 2000.0, "2 s"),
    ("1", "ms", 1000.0, "1 s"),  # a bare figure on a duration: seconds
    ("250ms", "s", 0.25, "250 ms"),
    ("250MS", "ms", 250.0, "250 ms"),
    ("586us", "ms", 0.586, "586 µs"),
    ("586µs", "us", 586.0, "586 µs"),
    ("1.5m", "s", 90.0, "1.5 min"),
    ("2min", "ms", 120000.0, "2 min"),
    ("2h", "s", 7200.0, "2 h"),
    ("1d", "s", 86400.0, "1 d"),
    ("-2s", "s", -2.0, "-2 s"),
])
def test_durations_are_read_in_the_columns_unit(typed, column_unit, expected, shown):
    assert read(typed, column_unit) == pytest.approx((expected, shown))


@pytest.mark.parametrize("typed, column_unit, expected, shown", [
    ("512", "B", 512.0, "512 B"),  # a bare figure on a size: bytes
    ("512B", "B", 512.0, "512 B"),
    ("2K", "B", 2048.0, "2 KiB"),  # K/M/G as screens print sizes: binary
    ("2kib", "B", 2048.0, "2 KiB"),
    ("2KB", "B", 2048.0, "2 KiB"),
    ("1.5M", "B", 1.5 * 1024 ** 2, "1.5 MiB"),
    ("10MiB", "B", 10 * 1024 ** 2, "10 MiB"),
    ("2G", "B", 2 * 1024 ** 3, "2 GiB"),
    ("1TiB", "B", 1024 ** 4, "1 TiB"),
    ("4MiB", "KiB", 4096.0, "4 MiB"),
])
def test_sizes_are_read_in_binary_multiples(typed, column_unit, expected, shown):
    assert read(typed, column_unit) == pytest.approx((expected, shown))


@pytest.mark.parametrize("typed, column_unit, bare, expected, shown", [
    ("1MiB/s", "B/s", "", 1024.0 ** 2, "1 MiB/s"),
    ("1MiB", "B/s", "", 1024.0 ** 2, "1 MiB/s"),  # without a /: the column's own /s
    ("100", "B/s", "", 100.0, "100 B/s"),
    ("1GiB/h", "B/h", "", 1024.0 ** 3, "1 GiB/h"),
    ("1MiB/s", "B/h", "", 3600 * 1024.0 ** 2, "1 MiB/s"),  # a rate in another time unit is converted
    ("60KiB/m", "KiB/s", "", 1.0, "60 KiB/m"),
    ("100", "KiB/s", "KiB/s", 100.0, "100 KiB/s"),  # iostat's rkB/s: a bare figure is its title's kB
    ("500ms/s", "ms/s", "", 500.0, "500 ms/s"),  # Time/s: query time per second
    ("0.5", "ms/s", "", 500.0, "0.5 s/s"),
])
def test_rates_follow_their_base_unit(typed, column_unit, bare, expected, shown):
    assert read(typed, column_unit, bare) == pytest.approx((expected, shown))


@pytest.mark.parametrize("typed, column_unit, problem", [
    ("5MiB", "ms", "'5MiB' is not a duration"),
    ("5s", "B", "'5s' is not a size"),
    ("5x", "s", "'5x' is not a duration"),
    ("abc", "B", "'abc' is not a size"),
    ("1.2.3s", "s", "'1.2.3s' is not a duration"),
    ("1MiB/s", "B", "'1MiB/s' is a rate; this column is not"),
    ("1MiB/d", "B/s", "'1MiB/d': per what? (/s, /m or /h)"),
    ("5/s", "B/s", "'5/s': a rate needs a unit before the /"),
])
def test_a_unit_that_does_not_fit_is_refused(typed, column_unit, problem):
    with pytest.raises(UnitError) as info:
        read(typed, column_unit)
    assert str(info.value) == problem


def test_a_columns_unit_names_its_kind_and_its_rate():
    assert (unit("ms").kind, unit("ms").factor, unit("ms").per) == ("duration", 0.001, None)
    assert (unit("KiB/s").kind, unit("KiB/s").factor, unit("KiB/s").per) == ("size", 1024.0, 1.0)
    with pytest.raises(ValueError):
        unit("widgets")


# ----- the filter on columns with units ---------------------------------------------------------------

COLUMNS = [Column("id", "Id", 8), Column("user", "User", 10, "<", numeric=False),
           Column("time_ms", "Time", 7, unit="ms"), Column("free", "Free", 8, unit="B"),
           Column("sent_s", "Sent/s", 8, unit="B/s"), Column("conn", "Conn", 5)]
ROWS = [{"id": 1, "user": "app", "time_ms": 240, "free": 5 * 1024 ** 3, "sent_s": 2048.0, "conn": 1500},
        {"id": 2, "user": "app", "time_ms": 22800, "free": 20 * 1024 ** 3, "sent_s": 3 * 1024.0 ** 2, "conn": 10}]


def kept(text: str) -> list:
    return [row["id"] for row in table.filter_rows(ROWS, COLUMNS, filters.parse(text, COLUMNS))]


def test_a_bare_time_is_seconds_as_the_column_shows_them_not_its_milliseconds():
    # the report: /time>1 kept a session shown as 240ms
    assert kept("time>1") == [2]
    assert kept("time>1s") == [2] and kept("time>200ms") == [1, 2] and kept("time<1s") == [1]
    assert kept("time>=22.8s") == [2] and kept("time>0.5m") == [] and kept("time<1h") == [1, 2]


def test_sizes_and_rates_in_units():
    assert kept("free<10GiB") == [1] and kept("free<10G") == [1] and kept("free>6442450944") == [2]
    assert kept("sent>1MiB/s") == [2] and kept("sent>1MiB") == [2] and kept("sent<4K") == [1]


def test_a_count_keeps_its_decimal_suffixes():
    assert kept("conn>=1.5k") == [1] and kept("conn<1k") == [2]


def test_the_filter_says_how_it_read_each_figure():
    flt = filters.parse('time>2 user:app "x y" sent>1M conn>1k', COLUMNS)
    assert flt.described == 'Time > 2 s user:app "x y" Sent/s > 1 MiB/s conn>1k'
    assert filters.parse("user:app conn>1k", COLUMNS).described == "user:app conn>1k"  # as typed


@pytest.mark.parametrize("text, message", [
    ("time>5MiB", "'5MiB' is not a duration: time> compares durations in us, ms, s, m, h (a bare figure: s; e.g. time>2s)"),
    ("free<2s", "'2s' is not a size: free< compares sizes in B, K/KiB, M/MiB, G/GiB, T/TiB "
                "(a bare figure: B; e.g. free<10MiB)"),
    ("sent>fast", "'fast' is not a size: sent> compares sizes in B, K/KiB, M/MiB, G/GiB, T/TiB "
                  "(a bare figure: B/s; e.g. sent>10MiB)"),
    ("conn>5s", "'5s' is not a number: conn> compares numbers (e.g. conn>100, 1.5k)"),
])
def test_a_unit_that_does_not_fit_the_column_is_one_plain_line(text, message):
    with pytest.raises(filters.FilterError) as info:
        filters.parse(text, COLUMNS)
    assert str(info.value) == message and "\n" not in message


def test_the_help_names_what_a_bare_figure_means():
    assert column_help(Column("time_ms", "Time", 7, unit="ms", help="statement time")) == \
        "statement time (filter: a bare number is s)"
    assert column_help(Column("rkb_s", "rkB/s", 9, unit="KiB/s", bare_unit="KiB/s")) == "filter: a bare number is KiB/s"
    assert column_help(Column("conn", "Conn", 5, help="connections")) == "connections"


# Formatters whose figures are durations or sizes: a column using one must say its unit.
DURATION_OR_SIZE = {"units.duration", "units.milliseconds", "units.microseconds", "units.size", "units.age",
                    "time_text", "per_second_ms", "lag_text", "in_state_text", "kib", "per_hour", "left",
                    "age", "age_text", "histogram.format_bound"}


def test_every_column_of_durations_or_sizes_declares_its_unit():
    missing, declared = [], 0
    for path in sorted(SCREENS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Column"):
                continue
            keywords = {k.arg: k.value for k in node.keywords}
            fmt = keywords.get("fmt")
            if fmt is None or ast.unparse(fmt) not in DURATION_OR_SIZE:
                continue
            if "unit" in keywords:
                unit(ast.literal_eval(keywords["unit"]))  # a unit the filter knows
                declared += 1
            else:
                missing.append(f"{path.name}:{node.lineno}")
    assert not missing and declared >= 50, missing


# ----- Sessions over a real MariaDB -----------------------------------------------------------------

class Sleeper:
    """A session running ``SELECT SLEEP(3)`` again and again until stopped: the Sessions screen
    always shows it with a time between 0 and 3 s."""

    def __init__(self, server):
        self.server, self.conn = server, server.connect()
        self.id = self.conn.thread_id()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with self.conn.cursor() as cursor:
                while not self.stopping.is_set():
                    cursor.execute("SELECT SLEEP(3)")
                    cursor.fetchall()
        except pymysql.err.Error:
            pass

    def stop(self) -> None:
        self.stopping.set()
        self.server.query(f"KILL CONNECTION {self.id}")
        self.thread.join(10)


def test_sessions_time_filter_in_seconds_keeps_and_drops_a_sleeping_session(proxytop_term, mariadb):
    sleeper = Sleeper(mariadb)
    try:
        term = proxytop_term(*mysql_args(mariadb), "--screen", "sessions", cols=200, rows=30)
        term.wait_until(lambda s: "SLEEP(3)" in session_line(s, sleeper.id), timeout=20, what="the sleeping session")
        term.send("/")
        term.send(f"id={sleeper.id} time>2s" + ENTER)
        # kept once its time passes 2 s (its statement runs 3 s, again and again)
        screen = term.wait_until(lambda s: re.search(r"\b2\.\d+s\b", session_line(s, sleeper.id)) is not None,
                                 timeout=30, what="the session past 2 s, kept by time>2s")
        assert f"filter id={sleeper.id} Time > 2 s" in screen
        term.send("\\")
        term.send("/")
        term.send(f"id={sleeper.id} time>5s" + ENTER)  # it never runs 5 s: dropped
        screen = term.wait_until(lambda s: re.search(rf"filter id={sleeper.id} Time > 5 s\s+0/\d+", s) is not None,
                                 what="time>5s dropping it")
        assert session_line(screen, sleeper.id) == ""
        term.send("\\")
        term.send("/")
        term.send(f"id={sleeper.id} time>5" + ENTER)  # a bare figure is seconds too, not 5 ms
        term.wait_until(lambda s: re.search(rf"filter id={sleeper.id} Time > 5 s\s+0/\d+", s) is not None,
                        what="time>5 read as 5 s")
        term.send("\\")
        term.send("/")
        term.send("time>5MiB" + ENTER)  # one line saying why; the input kept
        screen = term.wait_for("'5MiB' is not a duration: time> compares durations")
        assert "filter: time>5MiB" in screen
    finally:
        sleeper.stop()


def test_batch_filter_time_in_seconds(mariadb):
    holder = mariadb.connect()
    session = holder.thread_id()
    thread = threading.Thread(target=lambda: _sleep(holder, 60), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while True:  # its statement 2.5 s old or more (as the server counts it)
            rows = mariadb.query("SELECT TIME_MS FROM information_schema.PROCESSLIST WHERE ID = %s", (session,))
            if rows and rows[0][0] is not None and float(rows[0][0]) > 2500:
                break
            assert time.monotonic() < deadline, "the sleeping session never got 2.5 s old"
            time.sleep(0.2)

        def batch(*options) -> subprocess.CompletedProcess:
            return subprocess.run(list(proxytop_command()) + mysql_args(mariadb) + [
                "--batch", "--count", "1", "--screen", "sessions", *options],
                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)

        result = batch("--format", "json", "--filter", "time>2s")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout.splitlines()[-1])
        assert report["filter"] == "time>2s"
        assert session in [row["id"] for row in report["rows"]]
        assert all(row["time_ms"] > 2000 for row in report["rows"])

        result = batch("--filter", "time>1h")  # the table: how it was read
        assert result.returncode == 0, result.stderr
        assert "filter Time > 1 h  0/" in result.stdout

        result = batch("--filter", "time>5MiB")
        assert result.returncode == 2
        assert "'5MiB' is not a duration: time> compares durations" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    finally:
        mariadb.query(f"KILL CONNECTION {session}")
        thread.join(10)


def _sleep(conn, seconds: int) -> None:
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"SELECT SLEEP({seconds})")
    except pymysql.err.Error:
        pass
