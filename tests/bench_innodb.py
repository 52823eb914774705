"""What one InnoDB server reading costs, part by part, at 500 servers (in-process).

    python3 -m tests.bench_innodb               # 20 s of the pool, 20 frames
    python3 -m tests.bench_innodb --seconds 40

One throw-away MariaDB reached through 500 socket paths (tests.benchmark.MySQLFleet), as the
InnoDB screen watches 500 servers. Figures, each beside its target where it has one:

- per server reading: statements sent, bytes the server sent, rows decoded, objects kept
  (the snapshots' data) — what a reading asks and brings;
- CPU of the collectors alone (one thread, one reading of every server after another);
- CPU of the engine's pool reading all 500 every 5 s (no UI): collectors plus the pool's own
  bookkeeping, per server reading;
- the UI thread's part: assessing one server's new readings (every row read since the last
  frame), and a frame of the screen (view.render) at 500 servers.

The whole process in a terminal (what a DBA's ``top`` shows, the 0.3 ms target) is
``python3 -m tests.bench_process --only innodb``; this one says where that goes.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Optional, Sequence

from tests.benchmark import SCALE, MySQLFleet, machine

TARGET_COLLECT_MS = 0.15  # the collectors of one reading, alone
TARGET_POOL_MS = 0.25  # a reading through the pool (collectors and bookkeeping), no UI
TARGET_FRAME_MS = 5.0  # a frame of the InnoDB screen at 500 servers
INTERVAL = 5.0  # proxytop.collectors.innodb_fleet.fleet_min_interval(500)


def objects_in(value) -> int:
    """The objects a reading's data holds (containers, instances and their values, each counted
    once; classes and what they refer to are not the reading's)."""
    seen, stack, count = set(), [value], 0
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type):
            continue
        seen.add(id(item))
        count += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif hasattr(item, "__dict__"):
            stack.extend(vars(item).values())
    return count


def bytes_sent(session) -> int:
    return int(session.query("SHOW SESSION STATUS LIKE 'Bytes_sent'").rows[0][1])


def reading_figures(fleet: MySQLFleet, servers: int):
    """(statements, bytes, rows, objects kept) per reading, and the collectors' CPU ms per reading."""
    from proxytop.collectors.innodb import MySQLSource, server_collectors
    from proxytop.polling.connection import Endpoint

    paths = fleet.sockets(servers)
    sources = [MySQLSource(Endpoint(host="localhost", socket=path, user=fleet.server.user,
                                    password=fleet.server.password)) for path in paths]
    sessions = [source.connect() for source in sources]
    collectors = [server_collectors(source.endpoint) for source in sources]
    try:
        for session, (status, _vars, engine) in zip(sessions, collectors):  # learn what the user may read
            status.collect(session)
            engine.collect(session)
        session, (status, _vars, engine) = sessions[0], collectors[0]
        show = bytes_sent(session)
        show = bytes_sent(session) - show  # what one SHOW SESSION STATUS itself sends
        before, queries = bytes_sent(session), session.queries
        kept = (status.collect(session), engine.collect(session))
        sent = bytes_sent(session) - before - show
        statements = session.queries - queries - 1
        # a row per variable, counter and the pending writes
        rows = len(kept[0]) + len(kept[1].metrics or ()) + (1 if kept[1].pool_pending is not None else 0)
        objects = objects_in(kept)
        rounds = 3
        started = time.process_time()
        for _ in range(rounds):
            for session, (status, _vars, engine) in zip(sessions, collectors):
                status.collect(session)
                engine.collect(session)
        cpu_ms = (time.process_time() - started) * 1000.0 / (rounds * servers)
        return statements, sent, rows, objects, cpu_ms
    finally:
        for source, session in zip(sources, sessions):
            source.close(session)


