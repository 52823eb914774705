"""A frame makes again only the rows of the servers that changed since the last one:
against a real MariaDB reached through many socket paths, as a fleet of servers, the rows
made a few at a time are the rows made all at once, a server going down shows on its own
row with its countdown moving, and the header's data age moves while nothing is read."""
from __future__ import annotations

import os
import re

from proxytop.polling.engine import Engine
from proxytop.screens.innodb import InnoDBScreen
from tests.test_innodb_live import clean_home, closed_port, monitor, screen_text, server_screen, wait  # noqa: F401

SERVERS = 24


USER, PASSWORD = "tfleet", "tfleet-secret-8"


def fleet_argv(mariadb, tmp_path, count: int = SERVERS):
    """proxytop's arguments watching ``count`` servers (socket paths to the one MariaDB), read
    as a user of their own (whose connections a test may kill)."""
    mariadb.create_user(USER, PASSWORD, ["PROCESS"])
    sockets = []
    for n in range(count):
        path = str(tmp_path / f"db{n:02d}.sock")
        os.symlink(mariadb.socket, path)
        sockets.append(path)
    argv = ["-P", str(closed_port()), "--screen", "innodb", "-d", "1", "--no-discover",
            "--mysql-user", USER, "--mysql-password", PASSWORD]
    for path in sockets:
        argv += ["--mysql-socket", path]
    return argv, sockets


def all_read(controller) -> bool:
    text = screen_text(controller, rows=45)
    return f"{SERVERS} rows" in text and text.count(" OK ") >= SERVERS and "connecting" not in text


def cells(rows):
    return [{k: v for k, v in row.items()} for row in rows]


def test_engine_numbers_readings_errors_and_states():
    from proxytop.core import Collector, Snapshot

    engine = Engine()
    collector = Collector()
    collector.name, collector.source = "c", "s"
    engine.add_collector(collector)
    start = engine.generation
    engine._readings.record(collector, Snapshot("c", {}, 1.0, 0.0))
    generation = engine.generation
    assert generation > start and engine.last_changed(["c"]) == generation
    engine._readings.record_error("c", "denied", 2.0)
    engine.add_source(type("S", (), {"name": "s"})())
    engine._set_state("s", connected=True)
    assert engine.last_changed(["c"]) == generation + 1  # the error
    assert engine.last_changed([("state", "s")]) == engine.generation == generation + 2
    assert engine.last_changed(["nothing"]) == 0


def test_rows_made_as_servers_change_are_the_rows_made_at_once(mariadb, clean_home):
    argv, _sockets = fleet_argv(mariadb, clean_home)
    with monitor(*argv) as (engine, controller):
        wait(lambda: all_read(controller), 60, f"{SERVERS} servers read")
        screen = server_screen(controller)
        generation = engine.generation
        # frames while the servers are read in turn: each looks at the few read since the last
        wait(lambda: screen_text(controller, rows=20) and engine.generation > generation + 3 * SERVERS, 30,
             "every server read again")
        engine.pause()
        quiet = {"at": engine.generation}

        def settled() -> bool:  # no reading in flight any more
            now = engine.generation
            if now != quiet["at"]:
                quiet["at"] = now
                return False
            return True

        wait(settled, 10, "the readings to stop", interval=0.5)
        screen_text(controller, rows=20)  # a frame takes the last changes
        incremental = cells(controller.rows())
        fresh = InnoDBScreen(controller.config)
        fresh.fleet = screen.fleet
        at_once = fresh.arrange(fresh.rows(controller.view), controller.state)
        assert incremental == cells(at_once)
        assert all("age" in row for row in incremental)
        assert [r["state"] for r in incremental] == ["OK"] * SERVERS


def test_a_server_down_shows_on_its_row_and_its_countdown_moves(mariadb, clean_home):
    argv, sockets = fleet_argv(mariadb, clean_home)
    with monitor(*argv) as (engine, controller):
        wait(lambda: all_read(controller), 60, f"{SERVERS} servers read")
        lost = sockets[7]
        os.unlink(lost)  # its next connection fails; the others reconnect
        for (pid,) in mariadb.query("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s", (USER,)):
            try:
                mariadb.query(f"KILL CONNECTION {int(pid)}")
            except Exception:
                pass  # gone meanwhile
        countdowns = set()

        def down_alone() -> bool:
            text = screen_text(controller, rows=45).splitlines()
            table = text[[n for n, line in enumerate(text) if line.startswith("Server")][0] + 1:]
            down = [n for n, line in enumerate(table) if "down, retrying in" in line]
            if down == [7]:  # the others reconnect (their connections were killed too)
                countdowns.update(re.findall(r"retrying in (\d+)s", table[7]))
            # the rows are sorted by server: the eighth socket's row
            return (down == [7] and len(countdowns) >= 2 and f"1 of {SERVERS} server(s) down" in "\n".join(text)
                    and sum(" OK " in line for line in table) == SERVERS - 1)

        wait(down_alone, 60, "the one server down, its countdown moving")
        os.symlink(mariadb.socket, lost)
        wait(lambda: all_read(controller) and "down" not in screen_text(controller, rows=45), 60,
             "the server back")


def test_frozen_data_says_when_it_was_read_and_a_new_reading_shows_its_age(mariadb, clean_home):
    argv, _sockets = fleet_argv(mariadb, clean_home, count=SERVERS)
    with monitor(*argv) as (engine, controller):
        wait(lambda: all_read(controller), 60, f"{SERVERS} servers read")

        def age() -> float:
            found = re.search(r"data ([\d.]+)(µs|ms|s) old", screen_text(controller, rows=45))
            return float(found.group(1)) * {"µs": 1e-6, "ms": 1e-3, "s": 1.0}[found.group(2)] if found else -1.0

        engine.pause()
        wait(lambda: re.search(r"data read at \d\d:\d\d:\d\d", screen_text(controller, rows=45)), 20,
             "when the frozen data was read")
        engine.resume()
        wait(lambda: 0 <= age() < 1.5, 20, "a new reading's age")
        newest = controller.newest_of_screen()
        assert newest is not None and newest.taken_at == max(
            engine.latest(n).taken_at for n in controller.screen.active_collectors() if engine.latest(n))


def test_a_screen_shown_again_with_nothing_new_keeps_its_rows(proxysql_double, clean_home):
    """Rows parked when a screen is left are shown again as they were, not made again, when
    none of its readings changed meanwhile (5,000 rules take a while)."""
    with monitor("-P", str(proxysql_double.port), "--no-discover", "--screen", "connpool", "-d", "1") as (
            engine, controller):
        wait(lambda: "Q/s" in screen_text(controller) and controller.total_rows > 0, 30, "the pool's rows")
        engine.pause()
        quiet = {"at": engine.generation}

        def settled() -> bool:
            now = engine.generation
            quiet["at"], same = now, now == quiet["at"]
            return same

        wait(settled, 10, "the readings to stop", interval=0.5)
        screen_text(controller)
        shown = controller.rows()
        controller.do_goto_screen(2)  # GloStat
        screen_text(controller)
        controller.do_goto_screen(0)
        screen_text(controller)
        screen_text(controller)
        assert controller.rows() is shown
