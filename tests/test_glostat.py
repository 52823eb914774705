"""GloStat: sections, counters vs gauges, text and unknown variables, derived lines, filtering."""
from __future__ import annotations

import doctest
import re
import time

from proxytop.core import Snapshot
from proxytop.screens import glostat
from proxytop.screens.glostat import GloStatScreen, classify, global_rows, rate_text, value_text
from proxytop.screens.filters import parse
from proxytop.screens.table import TableState
from tests.proxysql_double import ProxySQLDouble


def snap(name, taken_at, **values):
    return Snapshot(name, {k.replace("__", "-"): str(v) for k, v in values.items()}, taken_at, 0.01)


BEFORE = snap("proxysql.global", 50.0, ProxySQL_Uptime=100, Questions=10_000, Client_Connections_connected=40,
              Client_Connections_non_idle=8, Server_Connections_connected=10, Queries_backends_bytes_sent=1_048_576,
              Query_Cache_count_GET=1_000, Query_Cache_count_GET_OK=400, Query_Cache_Memory_bytes=2048,
              mysql_listener_paused="false", Stmt_Client_Active_Total=3)
AFTER = snap("proxysql.global", 52.0, ProxySQL_Uptime=102, Questions=12_000, Client_Connections_connected=42,
             Client_Connections_non_idle=9, Server_Connections_connected=10, Queries_backends_bytes_sent=5_242_880,
             Query_Cache_count_GET=1_200, Query_Cache_count_GET_OK=550, Query_Cache_Memory_bytes=4096,
             mysql_listener_paused="false", Stmt_Client_Active_Total=4, MySQL_Logger__memoryCopyCount=17,
             SQLite3_memory_bytes=2_778_432)
MEMORY = snap("proxysql.memory_metrics", 45.0, jemalloc_resident=18_067_456, SQLite3_memory_bytes=1,
              query_digest_memory=9280)


def by_name(rows):
    return {r["name"]: r for r in rows}


def test_docstring_examples():
    result = doctest.testmod(glostat)
    assert result.attempted > 0 and result.failed == 0


def test_variables_are_sorted_into_sections():
    assert classify("Client_Connections_aborted").section == "Connections"
    assert classify("Com_frontend_stmt_prepare").section == "Prepared statements"
    assert classify("Stmt_Cached").section == "Prepared statements"
    assert classify("Com_commit").section == "Commands"
    assert classify("Questions").section == "Commands"
    assert classify("Query_Cache_count_GET_OK").section == "Query cache"
    assert classify("MySQL_Monitor_ping_check_ERR").section == "Monitor"
    assert classify("Queries_frontends_bytes_recv").section == "Traffic"
    assert classify("mysql_backend_buffers_bytes").section == "Memory"
    assert classify("Brand_new_in_3_1").section == "Other"


def test_counters_get_a_rate_gauges_and_text_do_not():
    rows = by_name(global_rows(BEFORE, AFTER, MEMORY))
    questions = rows["Questions"]
    assert questions["type"] == "counter" and questions["rate"] == 1000.0  # 2,000 in 2 s
    assert rows["Client_Connections_connected"]["type"] == "gauge"
    assert rows["Client_Connections_connected"]["rate"] is None
    assert rate_text(rows["Client_Connections_connected"]) == ""
    traffic = rows["Queries_backends_bytes_sent"]
    assert traffic["rate"] == 2_097_152.0 and rate_text(traffic) == "2.0MiB"  # bytes with their unit; the title says per second
    assert value_text(rows["Query_Cache_Memory_bytes"]) == "4.0KiB"
    assert value_text(rows["ProxySQL_Uptime"]) == "1m42s"


def test_non_numeric_and_unknown_variables_show_as_text():
    rows = by_name(global_rows(BEFORE, AFTER))
    paused = rows["mysql_listener_paused"]
    assert paused["type"] == "text" and paused["value"] == "false" and paused["rate"] is None
    unknown = rows["MySQL_Logger-memoryCopyCount"]  # 2.7.2+ names this tool does not know
    assert unknown["type"] == "text" and unknown["value"] == "17" and unknown["section"] == "Other"
    assert value_text(unknown) == "17" and rate_text(unknown) == ""


