"""A replay that jumps (t, ←/→, ,/., Enter on a graph) keeps ConnPool's state history true: the
InState, the state changes and their times are those of playing through, forward and back; and
a reading the recording never holds says so instead of waiting for it."""
from __future__ import annotations

import re
from typing import Dict, List, Tuple

from proxytop import options
from proxytop.cli import build
from proxytop.collectors.proxysql import ConnectionPool
from proxytop.metrics import health, units
from proxytop.recordings.replay import DEMO_FILE, ReplayEngine, replay_config
from proxytop.screens.base import NOT_RECORDED, DataView
from proxytop.screens.connpool import FOLD_AT_MOST, ConnPoolScreen, pool_statuses
from proxytop.screens.events import EventsScreen
from tests.terminal import ENTER
from tests.bench_replay_jump import hour_recording
from tests.test_events import shunned

POOL = ConnectionPool.name


def played_through(engine: ReplayEngine, until: float) -> health.StatusLog:
    """The status log of a replay played at 1x from the start to ``until``: every recorded pool
    reading seen, one after the other."""
    screen, view = ConnPoolScreen(), DataView(engine)
    for at in engine.index.snapshots[POOL].times:
        if at > until + 1e-9:
            break
        engine.seek(at)
        screen.observe(view)
    return screen.status_log


def jumped_to(engine: ReplayEngine, *positions: float) -> ConnPoolScreen:
    screen, view = ConnPoolScreen(), DataView(engine)
    engine.seek(engine.index.start)
    screen.observe(view)
    for at in positions:
        engine.seek(at)
        screen.observe(view)
    return screen


def shuns(log: health.StatusLog) -> List[Tuple[float, str]]:
    return [(c.at, f"{c.key[1]}:{c.key[2]}") for c in log.changes if c.new == "SHUNNED"]


def test_a_jump_forward_or_back_in_the_demo_gives_the_log_of_playing_through():
    engine = ReplayEngine.open(DEMO_FILE)
    engine.pause()
    start, end = engine.index.start, engine.index.end
    whole = played_through(engine, end)
    assert shuns(whole), "the demo shuns 127.0.0.1:3313"
    shun_at = engine.index.snapshots[POOL].times[
        next(i for i, at in enumerate(engine.index.snapshots[POOL].times)
             if any(status == "SHUNNED" for _key, status in pool_statuses(engine._decode("s", POOL, i))))]

    assert jumped_to(engine, end).status_log == whole  # t end
    middle = shun_at + 5.0
    assert jumped_to(engine, end, middle).status_log == played_through(engine, middle)  # t end, then back
    before = jumped_to(engine, end, shun_at - 1.0).status_log  # back before the shun: nothing of it
    assert shuns(before) == [] and before == played_through(engine, shun_at - 1.0)
    steps = jumped_to(engine, start + 10.0, start + 20.0, middle - 1.0, end)  # → and t, a few at a time
    assert steps.status_log == whole


# ----- in the terminal ----------------------------------------------------------------------------

SHUNNED_CHANGE = re.compile(r"(\d\d:\d\d:\d\d)\s+ONLINE \u2192 SHUNNED")
HELD = re.compile(r"status SHUNNED for (\S+)")
AT_THE_END = re.compile(r"  (\d[\d:]*) / \1(?![\d:])")  # the header's "1:21 / 1:21"


def in_state(screen: str, server: str) -> str:
    row = next(line for line in screen.splitlines() if re.match(rf"\s*\d+\s+{re.escape(server)}\s", line))
    header = next(line for line in screen.splitlines() if "InState" in line)
    column = header.index("InState")
    return row[column - 1: column + len("InState")].strip()


def held_a_while(screen: str, server: str, status: str) -> bool:
    """``server`` has had ``status`` for 3 to 9 seconds on ConnPool."""
    if "InState" not in screen or not re.search(rf"{re.escape(server)}\s+{status}\b", screen):
        return False
    return re.fullmatch(r"[3-9]s", in_state(screen, server)) is not None


