"""The engine's pool of threads serving many sources: a source hanging in the middle of a
turn (after it connected, inside a reading) never holds the other sources' turns for long,
and an idle pool sleeps (see proxytop.polling.engine._WorkerPool)."""
from __future__ import annotations

import threading
import time

import proxytop.polling.engine as engine_module
from proxytop.core import Collector, Source
from proxytop.polling.engine import Engine
from tests.test_engine import wait


class Pooled(Source):
    pooled = True

    def __init__(self, name: str):
        self.name = name

    def connect(self):
        return object()


class Reading(Collector):
    history = 50

    def __init__(self, source: str, interval: float, gate: threading.Event = None):
        self.name, self.source = f"read.{source}", source
        self.default_interval = self.min_interval = interval
        self.gate = gate
        self.entered = threading.Event()

    def collect(self, handle):
        if self.gate is not None:
            self.entered.set()
            self.gate.wait(30)  # a server that stops answering in the middle of a reading
        return time.monotonic()


def pooled_engine(collectors, sources=None) -> Engine:
    """An engine whose pool serves a source of its own for each of ``collectors``: ``sources``,
    in the same order, or a Pooled source each."""
    engine = Engine()
    for n, collector in enumerate(collectors):
        engine.add_source(sources[n] if sources else Pooled(collector.source))
        engine.add_collector(collector)
    return engine


def readings_apart(engine, name):
    taken = [s.taken_at for s in engine.history(name)]
    return [b - a for a, b in zip(taken, taken[1:])]



def test_a_source_hanging_inside_a_reading_does_not_hold_the_others(monkeypatch):
    monkeypatch.setattr(engine_module, "POOL_THREADS", 3)
    gate = threading.Event()
    interval = 0.2
    hung = Reading("hung", interval, gate)
    others = [Reading(f"s{n}", interval) for n in range(6)]
    engine = pooled_engine([hung] + others)
    engine.set_active([c.name for c in [hung] + others])
    engine.start()
    try:
        assert hung.entered.wait(10), "the hung source's reading began"
        counts = {c.name: len(engine.history(c.name)) for c in others}
        # every other source read five more times while one pool thread is held
        assert wait(lambda: all(len(engine.history(c.name)) >= counts[c.name] + 5 for c in others), 20)
        for collector in others:
            # the turns after the hang came on time (with a busy machine's margin), never after
            # the hung reading
            gaps = readings_apart(engine, collector.name)[counts[collector.name]:]
            assert gaps and max(gaps) < interval + 1.0, (collector.name, gaps)
        assert engine.latest(hung.name) is None
    finally:
        gate.set()
        engine.stop()


def test_a_pool_of_one_thread_reads_every_source_in_turn(monkeypatch):
    """The one thread takes each turn and times the next."""
    monkeypatch.setattr(engine_module, "POOL_THREADS", 1)
    collectors = [Reading(f"one{n}", 0.1) for n in range(5)]
    engine = pooled_engine(collectors)
    engine.set_active([c.name for c in collectors])
    engine.start()
    try:
        assert wait(lambda: all(len(engine.history(c.name)) >= 6 for c in collectors), 20)
        assert len(engine._pool._threads) == 1
    finally:
        engine.stop()


def test_an_idle_pool_sleeps(monkeypatch):
    """Sources whose screen is hidden hold no turn: no thread of the pool wakes (the deputy
    looks only while there are turns to time)."""
    collectors = [Reading(f"idle{n}", 0.1) for n in range(4)]
    engine = pooled_engine(collectors)
    engine.set_active([c.name for c in collectors])
    engine.start()
    try:
        assert wait(lambda: all(len(engine.history(c.name)) >= 2 for c in collectors), 20)
        engine.set_active([])
        pool = engine._pool
        assert wait(lambda: pool._first_planned() is None, 5)
        assert wait(lambda: pool._idle == len(pool._threads), 5)
        looks = []
        real_wait = pool._wait

        def counted_wait(condition, timeout):
            looks.append(timeout)
            return real_wait(condition, timeout)

        pool._wait = counted_wait
        time.sleep(1.0)  # a quiet second to observe
        # at most a last look of a thread that then found nothing to time: no timed waits
        assert len(looks) <= len(pool._threads) and all(t == engine_module.IDLE_WAIT for t in looks), looks
    finally:
        engine.stop()
