"""The polling engine with real collectors against the ProxySQL double."""
from __future__ import annotations

import re
import threading
import time

from proxytop.core import Collector, Source
from proxytop.collectors.proxysql import ConnectionPool, GlobalStatus, RuntimeServers
from proxytop.polling.connection import Endpoint, ProxySQLSource
from proxytop.polling.engine import Engine, backoff_delay


def wait(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def tables_read(double):
    names = set()
    for sql in double.queries():
        names.update(re.findall(r"\bfrom\s+([\w.]+)", sql, re.IGNORECASE))
    return names


def make_engine(double):
    engine = Engine()
    engine.add_source(ProxySQLSource(Endpoint(port=double.port, timeout=1)))
    for collector in (GlobalStatus(), ConnectionPool(), RuntimeServers()):
        engine.add_collector(collector)
    return engine


def test_only_active_collectors_poll(proxysql_double):
    engine = make_engine(proxysql_double)
    engine.set_active(["proxysql.global"])
    engine.set_interval("proxysql.global", 0.5)
    engine.start()
    try:
        assert wait(lambda: len(engine.history("proxysql.global")) == 2)
        assert "stats_mysql_connection_pool" not in tables_read(proxysql_double)
        engine.set_active(["proxysql.global", "proxysql.connection_pool"])
        assert wait(lambda: engine.latest("proxysql.connection_pool") is not None)
        engine.set_active(["proxysql.global"])
        time.sleep(0.3)
        count = sum("connection_pool" in q for q in proxysql_double.queries())
        time.sleep(1.2)
        assert sum("connection_pool" in q for q in proxysql_double.queries()) == count
        assert not any("_reset" in q for q in proxysql_double.queries())
    finally:
        engine.stop()


def test_snapshots_are_stamped_and_rates_have_two(proxysql_double):
    engine = make_engine(proxysql_double)
    engine.set_active(["proxysql.connection_pool"])
    engine.set_interval("proxysql.connection_pool", 0.5)
    engine.start()
    try:
        assert wait(lambda: len(engine.history("proxysql.connection_pool")) >= 2)
        previous, current = engine.last_two("proxysql.connection_pool")
        assert current.taken_at - previous.taken_at >= 0.4
        assert 0 <= current.duration < 1.0
        assert current.data.has("srv_host") and len(current.data.rows) == 3
    finally:
        engine.stop()


def test_interval_is_clamped_to_the_collectors_minimum(proxysql_double):
    engine = make_engine(proxysql_double)
    assert engine.set_interval("proxysql.runtime_servers", 1.0) == RuntimeServers.min_interval
    assert engine.set_interval("proxysql.global", 0.1) == GlobalStatus.min_interval


def test_lost_server_is_reported_retried_and_recovered(proxysql_double):
    engine = make_engine(proxysql_double)
    engine.set_active(["proxysql.global"])
    engine.set_interval("proxysql.global", 0.5)
    engine.start()
    try:
        assert wait(lambda: engine.state("proxysql").connected)
        proxysql_double.stop()
        assert wait(lambda: not engine.state("proxysql").connected and engine.state("proxysql").error)
        state = engine.state("proxysql")
        assert state.retry_at is not None and state.failures >= 1
        assert "connection" in state.error
        proxysql_double.start()
        assert wait(lambda: engine.state("proxysql").connected, timeout=15)
        before = len(engine.history("proxysql.global"))
        assert wait(lambda: len(engine.history("proxysql.global")) > 0 and
                    engine.latest("proxysql.global").taken_at > engine.state("proxysql").since)
        assert before >= 0
    finally:
        engine.stop()


class SlowSource(Source):
    name = "slow"

    def __init__(self, gate: threading.Event):
        self.gate = gate

    def connect(self):
        self.gate.wait(10)  # a server that hangs
        return object()


class Clock(Collector):
    name = "fast"
    source = "host"
    min_interval = 0.05
    default_interval = 0.05

    def collect(self, handle):
        return time.monotonic()


class Stuck(Collector):
    name = "stuck"
    source = "slow"

    def collect(self, handle):
        return 1


def test_a_hung_source_never_delays_another():
    from proxytop.core import HostSource

    gate = threading.Event()
    engine = Engine()
    engine.add_source(HostSource())
    engine.add_source(SlowSource(gate))
    engine.add_collector(Clock())
    engine.add_collector(Stuck())
    engine.set_active(["fast", "stuck"])
    engine.start()
    try:
        assert wait(lambda: len(engine.history("fast")) == 2, timeout=2)
        assert engine.latest("stuck") is None
    finally:
        gate.set()
        engine.stop()


def test_backoff_is_capped():
    assert [backoff_delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 10, 10, 10]


def test_pause_stops_polling(proxysql_double):
    engine = make_engine(proxysql_double)
    engine.set_active(["proxysql.global"])
    engine.set_interval("proxysql.global", 0.5)
    engine.start()
    try:
        assert wait(lambda: engine.latest("proxysql.global") is not None)
        engine.pause()
        time.sleep(0.3)
        count = len(proxysql_double.queries())
        time.sleep(1.2)
        assert len(proxysql_double.queries()) == count
        engine.resume()
        assert wait(lambda: len(proxysql_double.queries()) > count)
    finally:
        engine.stop()



def test_long_histories_keep_older_readings_shrunk_and_the_sparkline_unchanged(proxysql_double):
    from proxytop.core import Table
    from proxytop.collectors.proxysql_stats import QueryRuleHits, RuleHits
    from proxytop.screens.queryrules import hits_series

    engine = Engine()
    engine.add_source(ProxySQLSource(Endpoint(port=proxysql_double.port, timeout=1)))
    engine.add_collector(QueryRuleHits())
    whole = []  # every reading as it arrived, before the engine shrank it
    engine.add_observer(lambda kind, value: whole.append(value) if kind == "snapshot" else None)
    engine.set_active(["proxysql.query_rule_hits"])
    engine.set_interval("proxysql.query_rule_hits", 0.5)
    engine.start()
    try:
        assert wait(lambda: len(engine.history("proxysql.query_rule_hits")) >= 5, timeout=8)
    finally:
        engine.stop()
    history = engine.history("proxysql.query_rule_hits")
    assert [s.taken_at for s in history] == [s.taken_at for s in whole[-len(history):]]
    whole = whole[-len(history):]
    # rates use the last two: whole tables; older readings are kept as RuleHits
    assert all(isinstance(s.data, Table) for s in history[-2:])
    assert all(isinstance(s.data, RuleHits) for s in history[:-2])
    assert history[0].data.position is history[1].data.position  # same rules: one shared index
    id_at = whole[-1].data.columns.index("rule_id")
    rule_ids = [int(row[id_at]) for row in whole[-1].data.rows]
    assert rule_ids
    for rule_id in rule_ids + [999999]:
        assert hits_series(history, rule_id) == hits_series(whole, rule_id)
    assert any(v for rule_id in rule_ids for v in hits_series(history, rule_id))  # not all gaps


def test_the_active_collectors_of_a_source_follow_activation_and_new_collectors():
    engine = Engine()  # not started: nothing polls
    engine.add_source(ProxySQLSource(Endpoint(port=1, timeout=1)))
    engine.add_collector(GlobalStatus())
    engine.add_collector(ConnectionPool())
    names = lambda: [c.name for c in engine._active_of("proxysql")]  # noqa: E731
    engine.set_active(["proxysql.global"])
    assert names() == ["proxysql.global"]
    assert names() == ["proxysql.global"]  # asked again: the same answer
    engine.set_active(["proxysql.global", "proxysql.connection_pool", "proxysql.runtime_servers"])
    assert names() == ["proxysql.global", "proxysql.connection_pool"]
    engine.add_collector(RuntimeServers())  # registered after activation (e.g. a screen built late)
    engine.set_active(["proxysql.global", "proxysql.connection_pool", "proxysql.runtime_servers"])
    assert names() == ["proxysql.global", "proxysql.connection_pool", "proxysql.runtime_servers"]
    engine.set_active([])
    assert names() == []

