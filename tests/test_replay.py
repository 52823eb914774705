"""Replay: a recording gives back the live snapshots; the replay engine answers the engine API
at its playback position; the full TUI runs over a recording with its replay keys."""
from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

import pytest

from proxytop.cli import build
from proxytop.core import Snapshot, Table
from proxytop import options
from proxytop.polling.engine import SourceState
from proxytop.recordings.recording import RecordingWriter, is_secret_name
from proxytop.recordings.replay import RecordingIndex, ReplayEngine, parse_jump, replay_config
from proxytop.screens.base import Confirm
from proxytop.screens.statements import off_line
from proxytop.ui import view
from proxytop.ui.controller import Controller
from tests.terminal import ENTER, ESC
from tests.test_recording import FakeClock, live_recording  # noqa: F401  (a shared session fixture)

WALL0 = 1_700_000_000.0


def without_secrets(value: Any) -> Any:
    """The value with whatever is named like a secret blanked (what a recording keeps)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: ("" if isinstance(getattr(value, f.name), str) else None)
                   for f in dataclasses.fields(value) if is_secret_name(f.name)}
        # a dict field's secret-named keys too (a server's variables: the Events screen's reading)
        changes.update({f.name: without_secrets(getattr(value, f.name)) for f in dataclasses.fields(value)
                        if f.name not in changes and isinstance(getattr(value, f.name), dict)})
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, dict):
        return {k: ("" if is_secret_name(k) and isinstance(v, str) else without_secrets(v)) for k, v in value.items()}
    return value


# ----- record -> replay ------------------------------------------------------------------------

def test_replay_gives_back_every_live_snapshot(live_recording):
    path, live, _ = live_recording
    engine = ReplayEngine.open(path)
    offset = engine.index.segments[0].offset
    compared = 0
    for name, snapshots in live.items():
        for snapshot in snapshots:
            engine.seek(snapshot.taken_at + offset)
            replayed = engine.latest(name)
            assert replayed is not None, name
            if "processlist" in name:  # statement texts lose their quoted secrets, nothing else
                assert replayed.data.columns == snapshot.data.columns and len(replayed.data.rows) == len(snapshot.data.rows)
            else:
                assert replayed.data == without_secrets(snapshot.data), name
            assert type(replayed.data) is type(snapshot.data)
            assert replayed.duration == snapshot.duration and replayed.wall_time == snapshot.wall_time
            assert replayed.error == snapshot.error
            assert replayed.taken_at == snapshot.taken_at + offset
            compared += 1
        # rates are computed from the same pair of readings as live
        previous, current = engine.last_two(name)
        if len(snapshots) >= 2:
            assert current.taken_at - previous.taken_at == snapshots[-1].taken_at - snapshots[-2].taken_at
    assert compared == sum(len(v) for v in live.values()) > 20


def test_screens_render_the_same_rows_from_the_replay(live_recording):
    """The screens' rows at the end of the recording, live engine state vs replay."""
    path, live, _ = live_recording
    engine = ReplayEngine.open(path)
    engine.seek(engine.index.end)
    config = replay_config(engine.index, options.parse([], {}), options.build_parser().parse_args([]))
    engine, controller = build(config, engine)
    assert engine.source("proxysql").endpoint.password == ""
    built = [(index, screen) for index, screen in enumerate(controller.screens) if screen.built]
    assert len(built) >= 7
    # the Sessions screen shows the server under the Servers screen's cursor: the one recorded
    recorded = next(n for n in engine.index.snapshots if n.startswith("mysql.sessions."))
    for index, screen in built:
        if screen.key == "sessions":
            controller.ui.cursor_id["servers"] = recorded[len("mysql.sessions."):]
        controller.switch(index)
        rows = screen.rows(controller.view)
        if screen.key == "statements":  # the recorded MariaDB has performance_schema off, as by default
            notes = " ".join(text for line in screen.notes(controller.view) for text, _style in line)
            assert off_line(recorded[len("mysql.sessions."):]) in notes
        elif screen.key == "galera":  # the recorded MariaDB is no Galera node: one line says so
            assert not rows and "No Galera node" in str(screen.notes(controller.view))
        elif screen.key == "events":  # nothing changed while it was recorded: the note says what is watched;
            # a server the recorded ProxySQL lists that could not be reached from the start is one event
            assert all(r["kind"] == "reach" and r["change"].startswith("(none) → unreachable: ") for r in rows), rows
            assert rows or "Nothing has changed yet" in str(screen.notes(controller.view))
        else:
            assert rows, f"{screen.title} has no rows in the replay"
        text = view.screen_text(view.render(controller, 160, 40))
        assert "REPLAY" in text.splitlines()[0] and "recorded " in text.splitlines()[1]


