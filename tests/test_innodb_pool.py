"""The InnoDB fleet's servers share a bounded pool of engine threads (proxytop.polling.engine's
_WorkerPool) instead of a thread each: against a real MariaDB reached through many socket
paths, and servers that accept connections and never answer.
"""
from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter

import pytest

from proxytop.collectors.innodb import MySQLSource
from proxytop.polling import engine as engine_module
from tests.sockets import silent_server
from tests.test_innodb_live import clean_home, closed_port, monitor, screen_text, wait  # noqa: F401 (a fixture)


def socket_paths(directory, target: str, count: int):
    """``count`` distinct socket paths to one server: as many watched servers."""
    paths = []
    for n in range(count):
        path = os.path.join(str(directory), f"s{n:02d}")
        os.symlink(target, path)
        paths.append(path)
    return paths


class ConnectWatch:
    """Counts the connection attempts in progress per source, and the most ever seen at once."""

    def __init__(self, monkeypatch):
        self.lock = threading.Lock()
        self.now: Counter = Counter()
        self.most: Counter = Counter()
        original = MySQLSource.connect
        watch = self

        def connect(source):
            with watch.lock:
                watch.now[source.name] += 1
                watch.most[source.name] = max(watch.most[source.name], watch.now[source.name])
            try:
                return original(source)
            finally:
                with watch.lock:
                    watch.now[source.name] -= 1

        monkeypatch.setattr(MySQLSource, "connect", connect)


def proxytop_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith(("pool-", "poll-"))]


def test_a_fleet_larger_than_the_pool_is_read_while_two_servers_hang(mariadb, clean_home, tmp_path, monkeypatch):
    monkeypatch.setattr(engine_module, "POOL_THREADS", 3)
    watch = ConnectWatch(monkeypatch)
    good = socket_paths(tmp_path, mariadb.socket, 12)
    with silent_server() as hung_a, silent_server() as hung_b:
        hung = [f"127.0.0.1:{hung_a}", f"127.0.0.1:{hung_b}"]
        argv = ["-P", str(closed_port()), "--screen", "innodb", "--no-discover", "--connect-timeout", "2",
                "--mysql-user", mariadb.user, "--mysql-password", mariadb.password]
        for path in good:
            argv += ["--mysql-socket", path]
        for address in hung:
            argv += ["--mysql", address]
        with monitor(*argv) as (engine, controller):
            names = [f"innodb.status.{path}" for path in good]
            wait(lambda: all(engine.latest(n) is not None for n in names), 15, "a first reading of every good server")
            firsts = {n: engine.latest(n).taken_at for n in names}
            # Two of the three threads may sit in a hung server's connect or read at any time:
            # the third keeps reading the twelve others every second.
            wait(lambda: all(engine.latest(n).taken_at - firsts[n] >= 4.0 for n in names), 20,
                 "four more seconds of readings of every good server")
            for n in names:
                taken = [s.taken_at for s in engine.history(n)]
                assert all(b - a < 2.5 for a, b in zip(taken, taken[1:])), (n, taken)
            text = wait(lambda: (lambda t: t if all(re.search(re.escape(a) + r"\s.*down, retrying (in \d+s|now)", t)
                                                    for a in hung) else None)(screen_text(controller, 200)),
                        15, "both hung servers marked down")
            for address in hung:
                assert "timeout" in next(line for line in text.splitlines() if address in line)
            assert "2 of 14 server(s) down" in text
            threads = proxytop_threads()
            # This engine's pool (threads left by earlier tests may still be ending): its three
            # threads, more only when turns waited past a second (a busy machine) and never past
            # its bound.
            pool = engine._pool._threads
            assert len(pool) <= 3 * engine_module.POOL_GROWTH, [t.name for t in pool]
            assert not [t for t in threads if t.startswith("poll-mysql")], threads  # no thread per server
            # A hung server is only ever tried on one thread at a time.
            wait(lambda: all(watch.most[f"mysql:{a}"] >= 1 for a in hung), 10, "the hung servers tried")
            assert max(watch.most.values()) == 1, watch.most


def test_hidden_servers_hold_no_thread_and_stop_closes_their_connections(mariadb, clean_home, tmp_path):
    paths = socket_paths(tmp_path, mariadb.socket, 6)

    def fleet_connections() -> int:
        rows = mariadb.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Sleep' "
                             f"AND USER = '{mariadb.user}'")
        return int(rows[0][0])

    baseline = fleet_connections()
    argv = ["-P", str(closed_port()), "--screen", "innodb", "--no-discover",
            "--mysql-user", mariadb.user, "--mysql-password", mariadb.password]
    for path in paths:
        argv += ["--mysql-socket", path]
    with monitor(*argv) as (engine, controller):
        names = [f"innodb.status.{path}" for path in paths]
        wait(lambda: all(engine.latest(n) is not None for n in names), 15, "every server read")
        assert wait(lambda: fleet_connections() >= baseline + 6, 10, "one connection per server")
        controller.handle_key("1")  # ConnPool: the fleet's collectors are no longer active
        wait(lambda: not any(n in engine.active for n in names), 5, "the fleet deactivated")
        counts = {n: len(engine.history(n)) for n in names}
        last = {n: engine.latest(n).taken_at for n in names}
        time.sleep(2.5)  # no reading may come while the screen is hidden (a quiet period to observe)
        assert {n: engine.latest(n).taken_at for n in names} == last, counts
    wait(lambda: fleet_connections() <= baseline, 10, "the fleet's connections closed on stop")


def test_more_hung_servers_than_threads_grow_the_pool_within_bounds(mariadb, clean_home, tmp_path, monkeypatch):
    """Four servers hang and the pool has two threads: once turns wait past OVERDUE, the pool
    adds threads (at most POOL_GROWTH times two) and the good servers are read again."""
    monkeypatch.setattr(engine_module, "POOL_THREADS", 2)
    good = socket_paths(tmp_path, mariadb.socket, 4)
    with silent_server() as a, silent_server() as b, silent_server() as c, silent_server() as d:
        hung = [f"127.0.0.1:{port}" for port in (a, b, c, d)]
        argv = ["-P", str(closed_port()), "--screen", "innodb", "--no-discover", "--connect-timeout", "3",
                "--mysql-user", mariadb.user, "--mysql-password", mariadb.password]
        for address in hung:
            argv += ["--mysql", address]
        for path in good:
            argv += ["--mysql-socket", path]
        with monitor(*argv) as (engine, controller):
            names = [f"innodb.status.{path}" for path in good]
            wait(lambda: all(engine.latest(n) is not None for n in names), 20, "a first reading of every good server")
            firsts = {n: engine.latest(n).taken_at for n in names}
            wait(lambda: all(engine.latest(n).taken_at - firsts[n] >= 6.0 for n in names), 30,
                 "six more seconds of readings of every good server while four servers hang")
            pool = [t for t in proxytop_threads() if t.startswith("pool-")]
            assert 2 < len(pool) <= 2 * engine_module.POOL_GROWTH, pool
            text = wait(lambda: (lambda t: t if all(re.search(re.escape(h) + r"\s.*down, retrying (in \d+s|now)", t)
                                                    for h in hung) else None)(screen_text(controller, 200)),
                        20, "the hung servers marked down")
            assert "4 of 8 server(s) down" in text
