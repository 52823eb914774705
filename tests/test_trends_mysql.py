"""Trends of the MySQL servers (Questions/s, threads running, connections: the Servers screen's
rows added up) and chart axes that read right: worked out from hand-made rows, the chart's
lines read back, and in the real program with only --mysql against a real MariaDB under load."""
from __future__ import annotations

import json
import re
import subprocess
import threading

from types import SimpleNamespace

import pymysql
import pytest

from proxytop import cli, options
from proxytop.core import Snapshot
from proxytop.recordings.replay import ReplayEngine
from proxytop.recordings.replay_figures import scan
from proxytop.screens.base import DataView
from proxytop.screens import chart
from proxytop.screens.trends import TRENDS, TrendsScreen, trend_values
from proxytop.metrics import units
from tests.terminal import proxytop_command

T0 = 1_700_000_000.0


def servers_rows():
    """Three rows as the Servers screen makes them: two servers read, one down (no figures)."""
    return [
        {"_id": "db1:3306", "server": "db1:3306", "qps": 120.5, "connected": 14, "running": 3},
        {"_id": "db2:3306", "server": "db2:3306", "qps": 79.5, "connected": 6, "running": 1},
        {"_id": "db3:3306", "server": "db3:3306", "role": "DOWN", "note": "down, retrying in 4s: refused"},
    ]


def test_the_mysql_trends_add_up_the_servers_rows_a_server_down_counting_for_nothing():
    values = trend_values({"servers": servers_rows()})
    assert values == {"mysql_qps": 200.0, "mysql_running": 4.0, "mysql_connected": 20.0}


def test_the_mysql_trends_have_no_value_before_any_server_has_one():
    waiting = [{"_id": "db1:3306", "server": "db1:3306", "note": "waiting for the first reading\u2026"}]
    assert trend_values({"servers": waiting}) == {"mysql_qps": None, "mysql_running": None, "mysql_connected": None}
    assert trend_values({"servers": []})["mysql_qps"] is None


def test_without_a_proxysql_trends_come_from_the_servers_and_the_host():
    class Screen:
        built = True

        def __init__(self, key):
            self.key = key

    class Config:
        proxysql = False

    trends = TrendsScreen(Config())
    trends.watch([Screen(k) for k in ("servers", "connpool", "comcount", "replication", "innodb", "iostat")])
    assert [s.key for s in trends.from_screens] == ["servers", "replication", "innodb", "iostat"]
    assert not trends.with_header
    titles = [t.title for t in TRENDS if t.screen == "servers"]
    assert titles == ["MySQL Questions/s, all servers", "MySQL threads running, all servers",
                      "MySQL connections, all servers"]


def fleet_trends(servers: int) -> TrendsScreen:
    class Servers:  # the Servers screen of a fleet: Trends reads each server's own reading
        key, built = "servers", True
        fleet = SimpleNamespace(listed=lambda: [SimpleNamespace(server_name=f"mysql.server.db{n}")
                                                for n in range(servers)])

    trends = TrendsScreen()
    trends.from_screens, trends.with_header = [Servers()], False
    return trends


def readings(servers: int, **taken):
    """Each server's reading taken at n/100 s, or as ``taken`` says (db0=2.0)."""
    out = {}
    for n in range(servers):
        at = taken.get(f"db{n}", n / 100)
        out[f"mysql.server.db{n}"] = Snapshot(f"mysql.server.db{n}", None, at, 0.001, wall_time=T0 + at)
    return out


def test_a_new_reading_of_any_server_makes_the_mysql_trends_again():
    trends, made = fleet_trends(12), {}
    assert trends.new_inputs(readings(12).get, made) == [("servers", T0 + 0.11)]
    assert trends.new_inputs(readings(12).get, made) == []  # the same readings: no new point
    assert trends.new_inputs(readings(12, db0=0.3).get, made) == [("servers", T0 + 0.3)]


def test_a_large_fleets_trends_are_made_at_its_own_pace_not_at_each_new_reading():
    trends, made = fleet_trends(100), {}  # 100 servers are each read every second at most
    assert trends.new_inputs(readings(100).get, made) == [("servers", T0 + 0.99)]
    assert trends.new_inputs(readings(100, db0=1.5).get, made) == []  # half a second after the last point
    assert trends.new_inputs(readings(100, db0=2.0).get, made) == [("servers", T0 + 2.0)]


# --- the value axis ------------------------------------------------------------------------------

def value_labels(lines):
    """The labels left of the axis (│), top to bottom, blank ones left out."""
    labels = []
    for line in lines:
        text = "".join(segment for segment, _style in line)
        if "\u2502" in text:
            label = text.split("\u2502")[0].strip()
            if label:
                labels.append(label)
    return labels


def one_plot(values, step=10.0):
    return [chart.Plot("x", [(T0 + i * step, v) for i, v in enumerate(values)])]


def test_tiny_values_get_distinct_labels_with_the_digits_that_say_them():
    # a checkpoint age of 0.004 % once read "0.0 / 0.0 / 0" while its dots were drawn
    lines = chart.draw(one_plot([0.004, 0.003, 0.004]), 60, 8, T0, T0 + 20, fmt=units.number)
    assert value_labels(lines) == ["0.005", "0.0025", "0"]


def test_normal_values_keep_the_figures_own_format():
    lines = chart.draw(one_plot([3.0, 7.0, 6.0]), 60, 8, T0, T0 + 20, fmt=units.number)
    assert value_labels(lines) == ["10", "5", "0"]
    lines = chart.draw(one_plot([0.22, 0.1]), 60, 8, T0, T0 + 10, fmt=units.number)
    assert value_labels(lines) == ["0.25", "0.125", "0"]  # number() said 0.25 as "0.2"