# ----- the replay engine on a made-up recording ------------------------------------------------------

def make_recording(path: str, runs=((1000.0, 10),)) -> None:
    """Collector "a" every second, "b" every two seconds (failing once), a source that
    connects after failing; one run per (monotonic start, seconds)."""
    for start, seconds in runs:
        clock = FakeClock(start)
        wall = WALL0 + (start - 1000.0) * 10  # the second run is much later in real time
        writer = RecordingWriter(path, clock=clock, wall=lambda: wall + clock.now - start)
        clock.now = start + 0.2
        writer.state(SourceState("src", connected=False, connecting=False, error="connection refused",
                                 retry_at=start + 1.2, failures=1, since=start))
        for i in range(1, seconds + 1):
            clock.now = start + i
            if i == 1:
                writer.state(SourceState("src", connected=True, connecting=False, since=clock.now))
            writer.snapshot(Snapshot("a", {"n": i}, taken_at=clock.now, duration=0.01,
                                     wall_time=wall + clock.now - start))
            if i % 2 == 0:
                clock.now += 0.01
                if i == 4:
                    writer.error("b", "query failed", clock.now)
                else:
                    writer.snapshot(Snapshot("b", {"m": i}, taken_at=clock.now, duration=0.01,
                                             wall_time=wall + clock.now - start))
        writer.close()


@pytest.fixture
def replay(tmp_path):
    path = str(tmp_path / "made.gz")
    make_recording(path)
    real = FakeClock(0.0)
    engine = ReplayEngine(RecordingIndex(path), clock=real)
    return engine, real


def at(second: float) -> float:
    """Timeline position ``second`` seconds after the first run started (its monotonic clock)."""
    return 1000.0 + second


def test_readings_at_or_before_the_position(replay):
    engine, _ = replay
    engine.seek(at(0.5))
    assert engine.latest("a") is None and engine.last_two("a") == (None, None)
    engine.seek(at(3.5))
    assert engine.latest("a").data == {"n": 3}
    previous, current = engine.last_two("a")
    assert (previous.data, current.data) == ({"n": 2}, {"n": 3})
    assert current.taken_at - previous.taken_at == pytest.approx(1.0)
    assert [s.data["n"] for s in engine.history("a")] == [2, 3]  # history of a 2-reading collector
    assert engine.latest("b").data == {"m": 2}


def test_errors_last_until_the_next_good_reading(replay):
    engine, _ = replay
    engine.seek(at(4.5))
    assert engine.error("b") == "query failed"
    assert engine.latest("b").data == {"m": 2}  # the last good one stays, as live
    engine.seek(at(6.5))
    assert engine.error("b") is None and engine.latest("b").data == {"m": 6}


def test_source_states_with_their_retry_time_on_the_timeline(replay):
    engine, _ = replay
    engine.seek(at(0.5))
    state = engine.state("src")
    assert not state.connected and state.error == "connection refused"
    assert state.retry_in(engine.now()) == pytest.approx(0.7)
    engine.seek(at(1.5))
    assert engine.state("src").connected


def test_playback_follows_the_clock_times_the_speed_and_stops_at_the_end(replay):
    engine, real = replay
    assert engine.now() == engine.index.start and engine.paused
    engine.resume()
    real.now += 2.0
    assert engine.now() == pytest.approx(engine.index.start + 2.0)
    engine.set_speed(4.0)
    real.now += 1.0
    assert engine.now() == pytest.approx(engine.index.start + 6.0)
    engine.pause()
    real.now += 5.0
    assert engine.now() == pytest.approx(engine.index.start + 6.0)
    engine.resume()
    real.now += 100.0
    assert engine.now() == engine.index.end and engine.paused and engine.at_end
    engine.resume()  # p at the end plays again from the start
    assert engine.now() == engine.index.start and not engine.paused


def test_a_looping_replay_wraps_around(tmp_path):
    path = str(tmp_path / "loop.gz")
    make_recording(path)
    real = FakeClock(0.0)
    engine = ReplayEngine(RecordingIndex(path), clock=real, loop=True)
    engine.resume()
    span = engine.index.end - engine.index.start
    real.now += span + 1.5
    assert engine.now() == pytest.approx(engine.index.start + 1.5)
    assert not engine.paused


