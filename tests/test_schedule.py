"""The engine's schedule: due times, staggered starts and retry delays, on a hand-moved clock."""
from __future__ import annotations

import pytest

from proxytop.core import Collector
from proxytop.polling.schedule import ACTIVATION_DELAY, DUE_SLACK, Schedule


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def collector(name: str, source: str, interval: float = 1.0, minimum: float = 0.5, own_pace: bool = False):
    return type(name, (Collector,), dict(name=name, source=source, default_interval=interval,
                                         min_interval=minimum, own_pace=own_pace))()


def schedule_of(clock, *collectors):
    schedule = Schedule(clock)
    for c in collectors:
        schedule.add(c)
    return schedule


def test_newly_shown_collectors_read_a_moment_after_activation_and_only_once_activated():
    clock = Clock()
    pool, status = collector("pool", "proxysql"), collector("status", "proxysql")
    schedule = schedule_of(clock, pool, status)
    newly, plan = schedule.activate(frozenset({"pool"}))
    assert newly == {"pool"} and schedule.active == {"pool"}
    assert plan == [(pytest.approx(1000.0 + ACTIVATION_DELAY), "proxysql")]
    assert not schedule.is_due("pool")  # 100 ms away, more than the slack
    clock.now += ACTIVATION_DELAY - DUE_SLACK + 0.001  # within the slack of its due time
    assert schedule.is_due("pool")
    newly, plan = schedule.activate(frozenset({"pool", "status"}))
    assert newly == {"status"} and len(plan) == 1  # pool was already active: not planned again


def test_three_sources_started_together_are_spread_5_ms_apart():
    clock = Clock()
    a, b, c = collector("a", "db1"), collector("b", "db2"), collector("c", "db3")
    schedule = schedule_of(clock, a, b, c)
    _newly, plan = schedule.activate(frozenset({"a", "b", "c"}))
    start = 1000.0 + ACTIVATION_DELAY
    # 3 sources x 5 ms = 15 ms spread over the three: 0, 5 and 10 ms after the start
    assert [source for _, source in plan] == ["db1", "db2", "db3"]
    assert [due - start for due, _ in plan] == pytest.approx([0.0, 0.005, 0.010])
    assert schedule.first_due([b, c]) == pytest.approx(start + 0.005)


def test_a_reading_is_due_one_interval_after_it_started_and_a_failure_likewise():
    clock = Clock()
    digest = collector("digest", "proxysql", interval=2.0, minimum=1.0)
    schedule = schedule_of(clock, digest)
    schedule.activate(frozenset({"digest"}))
    schedule.read(digest, started=1000.5)
    assert schedule.first_due([digest]) == 1002.5
    digest.min_interval = 3.0  # the digest's minimum grew with its read time: it wins
    schedule.read(digest, started=1003.0)
    assert schedule.first_due([digest]) == 1006.0
    schedule.failed("digest", started=1010.0)
    assert schedule.first_due([digest]) == 1012.0
    schedule.read_now("digest")
    assert schedule.first_due([digest]) == 0.0


def test_a_shorter_interval_replans_from_the_last_reading_and_is_clamped_to_the_minimum():
    clock = Clock()
    pool = collector("pool", "proxysql", interval=10.0, minimum=0.5)
    schedule = schedule_of(clock, pool)
    schedule.read(pool, started=1000.0)  # next at 1010
    assert schedule.set_interval(pool, 2.0, last_reading=1000.0) == (2.0, 10.0)
    assert schedule.first_due([pool]) == 1002.0
    assert schedule.set_interval(pool, 0.1, last_reading=1000.0) == (0.5, 2.0)
    assert schedule.interval("pool") == 0.5
    assert schedule.set_interval(pool, 30.0, last_reading=1000.0) == (30.0, 0.5)
    assert schedule.first_due([pool]) == 1000.5  # a longer interval never delays the reading planned


@pytest.mark.parametrize("backoff, intervals, expected", [
    (8.0, [1.0, 5.0], 1.5),  # 1.5 x the shortest interval (1 s) beats the 8 s backoff
    (1.0, [1.0, 5.0], 1.0),  # the backoff is shorter
    (10.0, [], 10.0),  # nothing active: the backoff
])
def test_retry_delay_is_the_backoff_capped_at_one_and_a_half_intervals(backoff, intervals, expected):
    collectors = [collector(f"c{i}", "db", interval=s) for i, s in enumerate(intervals)]
    schedule = schedule_of(Clock(), *collectors)
    assert schedule.retry_delay(backoff, collectors) == expected


def test_own_pace_collectors_do_not_shorten_the_retry():
    config = collector("config", "proxysql", interval=0.5, minimum=0.5, own_pace=True)
    pool = collector("pool", "proxysql", interval=4.0)
    schedule = schedule_of(Clock(), config, pool)
    assert schedule.retry_delay(10.0, [config, pool]) == 6.0  # 1.5 x 4 s, the own-pace 0.5 s aside