def test_large_values_keep_their_units_prefix():
    lines = chart.draw(one_plot([1.8e6, 2.2e6]), 60, 8, T0, T0 + 10, fmt=units.number)
    assert value_labels(lines) == ["2.5M", "1.2M", "0"]
    lines = chart.draw(one_plot([0.0012, 0.004]), 60, 8, T0, T0 + 10, fmt=units.duration)
    assert value_labels(lines) == ["5ms", "2.5ms", "0s"]  # the unit's smaller unit says a small duration


def dots_by_column(lines, rows):
    """For each character column of the chart: the rows (0 = top) with any dot."""
    columns = {}
    for r, line in enumerate(lines[:rows]):
        text = "".join(segment for segment, _style in line).split("\u2502", 1)[1]
        for c, char in enumerate(text):
            if 0x2800 < ord(char) <= 0x28FF:
                columns.setdefault(c, set()).add(r)
    return columns


def test_a_count_is_drawn_as_steps_and_a_rate_as_a_slope():
    points = [(T0, 0.0), (T0 + 10, 4.0)]  # 0 SHUNNED, then 4, ten seconds later: 40 columns apart
    height, rows = 9, 8  # 8 rows of dots and the time axis
    stepped = dots_by_column(chart.draw([chart.Plot("n", points, steps=True)], 45, height, T0, T0 + 10), rows)
    sloped = dots_by_column(chart.draw([chart.Plot("n", points)], 45, height, T0, T0 + 10), rows)
    middle = sorted(stepped)[len(stepped) // 2]
    assert stepped[middle] == {rows - 1}  # held at 0 until the next reading
    riser = stepped[max(stepped)]
    assert riser == set(range(2, rows)) or riser == set(range(1, rows))  # then one riser to 4 (of 5)
    assert min(sloped[middle]) < rows - 2  # the slope is half way up there


def test_a_replays_scan_has_the_mysql_trends_the_servers_screen_shows_at_each_step():
    config = options.parse(["--demo"], {})
    engine, config = cli.open_replay(config)
    figures = scan(engine.index, lambda other: cli.build(config, other)[1].screens, ["trends"], config)
    kept = figures.points(("trends", "mysql_qps"), 0, engine.index.end + 1e10)
    assert len(kept) == len(figures.points(("trends", "qps"), 0, engine.index.end + 1e10)) > 5
    # the last point: the demo's servers' Q/s added up as the Servers screen shows them at the end
    other = ReplayEngine(engine.index, clock=lambda: 0.0)
    other.pause()
    other.seek(engine.index.end)
    servers = next(s for s in cli.build(config, other)[1].screens if s.key == "servers")
    shown = [row["qps"] for row in servers.rows(DataView(other, config)) if row.get("qps") is not None]
    assert len(shown) >= 2 and kept[-1][1] == pytest.approx(sum(shown))


# --- in the program, against a real MariaDB ------------------------------------------------------

class Load:
    """Statements in a loop on a connection of their own, until stopped."""

    def __init__(self, server):
        self.conn = server.connect()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            with self.conn.cursor() as cursor:
                while not self.done.is_set():
                    cursor.execute("SELECT 1")
                    cursor.fetchall()
                    self.done.wait(0.01)
        except pymysql.err.Error:
            pass

    def stop(self):
        self.done.set()
        self.thread.join(10)
        self.conn.close()


def mysql_args(server):
    return ["--mysql", server.address, "--mysql-user", server.user, "--mysql-password", server.password]


def test_trends_with_only_mysql_show_the_servers_questions_per_second(proxytop_term, mariadb):
    load = Load(mariadb)
    try:
        term = proxytop_term(*mysql_args(mariadb), "-d", "1", cols=120, rows=40)
        term.wait_until(lambda s: "primary" in s, timeout=20, what="the server's row")
        term.go("Trends")
        screen = term.wait_until(
            lambda s: re.search(r"^MySQL Questions/s, all servers (\d[\d.]*k?)\s", s, re.M) is not None
            and float(re.search(r"^MySQL Questions/s, all servers ([\d.]+)", s, re.M).group(1)) > 0,
            timeout=30, what="a MySQL Q/s chart with a rate")
        assert re.search(r"^MySQL connections, all servers \d", screen, re.M), screen
        assert "Queries/s" not in screen  # no ProxySQL: none of its figures
        assert any(0x2800 < ord(c) <= 0x28FF for c in screen)  # its points drawn
        term.send("q")
        assert term.wait_exit(5) == 0
    finally:
        load.stop()


def test_batch_trends_say_the_servers_numbers(mariadb):
    result = subprocess.run(list(proxytop_command()) + mysql_args(mariadb)
                            + ["--batch", "--count", "2", "-d", "1", "--screen", "all", "--format", "json"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    reports = [r for r in map(json.loads, result.stdout.splitlines()) if "screen" in r]  # (not events' records)
    servers = [r for r in reports if r["screen"] == "servers"][-1]
    trends = {row["figure"]: row["now"] for row in [r for r in reports if r["screen"] == "trends"][-1]["rows"]}
    row = next(r for r in servers["rows"] if r["server"] == mariadb.address)
    assert trends["MySQL connections, all servers"] == row["connected"]
    assert trends["MySQL threads running, all servers"] == row["running"]
    assert isinstance(trends["MySQL Questions/s, all servers"], (int, float)), trends
    assert list(trends)[:3] == ["MySQL Questions/s, all servers", "MySQL threads running, all servers",
                                "MySQL connections, all servers"]