def expected_at_end(engine: ReplayEngine, server: str) -> Dict[str, str]:
    """What playing the recording through to its end shows of ``server``: its InState, the
    health view's time of its last ONLINE → SHUNNED and how long it is held."""
    log = played_through(engine, engine.index.end)
    engine.seek(engine.index.end)
    last = engine.latest(POOL)
    change = [c for c in log.changes if f"{c.key[1]}:{c.key[2]}" == server and c.new == "SHUNNED"][-1]
    # InState as of the pool reading; the health view's "for" as of the position (it follows the clock)
    return {"in_state": units.duration(last.wall_time - change.at), "changed": health.clock(int(change.at * 1e6)),
            "held": units.duration(last.wall_time + (engine.now() - last.taken_at) - change.at)}


def jump_to_end_and_open(term, server: str) -> Tuple[str, str]:
    """t end, paused, on ConnPool: (the table, the health view of ``server``)."""
    term.wait_until(lambda s: "recorded " in s, timeout=20, what="the replay")
    term.go("ConnPool")
    term.wait_for("InState", timeout=20)
    term.send("p")
    term.send("t")
    term.wait_for("jump to: ")
    term.send("end" + ENTER)
    table = term.wait_until(lambda s: AT_THE_END.search(s.splitlines()[1]) is not None and server in s, timeout=20,
                            what="the end")
    term.send("/")
    term.send(server.split(":")[1] + ENTER)
    term.wait_until(lambda s: f"filter {server.split(':')[1]}" in s, timeout=10, what="the server alone")
    term.send(ENTER)
    view = term.wait_until(lambda s: f"Health of {server}" in s and "Free connections" in s, timeout=10,
                           what="the health view")
    return table, view


def test_t_end_in_the_demo_shows_the_inState_and_changes_of_playing_through(proxytop_term):
    engine = ReplayEngine.open(DEMO_FILE)
    expected = expected_at_end(engine, "127.0.0.1:3313")
    term = proxytop_term("--demo", cols=160, rows=50)
    table, view = jump_to_end_and_open(term, "127.0.0.1:3313")
    assert in_state(table, "127.0.0.1:3313") == expected["in_state"]
    assert SHUNNED_CHANGE.search(view).group(1) == expected["changed"]
    assert HELD.search(view).group(1) == expected["held"]
    # stats_mysql_free_connections was never read while the demo was recorded: it says so
    assert NOT_RECORDED in view.split("Free connections")[1]


def test_a_locks_view_the_demo_never_read_says_so(proxytop_term):
    term = proxytop_term("--demo", cols=140, rows=40)
    term.wait_until(lambda s: "recorded " in s, timeout=20, what="the replay")
    term.send("M")
    term.wait_for("Locks", timeout=10)
    term.go("Locks")
    term.wait_for("127.0.0.1:3311", timeout=10)  # the demo read the locks of 3311 only
    term.send("n")
    term.wait_until(lambda s: "127.0.0.1:3312" in s and NOT_RECORDED in s, timeout=10,
                    what="the locks of 3312: not in this recording")
    assert "waiting for the first reading" not in term.text()


def test_a_recording_of_a_shun_jumped_to_its_end_agrees_with_playing_through(proxytop_term, proxysql_double, tmp_path):
    path = str(tmp_path / "shun.rec.gz")
    live = proxytop_term("-P", str(proxysql_double.port), "--no-discover", "--record", path, "--screen", "connpool")
    live.wait_until(lambda s: held_a_while(s, "127.0.0.1:3312", "ONLINE"), timeout=30, what="3312 ONLINE a while")
    proxysql_double.transforms["stats_mysql_connection_pool"] = shunned("3312")
    live.wait_until(lambda s: held_a_while(s, "127.0.0.1:3312", "SHUNNED"), timeout=30, what="3312 SHUNNED a while")
    live.send("q", pause=0)
    assert live.wait_exit(10) == 0

    engine = ReplayEngine.open(path)
    expected = expected_at_end(engine, "127.0.0.1:3312")
    term = proxytop_term("--replay", path, cols=160, rows=50)
    table, view = jump_to_end_and_open(term, "127.0.0.1:3312")
    assert in_state(table, "127.0.0.1:3312") == expected["in_state"]
    assert SHUNNED_CHANGE.search(view).group(1) == expected["changed"]
    assert HELD.search(view).group(1) == expected["held"]
    assert NOT_RECORDED in view.split("Free connections")[1]  # the health view was not open while recording


