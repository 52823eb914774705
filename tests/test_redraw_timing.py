"""When the screen is redrawn although nothing new arrived (proxytop.ui.wakeup.next_redraw_in):
as a down source's retry countdown ticks, and when the data falls overdue. The engine keeps
the states that count down as they change, so a frame looks at those alone, not at a fleet's
501 sources."""
from __future__ import annotations

import threading
import time

from proxytop.core import Collector, Snapshot, Source
from proxytop.polling.engine import Engine
from proxytop.ui.controller import UIState
from proxytop.ui.wakeup import next_redraw_in
from tests.test_engine import wait


class Flaky(Source):
    pooled = True

    def __init__(self, name: str, up: threading.Event):
        self.name, self.up = name, up

    def connect(self):
        if not self.up.is_set():
            raise ConnectionRefusedError("refused")
        return object()


class Reading(Collector):
    def __init__(self, source: str):
        self.name, self.source = f"read.{source}", source
        self.default_interval = self.min_interval = 0.5

    def collect(self, handle):
        return 1


class Controller:
    """What next_redraw_in reads of the UI's controller."""

    ui = UIState(0, {}, {}, {})
    screen = "innodb"

    def __init__(self, engine, newest=None, interval=1.0):
        self.engine, self.newest, self._interval = engine, newest, interval

    def clock(self):
        return time.monotonic()

    def newest_of_screen(self):
        return self.newest

    def interval(self):
        return self._interval

    def minimum_interval(self, screen):
        return 0.5

    def events_behind(self):
        return False  # (a live engine: no replay's events to catch up)



def test_a_down_source_among_many_redraws_as_its_countdown_ticks_and_not_once_it_is_back():
    ups = {f"s{n}": threading.Event() for n in range(40)}
    engine = Engine()
    for name, up in ups.items():
        if name != "s7":
            up.set()
        engine.add_source(Flaky(name, up))
        engine.add_collector(Reading(name))
    engine.set_active([f"read.{name}" for name in ups])
    ctl = Controller(engine)
    engine.start()
    try:
        assert wait(lambda: engine.state("s7").retry_at is not None and not engine.state("s7").connected, 10)
        assert wait(lambda: all(engine.state(n).connected for n in ups if n != "s7"), 10)
        engine.pause()  # what the frame waits for: the countdown, not the readings' age
        now = engine.now()
        down = engine.state("s7")
        expected = down.countdown_changes_in(now) + 0.01
        assert [s.name for s in engine.counting_down()] == ["s7"]
        # (the countdown is read on the engine's clock, a moment later)
        assert 0 <= expected - next_redraw_in(ctl, now) < 0.05
        # every state looked at gives the same moment (what a frame computed before)
        assert min(s.countdown_changes_in(now) for s in engine.states()
                   if s.countdown_changes_in(now) is not None) + 0.01 == expected
        ups["s7"].set()
        engine.resume()
        assert wait(lambda: engine.state("s7").connected, 10)
        engine.pause()
        assert engine.counting_down() == [] and next_redraw_in(ctl, engine.now()) is None
    finally:
        engine.stop()


def test_data_falling_overdue_redraws_when_it_does_then_every_second():
    engine = Engine()
    newest = Snapshot("read.x", 1, taken_at=100.0, duration=0.0)
    ctl = Controller(engine, newest, interval=2.0)
    # the next reading is due at 102: the age shows the server is slow from 103 on
    assert abs(next_redraw_in(ctl, 100.5) - 2.5) < 1e-9
    assert next_redraw_in(ctl, 103.5) == 1.0
    engine.pause()
    assert next_redraw_in(ctl, 103.5) is None  # paused: the header says when the frozen data was read


def test_a_replays_events_still_folding_after_a_jump_ask_for_the_next_frame_at_once():
    class Behind(Controller):
        def events_behind(self):
            return True

    engine = Engine()
    assert next_redraw_in(Controller(engine), time.monotonic()) is None  # nothing due: no redraw
    assert next_redraw_in(Behind(engine), time.monotonic()) == 0.0
