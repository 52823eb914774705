"""The Events screen (key E) and the event log in the real program: a backend's status, a
ProxySQL variable and a rules reload changed in the ProxySQL double; SET GLOBAL and a restart
of a real MariaDB; a MariaDB stopped and started, unreachable then back (live, replayed, batch); ProxySQL restarting; --batch's events; a recording replayed gives the same
events, and a replay moved back and forth neither loses nor repeats one. The tab mechanism:
lettered tabs after the ten numbered ones, in both halves, on an 80-column terminal."""
from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from typing import Callable, List

import pytest

from proxytop import options
from proxytop.cli import build
from proxytop.polling.engine import Engine
from proxytop.recordings.replay import ReplayEngine, replay_config
from proxytop.screens import HALVES, LETTER_TABS, MYSQL_HALF, PROXYSQL_HALF, all_screens, keys, tab_keys
from proxytop.screens.base import Screen
from proxytop.screens.events import EventsScreen, clock
from proxytop.ui import view
from proxytop.ui.controller import Controller
from tests.mariadb import running_server
from tests.proxysql_double import ProxySQLDouble
from tests.terminal import ENTER, ESC, proxytop_command

VARIABLE_WAIT = 75.0  # the variables are read every 30 s: the next reading, on a busy machine


def shunned(port: str):
    """A transform of stats_mysql_connection_pool: the backend on ``port`` SHUNNED."""
    def transform(columns, rows):
        status, srv_port = columns.index("status"), columns.index("srv_port")
        return columns, [row[:status] + ["SHUNNED"] + row[status + 1:] if str(row[srv_port]) == port else row
                         for row in rows]
    return transform


def set_variable(double: ProxySQLDouble, name: str, value: str) -> None:
    """SET <name> = <value>; LOAD ... TO RUNTIME: runtime_global_variables changed."""
    _columns, rows = double.first_frame("runtime_global_variables")
    double.replace_table("runtime_global_variables", [[r[0], value if r[0] == name else r[1]] for r in rows])


def reload_rules(double: ProxySQLDouble) -> None:
    """LOAD MYSQL QUERY RULES TO RUNTIME of the same rules: a new version, the same checksum."""
    double.replace_table("runtime_mysql_query_rules", double.first_frame("runtime_mysql_query_rules")[1])


# ----- the screen in the real program --------------------------------------------------------------

def test_the_events_tab_lists_a_status_change_a_variable_and_a_rules_reload(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "--no-discover", cols=100, rows=30)
    term.wait_for("127.0.0.1:3313")
    assert term.tab("Events") == "E"
    term.go("Events")
    term.wait_until(lambda s: "Nothing has changed yet. Watched:" in s and "runtime variables every 30 s" in s,
                    what="the note on what is watched")
    proxysql_double.transforms["stats_mysql_connection_pool"] = shunned("3312")
    set_variable(proxysql_double, "mysql-max_connections", "4321")
    reload_rules(proxysql_double)
    screen = term.wait_until(
        lambda s: re.search(r"proxysql\s+status\s+hg 20 127\.0\.0\.1:3312\s+ONLINE → SHUNNED", s) is not None
        and re.search(r"proxysql\s+variable\s+mysql-max_connections\s+2048 → 4321", s) is not None
        and re.search(r"proxysql\s+reload\s+mysql_query_rules\s+v1 → v2 \(same checksum\)", s) is not None,
        timeout=VARIABLE_WAIT, what="the three events")
    assert "Nothing has changed yet" not in screen
    # one row each: nothing is listed twice
    assert len(re.findall(r"ONLINE → SHUNNED", screen)) == 1 and len(re.findall(r"2048 → 4321", screen)) == 1
    # back ONLINE: a newer row, on top (newest first)
    del proxysql_double.transforms["stats_mysql_connection_pool"]
    term.wait_until(lambda s: re.search(r"Time↓.*\n.*SHUNNED → ONLINE", s) is not None, timeout=15,
                    what="back ONLINE, first")
    # filtered like every table, and Enter shows an event in full
    term.send("/")
    term.send("kind:variable" + ENTER)
    term.wait_until(lambda s: "2048 → 4321" in s and "SHUNNED" not in s.split("Time")[-1], what="the filter")
    term.send(ENTER)
    term.wait_until(lambda s: "variable: mysql-max_connections" in s and re.search(r"old\s+2048", s) is not None
                    and re.search(r"new\s+4321", s) is not None and "a global variable" in s, what="the detail")
    term.send(ESC, pause=0.4)
    term.wait_until(lambda s: "Esc back" not in s and "Old → New" in s, what="the detail closed")
    term.send("\\")
    term.send("1")  # the number keys still reach the numbered tabs
    term.wait_until(lambda s: "Latency" in s and "Old → New" not in s, what="ConnPool again")