def test_jumps_back_and_forth_over_checkpoints_give_the_log_of_playing_through(tmp_path):
    """Fifteen minutes of a pool read every second, a backend shunned and back every five: the log
    restored from a checkpoint (one a minute) and folded on is the played-through one."""
    path = str(tmp_path / "quarter.rec.gz")
    hour_recording(path, backends=5, seconds=900)  # the fourth is the one shunned
    engine = ReplayEngine.open(path)
    engine.pause()
    start = engine.index.start
    screen = jumped_to(engine, start + 500, start + 890)  # (each jump within FOLD_AT_MOST)
    assert len(screen.checkpoints["mysql"]) >= 14
    for offset in (610.5, 200.0, 780.0, 301.0, 299.0, 45.0, 640.0):  # forward: at most 600 s on
        engine.seek(start + offset)
        screen.observe(DataView(engine))
        assert screen.status_log == played_through(engine, start + offset), offset
    assert [c.new for c in screen.status_log.changes] == ["SHUNNED", "ONLINE"]


def test_a_long_jump_folds_the_last_ten_minutes_only(tmp_path):
    """Fifteen minutes jumped across at once: the log begins ten minutes before the position,
    as if proxytop had started watching there (a day of readings would hold the screen)."""
    path = str(tmp_path / "quarter.rec.gz")
    hour_recording(path, backends=5, seconds=900)
    engine = ReplayEngine.open(path)
    engine.pause()
    start = engine.index.start
    screen = jumped_to(engine, start + 899)
    wall_at_end = 1.8e9 + 899  # (the recording's wall clock: 1.8e9 at its start)
    assert all(change.at >= wall_at_end - FOLD_AT_MOST for change in screen.status_log.changes)
    assert screen.status_log.changes  # the shuns of the last ten minutes are there


def test_after_t_end_connpool_and_events_give_the_shun_the_same_time():
    """The health view's change and the Events tab's, after the same jump, name the same reading."""
    engine = ReplayEngine.open(DEMO_FILE)
    config = replay_config(engine.index, options.parse([], {}), options.build_parser().parse_args([]))
    engine, controller = build(config, engine)
    engine.pause()
    events = next(s for s in controller.screens if isinstance(s, EventsScreen))
    connpool = next(s for s in controller.screens if isinstance(s, ConnPoolScreen))
    engine.seek(engine.index.end)
    connpool.observe(controller.view)
    events.rows(controller.view)
    in_events = [e.wall_time for e in events.log.events(until=engine.now()) if e.new == "SHUNNED"]
    assert in_events and [at for at, _server in shuns(connpool.status_log)] == in_events


def test_live_a_long_gap_between_two_pool_readings_keeps_the_whole_history(tmp_path):
    """The ten-minute bound is a replay's: live, a long pause or outage folds every reading
    since the last one folded, as playing through does."""
    class Live:  # the recording's readings, as a live engine (no wall span) would serve them
        def __init__(self, engine):
            self.engine = engine

        def __getattr__(self, name):
            return getattr(self.engine, name)

        def wall_span(self):
            return None

    path = str(tmp_path / "quarter.rec.gz")
    hour_recording(path, backends=5, seconds=900)
    engine = ReplayEngine.open(path)
    engine.pause()
    start = engine.index.start
    screen, view = ConnPoolScreen(), DataView(Live(engine))
    engine.seek(start + 10)
    screen.observe(view)
    engine.seek(start + 899)  # 889 s later
    screen.observe(view)
    assert screen.status_log == played_through(engine, start + 899)


def test_a_replays_events_are_folded_a_frame_at_a_time_after_a_long_jump(tmp_path):
    """After a jump across the recording, each frame folds a budget's worth of readings: the
    keys answer in between, and the events found in the end are those of one whole fold."""
    from proxytop.metrics.events import EventLog, watches

    path = str(tmp_path / "quarter.rec.gz")
    hour_recording(path, backends=5, seconds=900)

    def folded(budget):
        engine = ReplayEngine.open(path)
        engine.pause()
        log = EventLog()
        engine.follow(log.observe, watches)
        log.pull = engine.deliver
        engine.seek(engine.index.end)
        for frame in range(1, 1000):
            found = log.events(budget=budget)
            if log.caught_up:
                return found, frame
        raise AssertionError("never caught up")

    whole, frames = folded(None)
    assert frames == 1 and [e.new for e in whole if e.kind == "status"][:2] == ["SHUNNED", "ONLINE"]
    stepped, frames = folded(0.0)  # (a budget of nothing: 64 readings a frame)
    assert frames > 10 and stepped == whole