def test_steps_move_one_poll_and_pause(replay):
    engine, real = replay
    engine.resume()
    engine.seek(at(2.5))
    assert engine.step(+1, ["a", "b"])
    assert engine.paused
    assert engine.now() == pytest.approx(at(3.0))
    assert engine.step(+1, ["a", "b"])  # a at 4.0 and b's failure at 4.01: one poll
    assert engine.now() == pytest.approx(at(4.0))
    engine.seek(at(4.01 + 0.5))
    assert engine.step(-1, ["a", "b"]) and engine.now() == pytest.approx(at(4.0))
    assert engine.step(-1, ["a", "b"]) and engine.now() == pytest.approx(at(3.0))
    engine.seek(engine.index.end)
    assert not engine.step(+1, ["a"])
    engine.seek(engine.index.start)
    assert not engine.step(-1, ["a"])


def test_runs_appended_to_one_file_do_not_mix(tmp_path):
    path = str(tmp_path / "two.gz")
    make_recording(path, runs=((1000.0, 6), (1100.0, 4)))
    engine = ReplayEngine(RecordingIndex(path), clock=FakeClock())
    assert len(engine.index.segments) == 2
    second_run = at(1000.0)  # ten times later in real time than on the first run's clock
    engine.seek(second_run + 1.5)
    assert engine.latest("a").data == {"n": 1}
    assert engine.last_two("a")[0] is None  # no rate across two runs
    assert engine.history("a") == (engine.latest("a"),)
    assert engine.latest("b") is None  # b's last reading belongs to the first run
    engine.seek(second_run - 10)  # between the runs: the first run's last readings
    assert engine.latest("a").data == {"n": 6}


def test_writes_are_refused(replay, tmp_path):
    engine, _ = replay
    answers = []
    engine.submit("src", lambda handle: None, answers.append)
    assert answers == ["not available in replay"]
    controller = Controller(engine, [], None)
    ran = []
    controller.ask(Confirm(("Kill?",), "src", lambda handle: ran.append(1)))
    assert controller.ui.mode != "confirm" and "not available in replay" in controller.current_message()[0]


@pytest.mark.parametrize("text, expected", [
    ("start", 0.0), ("end", 600.0), ("+30s", 130.0), ("-1m", 40.0), ("+1.5h", 5500.0), ("25%", 150.0),
    ("00:05", 300.0), ("00:01:40", 100.0), ("1970-01-01 00:02", 120.0),
])
def test_jump_targets(text, expected):
    assert parse_jump(text, 100.0, 0.0, 600.0, zone=time.gmtime) == pytest.approx(expected)


def test_a_time_of_day_lands_on_a_day_the_recording_covers():
    start = 86400 * 3 + 23 * 3600  # day 3, 23:00 to day 4, 01:00 (UTC)
    end = start + 2 * 3600
    assert parse_jump("00:30", start, start, end, zone=time.gmtime) == 86400 * 4 + 1800
    assert parse_jump("23:30", end, start, end, zone=time.gmtime) == 86400 * 3 + 23 * 3600 + 1800


@pytest.mark.parametrize("text", ["", "soon", "25:00", "+x", "2024-13-01 10:00"])
def test_bad_jump_targets_are_explained(text):
    with pytest.raises(ValueError) as raised:
        parse_jump(text, 100.0, 0.0, 600.0, zone=time.gmtime)
    assert str(raised.value)


# ----- the TUI over a recording ------------------------------------------------------------------

