"""Benchmark of the event log: ``python -m tests.bench_events``.

Prints each figure beside its target:
- the fold's CPU per reading, on the engine's worker threads (every reading events watch goes
  through it): a pool of 500 backends (read every 2 s on every screen), a MySQL server's 600
  global variables (every 30 s), ProxySQL's 212 runtime variables; and per source state (each
  connection attempt of each source: unreachable / back), with 100 servers watched;
- the Events screen's rows at 10,000 events (the log's limit): rows + arrange, per change; and
  per frame without a change;
- a replay's catch-up: the demo recording's readings folded from its start to its end (what
  the Events screen or --batch asks for once after a long jump forward).
"""
from __future__ import annotations

import time
from typing import Callable

from proxytop.core import Table
from proxytop.metrics.events import EventLog, VariablesReading
from proxytop.polling.engine import SourceState
from proxytop.recordings.replay import DEMO_FILE, ReplayEngine
from proxytop.screens.events import EventsScreen, event_row
from proxytop.screens.table import TableState
from tests.benchmark import machine, ms

TARGET_FOLD_MS = 1.0  # per reading: a pool of 500 backends, 600 variables
TARGET_STATE_MS = 0.1  # per source state: told on the worker threads with every connection attempt
TARGET_ROWS_MS = 100.0  # 10,000 events, once per new event (the rows are kept between frames)
TARGET_FRAME_MS = 2.0  # up to ten frames a second
TARGET_CATCH_UP_S = 1.0  # the demo, start to end
ROUNDS = 50

POOL_COLUMNS = ("hostgroup", "srv_host", "srv_port", "status", "ConnUsed")


def per_call(work: Callable[[int], None], rounds: int = ROUNDS) -> float:
    started = time.process_time()
    for i in range(rounds):
        work(i)
    return (time.process_time() - started) / rounds


def pool(backends: int, shunned: int) -> Table:
    return Table(POOL_COLUMNS, tuple((str(10 + i % 5), f"10.0.{i // 250}.{i % 250}", "3306",
                                      "SHUNNED" if i == shunned else "ONLINE", "1") for i in range(backends)))


def main() -> int:
    print(machine())
    log = EventLog()
    pools = [pool(500, i % 500) for i in range(ROUNDS + 1)]
    log.feed("proxysql.connection_pool", pools[0], 0.0)
    fold_pool = per_call(lambda i: log.feed("proxysql.connection_pool", pools[i + 1], float(i + 1)))
    variables = [VariablesReading({f"variable_{n}": str(n + (i if n == 7 else 0)) for n in range(600)}, 100 + i)
                 for i in range(ROUNDS + 1)]
    log.feed("mysql.variables.db1:3306", variables[0], 0.0)
    fold_vars = per_call(lambda i: log.feed("mysql.variables.db1:3306", variables[i + 1], float(i + 1)))
    print(f"fold per reading: pool of 500 backends {ms(fold_pool):.3f} ms, 600 variables {ms(fold_vars):.3f} ms "
          f"(target {TARGET_FOLD_MS:g} ms)")
    for n in range(100):  # 100 servers reached: the state folded is one among them
        log.observe("state", SourceState(f"mysql:db{n}:3306", connected=True, wall_time=1.0))
    states = [SourceState("mysql:db7:3306", connected=i % 3 == 2, error=None if i % 3 == 2 else "timed out",
                          connecting=i % 3 == 1, changed_at=float(i), wall_time=float(i)) for i in range(3 * ROUNDS)]
    fold_state = per_call(lambda i: log.observe("state", states[i]), rounds=len(states))
    print(f"fold per source state (unreachable, a retry, back; 100 servers watched): {ms(fold_state):.4f} ms "
          f"(target {TARGET_STATE_MS:g} ms)")

    big = EventLog()
    for i in range(10_000):
        big.feed("proxysql.variables", VariablesReading({"v": str(i)}, 100 + i), float(i))
    screen = EventsScreen()
    state = TableState(sort_key="time", descending=True)
    rows_cost = per_call(lambda i: screen.arrange([event_row(e) for e in big.events()], state), rounds=10)
    print(f"Events screen at 10,000 events, rows + arrange: {ms(rows_cost):.1f} ms (target {TARGET_ROWS_MS:g} ms)")
    frame = per_call(lambda i: big.events(until=1e12), rounds=100)
    print(f"  per frame without a new event (the rows' token: the events up to now): {ms(frame):.2f} ms "
          f"(target {TARGET_FRAME_MS:g} ms)")

    engine = ReplayEngine.open(DEMO_FILE)
    screen = EventsScreen()
    screen.attach(engine)
    engine.seek(engine.index.end)
    started = time.process_time()
    found = screen.log.events(until=engine.now())
    catch_up = time.process_time() - started
    readings = sum(len(s) for name, s in engine.index.snapshots.items() if name.startswith(("proxysql.", "mysql.")))
    readings += sum(len(s) for s in engine.index.states.values())
    print(f"replay catch-up, the demo start to end ({readings} readings and source states, {len(found)} events): "
          f"{catch_up:.3f} s (target {TARGET_CATCH_UP_S:g} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