def test_first_reading_and_counter_reset_give_no_rate():
    first = by_name(global_rows(None, AFTER))
    assert first["Questions"]["rate"] is None and first["Questions"]["value"] == 12_000
    restarted = snap("proxysql.global", 53.0, ProxySQL_Uptime=1, Questions=5)
    rows = by_name(global_rows(AFTER, restarted))
    assert rows["Questions"]["rate"] is None and rate_text(rows["Questions"]) == "\u2014"


def test_memory_metrics_join_the_memory_section_without_duplicates():
    rows = global_rows(BEFORE, AFTER, MEMORY)
    memory = [r for r in rows if r["_id"][0] == "memory"]
    assert sorted(r["name"] for r in memory) == ["jemalloc_resident", "query_digest_memory"]
    resident = by_name(rows)["jemalloc_resident"]
    assert resident["section"] == "Memory" and value_text(resident) == "17.2MiB" and resident["rate"] is None


def test_arrange_puts_sections_in_order_under_headings_and_filters_across_all_rows():
    screen = GloStatScreen()
    rows = global_rows(BEFORE, AFTER, MEMORY)
    arranged = screen.arrange(rows, screen.initial_state())
    headings = [r["name"] for r in arranged if r.get("_kind") == "subtotal"]
    assert headings == ["\u2500\u2500 " + s for s in ("Connections", "Prepared statements", "Commands",
                                                      "Query cache", "Traffic", "Memory", "Other")]
    state = TableState("name", filter=parse("GET_OK", screen.columns))
    found = screen.arrange(rows, state)
    assert [r["name"] for r in found] == ["\u2500\u2500 Query cache", "Query_Cache_count_GET_OK"]
    state = TableState("name", filter=parse("value>1000000", screen.columns))
    assert {r["name"] for r in screen.arrange(rows, state) if r.get("_kind") != "subtotal"} == {
        "Queries_backends_bytes_sent", "SQLite3_memory_bytes", "jemalloc_resident"}


def test_derived_lines():
    assert glostat.multiplexing(AFTER.data) == \
        "42 clients (9 active) on 10 backend connections: 4.2 per backend connection"
    # interval: 200 lookups, 150 found; since start 550 of 1,200
    assert glostat.cache_hit_ratio(BEFORE.data, AFTER.data, 2.0) == \
        "75.0% over the last 2s (150 of 200 lookups), 45.8% since start"
    reset = {"Query_Cache_count_GET": "10", "Query_Cache_count_GET_OK": "5"}
    assert glostat.cache_hit_ratio(AFTER.data, reset, 1.0) == "50.0% since start"
    assert glostat.max_connections_usage(AFTER.data, {"mysql-max_connections": "2048"}) == \
        ("42 of mysql-max_connections 2048 (2.1%)", None)
    assert glostat.max_connections_usage(AFTER.data, None) == ("\u2014", None)


def test_glostat_reuses_the_header_collector():
    names = [c.name for c in GloStatScreen().collectors()]
    assert "proxysql.global" in names and "proxysql.memory_metrics" in names
    memory = [c for c in GloStatScreen().collectors() if c.name == "proxysql.memory_metrics"][0]
    assert memory.own_pace and memory.min_interval >= 10


# ----- end to end -----------------------------------------------------------------------
def start(proxytop_term, double, *args):
    term = proxytop_term("-P", str(double.port), "--screen", "glostat", "-d", "1", *args, cols=120, rows=40)
    term.wait_until(lambda s: re.search(r"Client_Connections_created\s+[\d.]+k?\s+[\d.]+k?\s+counter", s) is not None,
                    what="a counter with its rate")
    return term


def test_e2e_filter_finds_a_variable(proxytop_term, proxysql_double):
    started = time.monotonic()
    term = start(proxytop_term, proxysql_double)
    screen = term.text()
    assert "Multiplexing" in screen and "Query cache   hit ratio" in screen
    assert re.search(r"Frontend\s+\d+ of mysql-max_connections 2048", screen), screen
    print("\n" + screen)
    term.send("/")
    term.send("Query_Cache_count_GET_OK\r")
    screen = term.wait_for("filter Query_Cache_count_GET_OK")
    assert "\u2500\u2500 Query cache" in screen
    assert re.search(r"Query_Cache_count_GET_OK\s+[\d.]+k?\s+[\d.]+k?\s+counter", screen), screen
    assert re.search(r"1/\d+ rows", screen)
    print("\n" + screen)
    term.send("\\")
    term.send("/")
    term.send("listener\r")
    screen = term.wait_for("filter listener")
    assert re.search(r"mysql_listener_paused\s+false\s+text", screen), screen
    term.send("\\")
    term.send("/")
    term.send("jemalloc_resident\r")
    screen = term.wait_for(r"jemalloc_resident\s+[\d.]+MiB\s+gauge")
    assert "\u2500\u2500 Memory" in screen
    # one query of stats_mysql_global per interval (the header's), memory metrics once per 10 s
    elapsed = time.monotonic() - started
    queries = proxysql_double.queries("admin")
    assert queries.count("select * from stats_mysql_global") <= elapsed / 1.0 + 2
    assert queries.count("select * from stats_memory_metrics") <= elapsed / 10.0 + 1