LEFT, RIGHT = "\x1bOD", "\x1bOC"  # arrow keys as the terminal sends them in application mode
RECORDED = re.compile(r"recorded (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


def recorded_time(screen: str) -> str:
    match = RECORDED.search(screen)
    assert match, screen
    return match.group(1)


def test_the_tui_over_a_recording(proxytop_term, live_recording):
    path, _, _ = live_recording
    term = proxytop_term("--replay", path, "--speed", "0.25", cols=140, rows=36)
    screen = term.wait_until(lambda s: "127.0.0.1:3313" in s and "connected" in s.splitlines()[1]
                             and "t time" in s.splitlines()[-1], timeout=15, what="the replay's first frame")
    first = screen.splitlines()
    assert first[0].startswith("proxytop REPLAY ") and "ProxySQL 2.7.2" in first[0]
    assert "playing 1/4x" in first[1] and "connected" in first[1]
    assert "t time" in screen.splitlines()[-1] and "+/- interval" not in screen

    term.send("p")
    term.wait_for("  paused")
    term.send("t")
    term.wait_for("jump to: ")
    term.send("start" + ENTER)
    term.wait_for(r"  0:00 / ")
    before = recorded_time(term.text())
    term.send(".")
    term.send(".")
    term.send(".")
    term.wait_until(lambda s: recorded_time(s) != before and "paused" in s, what="a step forward, still paused")

    term.send(RIGHT)  # 10 s on: past the end of this short recording
    term.wait_until(lambda s: re.search(r"  (\d+:\d\d) / \1", s) is not None, what="the end")
    term.send(LEFT)
    term.wait_for(r"  0:00 / ")

    term.send("]")
    term.wait_for("playback 1/2x")
    term.send("p")
    term.wait_for("playing 1/2x")
    term.wait_for("127.0.0.1:3313")  # the first readings, a moment after the start

    # filter and drill-down work as live
    term.send("/")
    term.send("reader" + ENTER)
    screen = term.wait_for("filter reader")
    assert "127.0.0.1:3312" in screen and "127.0.0.1:3311" not in screen
    term.send("2")
    term.wait_for("point selects")
    term.send(ENTER)
    term.wait_for("Esc back")
    term.send(ESC, pause=0.4)
    term.wait_until(lambda s: "Esc back" not in s, what="the detail view to close")

    # help speaks of playback, not polling
    term.send("?")
    help_screen = term.wait_for("pause / resume playback")
    assert "pause / resume polling" not in help_screen
    term.send(ESC, pause=0.4)
    term.wait_until(lambda s: "pause / resume playback" not in s, what="the help to close")

    # the one write proxytop makes is refused
    term.send("4")
    term.wait_for(r"Session")
    term.send("k")
    term.wait_for("not available in replay")
    term.send("q")
    assert term.wait_exit(5) == 0


def test_the_live_view_records_what_it_shows(proxytop_term, proxysql_double, tmp_path):
    path = str(tmp_path / "live.rec.gz")
    term = proxytop_term("-P", str(proxysql_double.port), "--record", path)
    term.wait_for(r"ONLINE\s+\d+\s+\d+\s+\d+")  # rates: two readings of the pool
    term.send("2")
    term.wait_for("point selects")
    deadline = time.monotonic() + 20  # the recording is flushed after every reading
    while len(RecordingIndex(path).snapshots.get("proxysql.query_rule_hits", ())) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    term.send("q")
    assert term.wait_exit(5) == 0
    index = RecordingIndex(path)
    assert index.complete  # closed cleanly
    assert len(index.snapshots["proxysql.connection_pool"]) >= 2 and len(index.snapshots["proxysql.query_rule_hits"]) >= 2
    assert "proxysql.processlist" not in index.snapshots  # only what was polled


def test_a_recording_killed_mid_run_still_replays(proxytop_term, proxysql_double, tmp_path):
    import os
    import signal

    path = str(tmp_path / "killed.rec.gz")
    term = proxytop_term("-P", str(proxysql_double.port), "--record", path)
    term.wait_for("127.0.0.1:3313")
    time.sleep(1.5)
    os.kill(term.pid, signal.SIGKILL)
    term.wait_exit(5)
    index = RecordingIndex(path)
    assert not index.complete and len(index.snapshots["proxysql.connection_pool"]) >= 2
    replayed = proxytop_term("--replay", path)
    replayed.wait_for("127.0.0.1:3313")


def test_worked_examples_in_the_docstrings():
    import doctest

    import proxytop.recordings.replay as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_the_recordings_scan_runs_again_for_each_screen_asked_after_one_ended(monkeypatch):
    from proxytop.metrics.history import FigureHistory
    from proxytop.recordings import replay_figures

    scanned = []

    def scan(index, make_screens, keys, config=None):
        scanned.append(tuple(keys))
        return FigureHistory()

    monkeypatch.setattr(replay_figures, "scan", scan)
    scanner = replay_figures.RecordingScanner(index=None, make_screens=lambda engine: ())
    for asked in (["trends"], ["connpool"], ["iostat"]):
        assert scanner.request(asked)
        deadline = time.monotonic() + 10
        while scanner.take() is None:  # its scan ended, and was handed over
            assert time.monotonic() < deadline, f"no scan for {asked}: {scanned}"
            time.sleep(0.01)
    assert scanned[-1] == ("connpool", "iostat", "trends") and not scanner.request(["trends"])
