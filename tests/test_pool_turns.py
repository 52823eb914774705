"""The engine's pool of threads serving many sources: a source hanging in the middle of a
turn (after it connected, inside a reading) never holds the other sources' turns for long,
although the thread that takes a turn also times the next one (see
proxytop.polling.engine._WorkerPool)."""
from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time

import proxytop.polling.engine as engine_module
from proxytop.collectors.base import Collector, Source
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
            # the turn after the hang came, at worst, one deputy's look late (with a busy
            # machine's margin), never after the hung reading
            gaps = readings_apart(engine, collector.name)[counts[collector.name]:]
            assert gaps and max(gaps) < interval + engine_module.DEPUTY_LOOKS_EVERY + 1.0, (collector.name, gaps)
        assert engine.latest(hung.name) is None
    finally:
        gate.set()
        engine.stop()


def test_a_pool_of_one_thread_reads_every_source_in_turn(monkeypatch):
    """No other thread to hand the timing to: the one thread takes each turn and times the next."""
    monkeypatch.setattr(engine_module, "POOL_THREADS", 1)
    collectors = [Reading(f"one{n}", 0.1) for n in range(5)]
    engine = pooled_engine(collectors)
    engine.set_active([c.name for c in collectors])
    engine.start()
    try:
        assert wait(lambda: all(len(engine.history(c.name)) >= 6 for c in collectors), 20)
        assert engine._pool.threads == 1
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
        assert wait(lambda: not pool._heap or all(w.planned is None for _, _, w in pool._heap), 5)
        assert wait(lambda: pool._idle == pool.threads, 5)
        looks = []
        real_wait = pool._cond.wait

        def counted_wait(timeout=None):
            looks.append(timeout)
            return real_wait(timeout)

        pool._cond.wait = counted_wait
        time.sleep(1.0)
        # at most a last look of a deputy that then found nothing to time: no timed waits
        assert len(looks) <= pool.threads and all(t == engine_module.IDLE_WAIT for t in looks), looks
    finally:
        engine.stop()


def test_turns_due_within_the_slack_are_taken_without_sleeping_between_them(monkeypatch):
    """A thread back from a turn takes the next connected source's turn due within TURN_SLACK at
    once: five sources whose first readings are staggered by a few milliseconds are read with
    one sleep of the timer a round, not one per source (each a wake-up of its own)."""
    from proxytop.polling.schedule import DUE_SLACK, STAGGER_PER_SOURCE

    assert engine_module.TURN_SLACK < DUE_SLACK  # a turn taken early has its reading due
    assert 4 * STAGGER_PER_SOURCE <= engine_module.TURN_SLACK
    monkeypatch.setattr(engine_module, "POOL_THREADS", 1)
    collectors = [Reading(f"slack{n}", 0.2) for n in range(5)]
    engine = pooled_engine(collectors)
    sleeps = []
    real_wait = engine_module._WorkerPool._wait_as_timer

    def counted(pool, timeout):
        sleeps.append(timeout)
        return real_wait(pool, timeout)

    monkeypatch.setattr(engine_module._WorkerPool, "_wait_as_timer", counted)
    engine.set_active([c.name for c in collectors])
    engine.start()
    try:
        assert wait(lambda: all(len(engine.history(c.name)) >= 2 for c in collectors), 20)
        before, read_before = len(sleeps), sum(len(engine.history(c.name)) for c in collectors)
        assert wait(lambda: all(len(engine.history(c.name)) >= 8 for c in collectors), 20)
        rounds = (sum(len(engine.history(c.name)) for c in collectors) - read_before) / len(collectors)
        # one sleep per round, and a few more on a busy machine (a turn that came back late)
        assert len(sleeps) - before <= 2 * rounds + 2, (len(sleeps) - before, rounds)
        for collector in collectors:  # never read sooner than the interval less the slack
            assert min(readings_apart(engine, collector.name)) >= 0.2 - engine_module.TURN_SLACK - 0.005
    finally:
        engine.stop()


