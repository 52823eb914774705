"""The header's reading of the global status: only its rows of stats_mysql_global while no
screen on view reads the whole table, the whole table's readings while one does, and the
header's figures from the two newest readings of either (live, across screen switches, and
in replays of recordings made before the narrow reading existed)."""
from __future__ import annotations

import re

import pytest

from proxytop.cli import build
from proxytop.core import Snapshot
from proxytop.collectors.proxysql import HEADER_VARIABLES, GlobalStatus, HeaderStatus
from proxytop.collectors.sides import for_side
from proxytop import options
from proxytop.metrics.sides import PGSQL
from proxytop.recordings.recording import RecordingWriter
from proxytop.recordings.replay import ReplayEngine, replay_config
from proxytop.screens.connpool import ConnPoolScreen
from proxytop.screens.errors import REFUSED, ErrorsScreen
from proxytop.screens.glostat import GloStatScreen
from proxytop.screens.sided import header_collector, header_readings
from proxytop.ui import view
from tests.test_recording import FakeClock

WHOLE_QUERY = "select * from stats_mysql_global"


def reading(name: str, questions: str, at: float) -> Snapshot:
    return Snapshot(name, {"Questions": questions, "Client_Connections_connected": "7"}, at, 0.0)


NARROW, WHOLE = HeaderStatus.name, GlobalStatus.name
N1, N2 = reading(NARROW, "100", 10.0), reading(NARROW, "300", 11.0)
W1, W2 = reading(WHOLE, "50", 5.0), reading(WHOLE, "90", 6.0)
W3 = reading(WHOLE, "500", 12.0)


@pytest.mark.parametrize("readings, expected", [
    ({}, (None, None)),
    ({WHOLE: (W1, W2)}, (W1, W2)),  # a recording made before the narrow reading: the whole table's
    ({NARROW: (N1, N2)}, (N1, N2)),
    ({NARROW: (None, N1)}, (None, N1)),  # the first reading: no rate yet
    ({NARROW: (N1, N2), WHOLE: (W1, W2)}, (N1, N2)),  # back from GloStat: its readings are older
    ({NARROW: (N1, N2), WHOLE: (None, W3)}, (N2, W3)),  # just switched to GloStat: 200 Q in 1 s spans the switch
])
def test_the_two_newest_readings_of_either(readings, expected):
    assert header_readings(lambda name: readings.get(name, (None, None)), ConnPoolScreen()) == expected


def test_the_postgresql_side_reads_its_own_table():
    screen = ConnPoolScreen()
    screen.set_side(PGSQL)
    narrow = reading("proxysql.pgsql.header_status", "1", 3.0)
    readings = {NARROW: (N1, N2), WHOLE: (W1, W2), "proxysql.pgsql.header_status": (None, narrow)}
    found = header_readings(lambda name: readings.get(name, (None, None)), screen)  # the MySQL side's left out
    assert found == (None, narrow)
    assert header_collector(screen) == "proxysql.pgsql.header_status"
    assert for_side(HeaderStatus(), PGSQL).sql().startswith("select * from stats_pgsql_global where Variable_Name in (")


def test_whole_table_only_where_a_screen_reads_it():
    assert header_collector(GloStatScreen()) == WHOLE
    assert header_collector(ConnPoolScreen()) == NARROW
    assert header_collector(ErrorsScreen()) == NARROW
    # batch output of several screens: the whole table is polled for one, the header takes it
    assert header_collector(ConnPoolScreen(), ["proxysql.connection_pool", WHOLE]) == WHOLE
    glostat = GloStatScreen()
    glostat.set_side(PGSQL)
    assert header_collector(glostat) == "proxysql.pgsql.global"


def test_the_narrow_reading_has_what_the_header_and_errors_show():
    for name in ("ProxySQL_Uptime", "Questions", "Client_Connections_connected", "Active_Transactions") + REFUSED:
        assert name in HEADER_VARIABLES


# ----- replay: recordings from before and after -------------------------------------------------

def replayed_header(path: str) -> str:
    engine = ReplayEngine.open(path)
    engine.seek(engine.index.end)
    config = replay_config(engine.index, options.parse([], {}), options.build_parser().parse_args([]))
    engine, controller = build(config, engine)
    return view.screen_text([line for line in view.header_lines(controller, 200)])


@pytest.mark.parametrize("name", [GlobalStatus.name, HeaderStatus.name])
def test_a_recording_of_either_replays_with_its_header(tmp_path, name):
    path = str(tmp_path / "header.rec.gz")
    clock = FakeClock(1000.0)
    writer = RecordingWriter(path, clock=clock, wall=lambda: 1_700_000_000.0 + clock.now)
    for at, questions in ((1001.0, "1000"), (1003.0, "1400")):
        clock.now = at
        writer.snapshot(Snapshot(name, {"ProxySQL_Uptime": "86400", "Questions": questions,
                                        "Client_Connections_connected": "42", "Active_Transactions": "5"},
                                 taken_at=at, duration=0.001, wall_time=1_700_000_000.0 + at))
    writer.close()
    header = replayed_header(path)
    assert re.search(r"up \S+\s+Q/s 200\s+conn 42\s+trx 5", header), header


# ----- live: what is sent to ProxySQL -----------------------------------------------------------

def narrow_readings(double) -> int:
    """Queries that read the header's rows: its own, or the pool's that carries them (collectors.folded)."""
    narrow = HeaderStatus().sql()
    where = narrow[len(WHOLE_QUERY):]
    return sum(1 for q in double.queries("admin") if q == narrow or (q.endswith(where) and "union all" in q))


def test_connpool_reads_only_the_header_rows_and_glostat_the_whole_table(proxytop_term, proxysql_double):
    term = proxytop_term("-P", str(proxysql_double.port), "--screen", "connpool", "-d", "1", cols=140, rows=36)
    qps = re.compile(r"Q/s [\d,.]+[kM]?\s+conn \d+\s+trx \d+")
    term.wait_until(lambda s: qps.search(s) is not None, what="the header's Q/s from two narrow readings")
    sent = proxysql_double.queries("admin")
    assert HeaderStatus().sql() in sent and WHOLE_QUERY not in sent

    term.send("3")  # GloStat: every variable, the header takes its readings of the whole table
    term.wait_until(lambda s: re.search(r"Client_Connections_created\s+[\d.]+k?\s+[\d.]+k?\s+counter", s) is not None
                    and qps.search(s) is not None, what="GloStat's rates and the header's Q/s")
    term.wait_until(lambda s: proxysql_double.queries("admin").count(WHOLE_QUERY) >= 2, what="two whole readings")
    narrow_before = narrow_readings(proxysql_double)

    term.send("1")  # back on ConnPool: the narrow reading again, the header's figures throughout
    term.wait_until(lambda s: narrow_readings(proxysql_double) >= narrow_before + 2
                    and qps.search(s) is not None, what="narrow readings again")
    whole = proxysql_double.queries("admin").count(WHOLE_QUERY)
    term.wait_until(lambda s: narrow_readings(proxysql_double) >= narrow_before + 4,
                    what="two more narrow readings")
    assert proxysql_double.queries("admin").count(WHOLE_QUERY) <= whole + 1  # one in flight at the switch at most
    assert "Traceback" not in term.text()
