"""What ComCount asks of ProxySQL: stats_mysql_commands_counters is rebuilt whole for every
read, so while no command runs it is read every other step, and the notes line says so."""
from __future__ import annotations

import re
import time

from proxytop.collectors.proxysql_stats import CommandCounters
from proxytop.core import Table

COLUMNS = ("Command", "Total_Time_us", "Total_cnt")


class Session:
    """Answers ``select * from stats_mysql_commands_counters`` with the next total of SELECT."""

    def __init__(self, totals):
        self.totals = list(totals)
        self.queries = []
        self.is_admin = True

    def query(self, sql):
        self.queries.append(sql)
        total = self.totals.pop(0)
        return Table(COLUMNS, (("SELECT", str(total * 100), str(total)), ("COMMIT", "0", "0")))


def read_every_second(collector, session, readings):
    paces = []
    for second in range(readings):
        collector.clock = lambda second=second: float(second)
        collector.collect(session)
        paces.append(collector.min_interval)
    return paces


def test_commands_running_keep_the_screen_pace():
    collector = CommandCounters()
    paces = read_every_second(collector, Session(range(10, 20)), 10)
    assert paces == [collector.floor] * 10 and not collector.idle


def test_counters_standing_still_halve_the_reads_and_a_change_brings_the_pace_back():
    collector = CommandCounters()
    # commands run for 3 s, then none: the total stands still from the reading at 2 s
    paces = read_every_second(collector, Session([1, 2, 3, 3, 3, 3, 3, 4]), 8)
    # still at 3 s and 4 s (ProxySQL publishes its threads' counts about once a second);
    # unchanged for more than 2 s from 5 s on: no traffic, two steps of 1 s between reads
    assert paces[:5] == [0.5] * 5
    assert paces[5:7] == [2.0, 2.0]
    assert paces[7] == 0.5 and not collector.idle  # the first reading that shows a change


def test_a_step_across_a_hidden_spell_is_not_the_pace():
    collector = CommandCounters()
    session = Session([1, 2, 3, 3, 3, 3, 3, 3])
    for stamp in (0.0, 1.0, 2.0, 60.0, 61.0, 62.0, 63.0, 64.0):  # the screen was hidden from 2 s to 60 s
        collector.clock = lambda stamp=stamp: stamp
        collector.collect(session)
    assert collector.idle and collector.min_interval == 2.0


def still_counters(columns, rows):
    """The recording's first frame every time: no command runs."""
    return columns, FROZEN


FROZEN = None


def test_e2e_an_idle_proxysql_is_asked_half_as_often_and_the_notes_say_what(proxytop_term, proxysql_double):
    global FROZEN
    FROZEN = [list(row) for row in proxysql_double.first_frame("stats_mysql_commands_counters")[1]]
    proxysql_double.transforms["stats_mysql_commands_counters"] = still_counters
    term = proxytop_term("-P", str(proxysql_double.port), "--screen", "comcount", "-d", "1", cols=200, rows=40)
    term.wait_for("while no command runs", timeout=20)
    start = len(proxysql_double.queries())
    time.sleep(8.0)
    log = proxysql_double.queries()[start:]
    counters = sum(1 for sql in log if "stats_mysql_commands_counters" in sql)
    header = sum(1 for sql in log if "stats_mysql_global" in sql)
    assert header >= 7 and counters <= header / 2 + 1, (counters, header)
    screen = term.text()
    assert re.search(r"asks ProxySQL: stats_mysql_commands_counters \(54 rows\) every 2s while no command runs, "
                     r"stats_mysql_global \(header\) every 1s", screen), screen