class Answering(Source):
    """A pooled source whose server answers each statement (a byte on a socket pair) at once,
    or after ``before_answer(n)`` returned for the n-th statement (from 0)."""

    pooled = True

    def __init__(self, name: str, before_answer=None):
        self.name = name
        self.before_answer = before_answer

    def connect(self):
        ours, theirs = socket.socketpair()
        threading.Thread(target=self._answer, args=(theirs,), daemon=True).start()
        return Connection(ours)

    def _answer(self, theirs) -> None:
        with theirs:
            for n in itertools.count():
                if not theirs.recv(1):
                    return
                if self.before_answer is not None:
                    self.before_answer(n)
                try:
                    theirs.sendall(b"!")
                except OSError:  # the engine stopped and closed its end meanwhile
                    return

    def close(self, handle) -> None:
        handle.sock.close()


class Connection:
    def __init__(self, sock):
        self.sock = sock
        self.in_flight = False
        self.settled = 0

    def settle_ahead(self) -> None:
        if self.in_flight:
            self.in_flight = False
            self.sock.recv(1)
            self.settled += 1


class AheadReading(Collector):
    """A reading of one statement the pool may send before the turn; ``log`` gets ("sent",
    source) and ("read", source) in the order they happen."""

    history = 50

    def __init__(self, source: str, interval: float, log: list):
        self.name, self.source = f"ahead.{source}", source
        self.default_interval = self.min_interval = interval
        self.log = log

    def sends_ahead(self, connection) -> bool:
        return not connection.in_flight

    def send_ahead(self, connection):
        connection.sock.sendall(b"?")
        connection.in_flight = True
        self.log.append(("sent", self.source))
        return connection.sock.fileno()

    def collect(self, connection):
        if not connection.in_flight:
            connection.sock.sendall(b"?")
        connection.in_flight = False
        connection.sock.recv(1)
        self.log.append(("read", self.source))
        return time.monotonic()


def ahead_engine(sources, interval, log) -> Engine:
    engine = pooled_engine([AheadReading(source.name, interval, log) for source in sources], sources)
    engine.set_active(engine.collector_names("ahead."))
    return engine


def rounds_taken_together(log, names):
    """The stretches of the log where every one of ``names`` was sent before any was read:
    for each, the order the sources were read in."""
    found, at = [], 0
    while at + 2 * len(names) <= len(log):
        head = log[at:at + len(names)]
        if sorted(head) == sorted(("sent", name) for name in names):
            found.append([name for kind, name in log[at + len(names):at + 2 * len(names)] if kind == "read"])
            at += 2 * len(names)
        else:
            at += 1
    return found


def test_turns_due_together_are_sent_first_then_read_as_their_answers_come(monkeypatch):
    """One thread takes the turns of five servers due together: each server gets its statement
    before any answer is read (one wait for the five answers, not five), and a server that
    answers only once the others' readings are done holds up none of them (read in the order
    sent, they would wait for it); its next turn is planned from when its statement went out,
    not from its late answer."""
    monkeypatch.setattr(engine_module, "POOL_THREADS", 1)
    monkeypatch.setattr(engine_module, "SLOW_ANSWER", 60.0)  # no answer in time: read in the order sent
    log: list = []
    names = [f"db{n}" for n in range(5)]
    late = 0.3

    def after_the_others(n: int) -> None:
        if n == 0:
            return  # its first statement, when it connects
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            since = list(log)
            sent = max((i for i, entry in enumerate(since) if entry == ("sent", "db0")), default=None)
            if sent is not None and {("read", other) for other in names[1:]} <= set(since[sent:]):
                break
            time.sleep(0.01)
        time.sleep(late)

    sources = [Answering("db0", after_the_others)] + [Answering(name) for name in names[1:]]
    interval = 0.5
    engine = ahead_engine(sources, interval, log)
    collectors = [f"ahead.{name}" for name in names]
    engine.start()
    try:
        assert wait(lambda: all(engine.latest(name) for name in collectors), 20)
        for _ in range(3):
            seen = len(log)
            engine.read_together(collectors)  # due at the same moment (a busy machine spreads them)
            assert wait(lambda: rounds_taken_together(log[seen:], names), 40), log[seen:]
            order = rounds_taken_together(log[seen:], names)[0]
            assert sorted(order) == sorted(names) and order[-1] == "db0", (order, log[seen:])
        engine.pause()  # no turn after this one: its reading and its plan stay as they are
        assert wait(lambda: len(engine.history("ahead.db0")) >= 4, 20)
        time.sleep(0.1)
        read = engine.latest("ahead.db0").taken_at  # when its reading began: its answer came late
        assert engine._schedule.first_due([engine.collector("ahead.db0")]) - read < interval - late + 0.05
    finally:
        engine.stop()