def test_e2e_stats_user_is_told_what_needs_an_admin_user(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording, version="1.4").start()
    try:
        term = start(proxytop_term, double, "-u", "stats", "-p", "stats")
        screen = term.text()
        assert "connections vs mysql-max_connections needs an admin user" in screen
        assert "Multiplexing" in screen and "Traceback" not in screen
        assert not any("global_variables" in q for q in double.queries("stats"))
    finally:
        double.stop()


class FakeSession:
    def __init__(self, tables, is_admin=True):
        self.tables, self.is_admin, self.sent = frozenset(tables), is_admin, []

    def query(self, sql):
        from proxytop.core import Table
        self.sent.append(sql)
        return Table(("Variable_Name", "Variable_Value"), (("jemalloc_resident", "1024"),))


def test_memory_metrics_collector_skips_a_proxysql_without_the_table():
    from proxytop.collectors.proxysql_stats import MemoryMetrics, MySQLVariables
    old = FakeSession({"stats_mysql_global"})
    assert MemoryMetrics().collect(old) is None and old.sent == []
    new = FakeSession({"stats_mysql_global", "stats_memory_metrics"})
    assert MemoryMetrics().collect(new) == {"jemalloc_resident": "1024"}
    assert new.sent == ["select * from stats_memory_metrics"]
    stats_user = FakeSession({"stats_mysql_global"}, is_admin=False)
    assert MySQLVariables().collect(stats_user) is None and stats_user.sent == []


def test_notes_say_when_memory_metrics_are_missing():
    from proxytop.screens.base import DataView

    class Engine:
        def __init__(self):
            self.snaps = {"proxysql.global": (BEFORE, AFTER),
                          "proxysql.memory_metrics": (None, Snapshot("proxysql.memory_metrics", None, 51.0, 0.0))}

        def latest(self, name):
            return self.snaps.get(name, (None, None))[1]

        def last_two(self, name):
            return self.snaps.get(name, (None, None))

        def history(self, name):
            return tuple(s for s in self.snaps.get(name, ()) if s is not None)

        def source(self, name):
            return None

        def collector(self, name):
            return None  # none registered: no interval in force

        def now(self):
            return 53.0

    notes = GloStatScreen().notes(DataView(Engine()))
    text = "\n".join("".join(t for t, _ in line) for line in notes)
    assert "this ProxySQL has no stats_memory_metrics table" in text
    assert "Multiplexing  42 clients (9 active) on 10 backend connections" in text


def test_a_replay_that_jumps_back_gets_the_rates_of_where_it_plays():
    from proxytop.screens.base import DataView

    # a recording of a reading a second: Questions grow 100 a second up to 30 s, then 1,000 a second
    readings = [snap("proxysql.global", float(at), ProxySQL_Uptime=100 + at,
                     Questions=100 * at if at <= 30 else 3_000 + 1_000 * (at - 30)) for at in range(61)]

    class Replay:  # what a replay engine serves at its position: the readings up to it
        position = 60

        def history(self, name):
            return tuple(readings[self.position - 20:self.position + 1]) if name == "proxysql.global" else ()

        def last_two(self, name):
            return self.history(name)[-2:] if name == "proxysql.global" else (None, None)

        def latest(self, name):
            return self.last_two(name)[1]

        def source(self, name):
            return None

        def collector(self, name):
            return None

        def now(self):
            return float(self.position)

    replay = Replay()
    screen = GloStatScreen()
    assert by_name(screen.rows(DataView(replay)))["Questions"]["rate"] == 1_000
    replay.position = 25  # jumped back, before the traffic grew
    assert by_name(screen.rows(DataView(replay)))["Questions"]["rate"] == 100