def pool_and_frames(fleet: MySQLFleet, servers: int, seconds: float):
    """(pool CPU ms per server reading, assess us, frame ms) with the program's
    engine and controller."""
    from proxytop.cli import build
    from proxytop import options
    from proxytop.metrics.innodb import assess
    from proxytop.ui import view
    from tests.mariadb import free_port

    argv = ["-P", str(free_port()), "--screen", "innodb", "-d", "1"] + fleet.args(servers)
    engine, controller = build(options.parse(argv, {}))
    controller.activate()
    engine.start()
    try:
        time.sleep(2 * INTERVAL + 2)  # every server read twice: rates, and the one-statement readings
        started, wall = time.process_time(), time.monotonic()
        time.sleep(seconds)
        pool_ms = (time.process_time() - started) * 1000.0 / (time.monotonic() - wall) * INTERVAL / servers
        screen = controller.screen
        server = next(iter(screen.servers.values()))
        previous, current = engine.last_two(server.status_name)
        engine_previous, engine_current = engine.last_two(server.engine_name)
        variables = engine.latest(server.vars_name)
        flavour = engine.source(server.source).session.flavour
        rounds = 2000
        began = time.process_time()
        for _ in range(rounds):
            assess(current.data, previous.data, current.taken_at - previous.taken_at, variables.data,
                   engine_current.data, engine_previous.data, engine_current.taken_at - engine_previous.taken_at,
                   flavour)
        assess_us = (time.process_time() - began) * 1e6 / rounds
        frames, spent = 20, 0.0
        for _ in range(frames):
            began = time.thread_time()
            view.render(controller, 160, 45)
            spent += time.thread_time() - began
            time.sleep(0.5)  # as the UI draws: at most two frames a second, a tenth of the fleet new
        return pool_ms, assess_us, spent * 1000.0 / frames
    finally:
        engine.stop()


def line(label: str, value: str, target: str = "", met: Optional[bool] = None, why: str = "") -> None:
    verdict = "" if met is None else ("yes" if met else "NO")
    print(f"  {label:<44} {value:>14} {target:>12}  {verdict:<3} {why}".rstrip(), flush=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.bench_innodb", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the pool is measured")
    parser.add_argument("--servers", type=int, default=SCALE["servers"])
    args = parser.parse_args(argv)
    os.environ.setdefault("HOME", "/nonexistent")  # no ~/.my.cnf of the machine
    print(f"InnoDB at {args.servers} servers, one reading every {INTERVAL:g} s; {machine()}")
    fleet = MySQLFleet().start()
    if fleet.server is None:
        print(f"  skipped: {fleet.problem}")
        return 0
    missed = False
    try:
        statements, sent, rows, objects, collect_ms = reading_figures(fleet, args.servers)
        line("statements per server reading", str(statements))
        line("bytes the server sends per reading", f"{sent} B")
        line("rows decoded per reading", str(rows))
        line("objects kept per reading (snapshots' data)", str(objects))
        ok = collect_ms <= TARGET_COLLECT_MS
        missed |= not ok
        line("collectors alone, CPU per reading", f"{collect_ms:.3f} ms", f"<= {TARGET_COLLECT_MS:g} ms", ok,
             "" if ok else "(PyMySQL's fixed cost of a statement and its round trip, then the rows)")
        pool_ms, assess_us, frame_ms = pool_and_frames(fleet, args.servers, args.seconds)
        ok = pool_ms <= TARGET_POOL_MS
        missed |= not ok
        line("engine pool (no UI), CPU per reading", f"{pool_ms:.3f} ms", f"<= {TARGET_POOL_MS:g} ms", ok,
             "" if ok else "(the collectors, snapshots, schedule and thread hand-offs of 100 turns a second)")
        line("assessing one server's new readings (UI)", f"{assess_us:.1f} us")
        ok = frame_ms <= TARGET_FRAME_MS
        missed |= not ok
        line("a frame of the screen at 500 servers (UI)", f"{frame_ms:.2f} ms", f"<= {TARGET_FRAME_MS:g} ms", ok,
             "" if ok else "(the rows of the servers read since the last frame assessed)")
    finally:
        fleet.stop()
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