def test_an_answer_sent_ahead_and_not_read_by_its_turn_is_settled(monkeypatch):
    """A turn that reads nothing after its statement was sent (the engine paused meanwhile)
    leaves the connection clear: the answer is read and dropped at the end of the turn."""
    monkeypatch.setattr(engine_module, "POOL_THREADS", 1)
    log: list = []
    names = [f"p{n}" for n in range(3)]
    engine = ahead_engine([Answering(name) for name in names], 0.3, log)
    real_send = AheadReading.send_ahead

    def send_then_pause(collector, connection):
        descriptor = real_send(collector, connection)
        engine.pause()  # before the turn reads: the turn takes nothing
        return descriptor

    engine.start()
    try:
        assert wait(lambda: len(rounds_taken_together(list(log), names)) >= 1, 20), log
        monkeypatch.setattr(AheadReading, "send_ahead", send_then_pause)
        connections = [engine._workers[name].handle for name in names]
        assert wait(lambda: any(c.settled for c in connections), 20)
        settled = [c for c in connections if c.settled]
        assert all(not c.in_flight for c in settled)
        monkeypatch.setattr(AheadReading, "send_ahead", real_send)
        read = len(log)
        engine.resume()  # the settled connections read again, one answer per statement
        assert wait(lambda: len(rounds_taken_together(log[read:], names)) >= 2, 20), log[read:]
    finally:
        engine.stop()


def test_a_source_planned_twice_for_the_same_moment_is_taken_once():
    """The pool's heap may hold two entries of one source for the same moment (planned, woken
    sooner, then planned for that moment again): the turns taken with it never take it a
    second time (its statement would go out twice)."""
    # never started: no pool thread takes these turns
    engine = pooled_engine([AheadReading(name, 0.5, []) for name in "ab"], [Answering(name) for name in "ab"])
    pool = engine._pool
    pool._idle = 1  # as if a thread were idle: planning starts none
    engine.set_active(engine.collector_names("ahead."))
    workers = [engine._workers["a"], engine._workers["b"]]
    try:
        for worker in workers:
            worker.connected, worker.handle = True, worker.source.connect()
        a, b = workers
        moment = engine.now()
        for name in ("ahead.a", "ahead.b"):
            engine._schedule._next_due[name] = moment  # due now (activation plans them a moment on)
        with pool._cond:
            pool._heap.clear()
            a.planned = b.planned = None
            pool._plan(a, moment)
            pool._plan(a, moment - 0.01)  # woken: a sooner turn
            heapq.heappop(pool._heap)  # ... taken
            a.planned = None
            pool._plan(a, moment)  # planned for the first moment again: two entries now
            pool._plan(b, moment)
            assert [w.source.name for _, _, w in pool._heap].count("a") == 2
            _, _, lead = heapq.heappop(pool._heap)
            assert lead is a
            lead.planned, lead.running = None, True  # as _serve takes it
            assert pool._turns_together(lead) == (b,)
    finally:
        for worker in workers:
            worker.source.close(worker.handle)