# ----- --batch ---------------------------------------------------------------------------------------

def batch_lines(args: List[str], until: Callable[[List[dict]], bool], act: Callable[[List[dict]], None],
                timeout: float) -> List[dict]:
    """Run proxytop --batch --format json; ``act(records)`` after each line, until ``until``."""
    process = subprocess.Popen(list(proxytop_command()) + args + ["--batch", "--format", "json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records: List[dict] = []
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    try:
        for line in process.stdout:
            records.append(json.loads(line))
            act(records)
            if until(records):
                break
    finally:
        timer.cancel()
        process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()
    return records


def events_of(records: List[dict]) -> List[dict]:
    return [event for record in records for event in record.get("events", ())]


def test_a_proxysql_restart_is_one_event_in_batch_output(proxysql_double):
    rewound = []

    def act(records):
        reports = [r for r in records if r.get("screen") == "connpool"]
        if len(reports) == 3 and not rewound:
            proxysql_double.rewind()  # its uptime goes back, as after a restart
            rewound.append(True)

    records = batch_lines(["-P", str(proxysql_double.port), "--no-discover", "--screen", "connpool"],
                          until=lambda records: len([r for r in records if r.get("screen") == "connpool"]) >= 7,
                          act=act, timeout=60)
    events = events_of(records)
    assert [(e["source"], e["kind"], e["what"]) for e in events] == [("proxysql", "restart", "ProxySQL_Uptime")], events
    [restart] = events
    assert restart["severity"] == "warning" and restart["old"] != restart["new"]


def test_batch_prints_the_events_new_since_the_last_report(proxysql_double):
    def act(records):
        if len(records) == 2:
            proxysql_double.transforms["stats_mysql_connection_pool"] = shunned("3313")

    records = batch_lines(["-P", str(proxysql_double.port), "--no-discover", "--screen", "connpool"],
                          until=lambda records: len(records) >= 8, act=act, timeout=60)
    with_events = [r for r in records if "events" in r]
    assert len(with_events) == 1 and "screen" not in with_events[0]  # once, in one report, its own object
    assert [(e["source"], e["kind"], e["what"], e["old"], e["new"]) for e in with_events[0]["events"]] == [
        ("proxysql", "status", "hg 20 127.0.0.1:3313", "ONLINE", "SHUNNED")]
    assert with_events[0]["timestamp"] >= with_events[0]["events"][0]["timestamp"]
    # the Events screen itself: every event kept in every report, as live, and no separate list
    def back_online(records):
        if len(records) == 2:
            del proxysql_double.transforms["stats_mysql_connection_pool"]

    def listed(record):
        return [(row["what"], row["change"]) for row in record["rows"]]

    records = batch_lines(["-P", str(proxysql_double.port), "--no-discover", "--screen", "events"],
                          until=lambda records: len([r for r in records if r["rows"]]) >= 3, act=back_online,
                          timeout=60)
    assert all("events" not in r for r in records)
    assert listed(records[0]) == [] and records[0]["notes"][0] == "Nothing has changed yet. Watched:"
    assert listed(records[-1]) == listed(records[-2]) == [("hg 20 127.0.0.1:3313", "SHUNNED → ONLINE")]


def test_set_global_and_a_restart_of_a_real_mariadb():
    with running_server(name="events") as server:
        args = ["--mysql", server.address, "--mysql-user", server.user, "--mysql-password", server.password,
                "--screen", "events"]
        done = []
        before = server.query("SELECT @@max_connections")[0][0]

        def act(records):
            if len(records) == 2 and not done:
                server.query("SET GLOBAL max_connections = 321")
                done.append("set")
            if done == ["set"] and any(r["kind"] == "variable" for r in records[-1]["rows"]):
                server.process.kill()
                server.process.wait(10)
                server.restart()
                done.append("restarted")

        records = batch_lines(args, until=lambda records: any(r["kind"] == "restart" for r in records[-1]["rows"]),
                              act=act, timeout=2 * VARIABLE_WAIT + 60)
        rows = [r for r in records[-1]["rows"] if r["kind"] != "reach"]  # every event kept, newest first
        assert [(r["source"], r["kind"], r["what"], r["change"]) for r in rows] == [
            (server.address, "restart", "Uptime", rows[0]["change"]),
            (server.address, "variable", "max_connections", f"{before} → 321")], rows
        # killed, it was unreachable for a while (and reached again before its uptime was read)
        reach = [r["change"] for r in records[-1]["rows"] if r["kind"] == "reach"]
        assert len(reach) == 2 and reach[0].startswith("unreachable → back after ") \
            and reach[1].startswith("reachable → unreachable: "), reach
        # a restart forgets SET GLOBAL: max_connections went back, but that is the restart's event
        assert server.query("SELECT @@max_connections")[0][0] == before


# ----- a recording replayed ----------------------------------------------------------------------

def replayed_to_the_end(path: str):
    """(a replay engine of the recording at ``path``, at its end; its controller; its Events screen)."""
    engine = ReplayEngine.open(path)
    config = replay_config(engine.index, options.parse([], {}), options.build_parser().parse_args([]))
    engine, controller = build(config, engine)
    screen = next(s for s in controller.screens if isinstance(s, EventsScreen))
    engine.seek(engine.index.end)
    return engine, controller, screen


def test_a_replay_shows_the_recorded_events_and_a_jump_back_neither_loses_nor_repeats_one(
        proxytop_term, proxysql_double, tmp_path):
    path = str(tmp_path / "events.rec.gz")
    term = proxytop_term("-P", str(proxysql_double.port), "--no-discover", "--record", path)
    term.wait_for("127.0.0.1:3312")  # the pool was read: its statuses are the baseline (on a busy machine
    term.go("Events")                # the Events note can show before the first reading)
    term.wait_for("Nothing has changed yet")
    proxysql_double.transforms["stats_mysql_connection_pool"] = shunned("3312")
    term.wait_for("ONLINE → SHUNNED", timeout=15)
    del proxysql_double.transforms["stats_mysql_connection_pool"]
    term.wait_for("SHUNNED → ONLINE", timeout=15)
    term.send("q", pause=0)
    assert term.wait_exit(10) == 0

    engine, controller, screen = replayed_to_the_end(path)
    at_end = [(e.what, e.old, e.new) for e in screen.log.events(until=engine.now())]
    assert at_end == [("hg 20 127.0.0.1:3312", "ONLINE", "SHUNNED"), ("hg 20 127.0.0.1:3312", "SHUNNED", "ONLINE")]
    shunned_at = screen.log.events()[0].taken_at  # on the recording's timeline
    engine.seek(engine.index.start)
    assert screen.rows(controller.view) == []
    engine.seek(shunned_at)  # the reading that saw it
    assert [r["change"] for r in screen.rows(controller.view)] == ["ONLINE → SHUNNED"]
    engine.seek(engine.index.end)
    assert [(e.what, e.old, e.new) for e in screen.log.events(until=engine.now())] == at_end

    # --batch over the replay prints them too, once each, at their recorded times
    result = subprocess.run(list(proxytop_command()) + ["--replay", path, "--batch", "--format", "json",
                                                        "--screen", "connpool"],
                            capture_output=True, text=True, timeout=60)
    printed = events_of([json.loads(line) for line in result.stdout.splitlines()])
    assert [(e["old"], e["new"]) for e in printed] == [("ONLINE", "SHUNNED"), ("SHUNNED", "ONLINE")], result.stderr
    assert [e["timestamp"] for e in printed] == [round(e.wall_time, 3) for e in screen.log.events()]


# ----- a server that goes down and comes back ------------------------------------------------------

def event_row(screen: str, server: str, change: str) -> int:
    """The line of the Events table that reads ``server ... reach ... change`` (-1: none)."""
    found = [i for i, line in enumerate(screen.splitlines())
             if server in line and " reach " in line and change in line]
    return found[0] if found else -1


def test_a_mariadb_stopped_and_started_is_unreachable_then_back_live_in_a_replay_and_in_batch(
        proxytop_term, tmp_path):
    path = str(tmp_path / "downup.rec.gz")
    with running_server(name="downup") as server:
        term = proxytop_term("--mysql", server.address, "--mysql-user", server.user, "--mysql-password",
                             server.password, "--record", path, "--screen", "events", cols=160)
        term.wait_for("Nothing has changed yet")
        # proxytop's connection is open (the server's state is read every 5 s): a baseline
        deadline = time.monotonic() + 60
        while not server.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() "
                               "AND INFO IS NULL AND USER = %s", (server.user,))[0][0]:
            assert time.monotonic() < deadline, "proxytop never connected"
            time.sleep(0.2)
        server.process.kill()
        server.process.wait(10)
        term.wait_until(lambda s: event_row(s, server.address, "reachable → unreachable: ") >= 0, timeout=30,
                        what="the unreachable event")
        server.restart()
        # retries back off up to 10 s apart: back within a retry or two of the restart
        screen = term.wait_until(lambda s: event_row(s, server.address, "unreachable → back after ") >= 0,
                                 timeout=90, what="the back event")
        # newest first, and one event each: the retries in between made none
        assert 0 <= event_row(screen, server.address, "back after") \
            < event_row(screen, server.address, "reachable → unreachable")
        assert sum(" reach " in line for line in screen.splitlines()) == 2, screen
        live = [re.search(r"\d\d:\d\d:\d\d", line).group() for line in screen.splitlines() if " reach " in line]
        term.send("q", pause=0)
        assert term.wait_exit(15) == 0

    engine, controller, screen = replayed_to_the_end(path)
    replayed = [e for e in screen.log.events(until=engine.now()) if e.kind == "reach"]
    assert [(e.source, e.old, e.new.split(":")[0]) for e in replayed] == [
        (server.address, "reachable", "unreachable"), (server.address, "unreachable", replayed[1].new)]
    assert replayed[1].new.startswith("back after ")
    # at the times the live screen showed them, newest first there
    assert [clock(e.wall_time) for e in reversed(replayed)] == live
    engine.seek(replayed[0].taken_at)  # the state that said so: back is not there yet
    assert [r["change"].split(":")[0] for r in screen.rows(controller.view) if r["kind"] == "reach"] == [
        "reachable → unreachable"]

    result = subprocess.run(list(proxytop_command()) + ["--replay", path, "--batch", "--format", "json",
                                                        "--screen", "servers"],
                            capture_output=True, text=True, timeout=120)
    printed = [e for e in events_of([json.loads(line) for line in result.stdout.splitlines()]) if e["kind"] == "reach"]
    assert [(e["old"], e["new"]) for e in printed] == [(e.old, e.new) for e in replayed], result.stderr
    assert [e["timestamp"] for e in printed] == [round(e.wall_time, 3) for e in replayed]


# ----- the tabs ------------------------------------------------------------------------------------

def both_halves(*more: Screen):
    config = options.parse(["-H", "127.0.0.1:1", "--mysql", "127.0.0.1:3306", "--no-discover"], {})  # (nothing connects)
    return Controller(Engine(), all_screens(config) + list(more), config)


def test_trends_and_events_end_both_halves_with_their_letters_and_the_tab_line_fits_80_columns():
    ctl = both_halves()
    for half in (PROXYSQL_HALF, MYSQL_HALF):
        assert HALVES[half][-2:] == ("trends", "events")
        ctl.ui.half = half
        for index in ctl.tabs:
            ctl.switch(index)
            line = view.screen_text([view.tab_line(ctl, 80)])
            assert len(line) <= 80
            assert re.findall(r"(?<!\S)(\w)(?::\S+)?(?=\s|$)", line)[:12] == list("1234567890TE"), line
        ctl.do_goto_tab("E")
        assert ctl.screen.key == "events"
        ctl.do_next_screen()  # Tab from the last tab: the first again
        assert ctl.tabs.index(ctl.ui.index) == 0
        ctl.do_previous_screen()
        assert ctl.screen.key == "events"
        ctl.do_goto_screen(9)  # 0: the tenth numbered tab, not Events
        assert ctl.screen.key == HALVES[half][9]


def test_more_lettered_tabs_take_their_letters_and_keep_the_numbers(monkeypatch):
    monkeypatch.setitem(keys.TAB_LETTERS, "later", ("Z", "a screen added later", ""))
    monkeypatch.setitem(LETTER_TABS, "later", "Z")
    assert tab_keys(["connpool", "later", "queryrules", "events"]) == ["1", "Z", "2", "E"]

    class Later(Screen):
        key, title = "later", "Later"

    ctl = both_halves(Later())
    later = len(ctl.screens) - 1
    lettered = [i for i, s in enumerate(ctl.screens) if s.key in ("trends", "events")]
    # both halves end with their lettered tabs, the new one among them
    ctl.halves = {half: [i for i in tabs if i != later and i not in lettered] + [lettered[0], later, lettered[1]]
                  for half, tabs in ctl.halves.items()}
    for half in (PROXYSQL_HALF, MYSQL_HALF):
        ctl.ui.half = half
        ctl.do_goto_tab("Z")
        assert ctl.screen.key == "later"
        line = view.screen_text([view.tab_line(ctl, 80)])
        assert len(line) <= 80 and re.search(r" T(:\w+)? Z:Later E(:\w+)?( |$)", line), line
        ctl.do_goto_tab("E")
        assert ctl.screen.key == "events"
        ctl.do_previous_screen()
        assert ctl.screen.key == "later"


def test_the_help_and_the_key_table_name_the_letter():
    binding = keys.lookup(keys.GLOBAL_BINDINGS, "E")
    assert binding is not None and binding.action == "goto_tab" and "Events" in binding.help
    assert keys.letter_tab("E") == "events"
    with pytest.raises(StopIteration):
        next(b for b in keys.GLOBAL_BINDINGS if b.action != "goto_tab" and "E" in b.keys)
