"""ProcList: sessions longest-running first, idle toggle, summary, detail, and the confirmed kill."""
from __future__ import annotations

import doctest
import json
import re
from collections import Counter

import pytest

from proxytop.core import Table
from proxytop.screens import proclist
from proxytop.screens.proclist import (ProcListScreen, kill_question, session_detail, session_rows, summary,
                                       summary_text)
from proxytop.screens.table import sort_rows
from tests.proxysql_double import COLUMNS_1_4_DROPPED, ProxySQLDouble
from tests.terminal import ESC, HOME

COLUMNS = ("ThreadID", "SessionID", "user", "db", "cli_host", "cli_port", "hostgroup", "l_srv_host",
           "l_srv_port", "srv_host", "srv_port", "command", "time_ms", "info", "status_flags", "extended_info")


def session(sid, user="app", command="Query", time_ms=0, info="SELECT 1", hostgroup=10, extended=None):
    return ("0", str(sid), user, "shop", "10.0.0.5", str(40000 + sid), str(hostgroup), "10.0.0.1", "51000",
            "10.0.0.9", "3306", command, str(time_ms), info, "0", extended)


TABLE = Table(COLUMNS, (
    session(11, command="Sleep", info=None),
    session(12, time_ms=250),
    session(13, user="reporting", time_ms=9000, info="SELECT SLEEP(9)", hostgroup=20),
    session(14, command="Sleep", info=None, hostgroup=20),
    session(15, time_ms=1200, info="UPDATE t\n   SET a = 1\n WHERE id = 7"),
))


def test_docstring_examples():
    result = doctest.testmod(proclist)
    assert result.attempted > 0 and result.failed == 0


def test_active_sessions_only_by_default_longest_first():
    screen = ProcListScreen()
    rows = screen.arrange(session_rows(TABLE), screen.initial_state())
    assert [r["id"] for r in rows] == [13, 15, 12]
    assert [r["time_ms"] for r in rows] == [9000, 1200, 250]
    assert rows[0]["client"] == "10.0.0.5:40013" and rows[0]["backend"] == "10.0.0.9:3306"
    assert rows[0]["hostgroup"] == 20 and rows[0]["user"] == "reporting"


def test_idle_sessions_when_asked():
    rows = session_rows(TABLE, show_idle=True)
    assert sorted(r["id"] for r in rows) == [11, 12, 13, 14, 15]


def test_fast_sort_gives_the_generic_order():
    rows = session_rows(TABLE, show_idle=True)
    for key in ("time_ms", "hostgroup", "id", "user", "info"):
        for descending in (False, True):
            expected = sort_rows(rows, key, descending, ("id",))
            assert proclist.sort_sessions(rows, key, descending) == expected, (key, descending)


@pytest.mark.parametrize("text", [
    "sleep", "reporting", "SLEEP(9)", "127.0.0.1:3312", "20", "9s", "0s", "\u2014", "sbtest3", "set a",
    '"set a = 1"', "user:report", "time>1s select", "time>1000ms select", "time>1 select", "hostgroup:10 commit", "sbtest 3311", "nothing-like-this",
])
def test_fast_filter_keeps_the_rows_the_generic_filter_keeps(recording, text):
    from proxytop.screens.filters import parse
    from proxytop.screens.table import filter_rows
    rows = session_rows(TABLE, show_idle=True) + session_rows(Table(COLUMNS, (
        ("0", "30", None, None, None, None, None, None, None, None, None, "Connect", None, None, None, None),)))
    for frame in (10, 80, 150):
        columns, raw = recording.series["stats_mysql_processlist"][frame]
        rows += session_rows(Table(tuple(columns), tuple(tuple(r) for r in raw)), show_idle=True)
    flt = parse(text, ProcListScreen.columns)
    expected = filter_rows(rows, ProcListScreen.columns, flt)
    assert proclist.filter_sessions(rows, ProcListScreen.columns, flt) == expected


def test_summary_counts_every_session_by_command_and_hostgroup():
    by_command, by_hostgroup = summary(TABLE)
    assert by_command == Counter({"Query": 3, "Sleep": 2})
    assert by_hostgroup == Counter({10: 3, 20: 2})
    assert summary_text(by_command, by_hostgroup) == "5 sessions   Query 3  Sleep 2   by hostgroup: 10: 3  20: 2"
    assert summary_text(*summary(Table(COLUMNS, ()))) == "no client sessions"


def test_detail_has_the_whole_query_and_pretty_extended_info():
    extended = json.dumps({"backends": [{"conn": {"autocommit": True, "status": {"found_rows": False}}}]})
    table = Table(COLUMNS, (session(21, time_ms=3500, info="SELECT " + ", ".join(f"col{i}" for i in range(60)),
                                    extended=extended),))
    row = session_rows(table)[0]
    detail = session_detail(row)
    text = "\n".join("".join(t for t, _ in line) for line in detail.lines)
    assert detail.title == "Session 21"
    assert "client       10.0.0.5:40021" in text and "time         3.5s" in text
    assert "backend      10.0.0.9:3306  (from 10.0.0.1:51000)" in text
    assert "col0" in text and "col59" in text  # the whole query, wrapped over several lines
    assert max(len(line) for line in text.splitlines()) <= 80
    assert '"autocommit": true' in text and text.count("\n      ") >= 2  # indented JSON


def test_detail_with_the_1_4_column_set_has_no_missing_fields():
    keep = [c for c in COLUMNS if c not in COLUMNS_1_4_DROPPED["stats_mysql_processlist"]]
    table = Table(tuple(keep), tuple(tuple(v for c, v in zip(COLUMNS, r) if c in keep) for r in TABLE.rows))
    rows = session_rows(table)
    assert [r["id"] for r in ProcListScreen().arrange(rows, ProcListScreen().initial_state())] == [13, 15, 12]
    text = "\n".join("".join(t for t, _ in line) for line in session_detail(rows[0]).lines)
    assert "status_flags" not in text and "extended_info" not in text and "Query" in text


def test_missing_columns_read_as_empty():
    table = Table(("SessionID", "command", "time_ms"), (("7", "Query", "10"),))
    row = session_rows(table)[0]
    assert row["id"] == 7 and row["user"] is None and row["client"] is None and row["time_ms"] == 10


def test_kill_question_shows_the_session_and_its_query():
    row = [r for r in session_rows(TABLE) if r["id"] == 13][0]
    text = "\n".join(kill_question(row))
    assert "Kill ProxySQL session 13?" in text
    assert "reporting" in text and "SELECT SLEEP(9)" in text and "for 9s" in text
    assert "KILL CONNECTION 13" in text and "no KILL QUERY" in text


def test_processlist_minimum_interval_is_2s_unless_chosen():
    from types import SimpleNamespace
    (default,) = ProcListScreen().collectors()
    assert default.min_interval == 2.0 and not default.own_pace
    config = SimpleNamespace(args=SimpleNamespace(proclist_min_interval=5.0))
    (chosen,) = ProcListScreen(config).collectors()
    assert chosen.min_interval == 5.0


# ----- end to end -----------------------------------------------------------------------
def session_lines(screen):
    """(session id, user, time text, whole line) of the table rows on screen."""
    found = []
    for line in screen.splitlines():
        match = re.match(r"^\s*(\d+)\s+(\S+)\s+.*?\s(\d+ms|[\d.]+s|\d+m\d+s)(?:\s|$)", line)
        if match:
            found.append((int(match.group(1)), match.group(2), match.group(3), line))
    return found


def start(proxytop_term, double, *args, cols=140):
    term = proxytop_term("-P", str(double.port), "--screen", "proclist", *args, cols=cols, rows=40)
    term.wait_until(lambda s: "SLEEP(" in s, timeout=15, what="the reporting sessions")
    return term


def test_e2e_longest_running_first_and_sort_to_another_column_and_back(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    screen = term.text()
    assert "every 2s (min 2s)" in screen  # its own minimum interval, shown in the header
    assert re.search(r"Sessions\s+\d+ sessions\s+(Query|Sleep) \d+", screen) and "by hostgroup: 10:" in screen, screen
    rows = session_lines(screen)
    assert rows and rows[0][1] == "reporting" and "SLEEP(" in rows[0][3], screen
    assert "sort Time \u2193" in screen and "Sleep " not in "".join(r[3] for r in rows)
    print("\n" + screen)
    term.send("s")  # Time -> Query (text, A to Z)
    screen = term.wait_for("sort Query \u2191")
    header = [line for line in screen.splitlines() if "Session" in line and "Query" in line][0]
    queries = [r[3][header.index("Query"):] for r in session_lines(screen)]
    assert len(queries) >= 2 and all(q.startswith("SELECT") or q.strip() for q in queries), screen
    assert queries == sorted(queries, key=str.lower), screen
    term.send("<")  # and back: longest first again
    screen = term.wait_for("sort Time \u2193")
    assert session_lines(screen)[0][1] == "reporting", screen
    term.send("i")
    term.wait_until(lambda s: any(" Sleep " in r[3] for r in session_lines(s)), what="idle sessions")


def test_e2e_chosen_minimum_interval_is_shown(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double, "--proclist-min-interval", "5")
    assert "every 5s (min 5s)" in term.text()
    term.send("+")
    term.wait_for("interval 5s: the minimum for this screen")


def test_e2e_filter_on_columns(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.send("/")
    term.send("user:reporting time>1s\r")
    screen = term.wait_for("filter user:reporting Time > 1 s")
    rows = session_lines(screen)
    assert rows and all(r[1] == "reporting" for r in rows), screen
    term.send("\\")
    term.send("/")
    term.send("hostgroup:10\r")
    screen = term.wait_for("filter hostgroup:10")
    assert all(r[1] == "sbtest" for r in session_lines(screen)), screen


def test_e2e_detail_shows_the_query_and_escape_returns(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.send(HOME)
    term.send("\r")
    screen = term.wait_for(r"Session \d+\s+Esc back")
    assert "SELECT SLEEP(" in screen and "client" in screen and "backend" in screen
    print("\n" + screen)
    term.send(ESC, pause=0.4)
    term.wait_for("sort Time")


def _confirm(term):
    term.send(HOME)
    term.send("k")
    screen = term.wait_for("y = yes, any other key = no")
    sid = int(re.search(r"Kill ProxySQL session (\d+)\?", screen).group(1))
    assert "query: SELECT SLEEP(" in screen  # the longest-running session: a reporting sleep
    return sid, screen


def test_e2e_kill_after_yes_sends_kill_connection(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    sid, screen = _confirm(term)
    print("\n" + screen)
    assert proxysql_double.kills == []  # nothing before the answer
    term.send("y")
    term.wait_for(f"session {sid} killed")
    assert proxysql_double.kills == [sid]
    assert f"KILL CONNECTION {sid}" in proxysql_double.queries("admin")


def test_e2e_kill_answered_no_sends_nothing(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    _confirm(term)
    term.send("n")
    term.wait_for("cancelled: nothing was sent")
    assert proxysql_double.kills == []
    assert not any("kill" in q.lower() for q in proxysql_double.queries())


def test_e2e_stats_user_cannot_kill_and_is_told(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double, "-u", "stats", "-p", "stats")
    assert "Killing a session (k) needs an admin user." in term.text()
    term.send("k")
    term.wait_for("killing a session needs an admin user")
    assert "y = yes" not in term.text()
    assert proxysql_double.kills == [] and not any("kill" in q.lower() for q in proxysql_double.queries())


def test_e2e_1_4_column_set(proxytop_term, recording):
    double = ProxySQLDouble(recording=recording, version="1.4").start()
    try:
        term = start(proxytop_term, double)
        term.send(HOME)
        term.send("\r")
        screen = term.wait_for(r"Session \d+\s+Esc back")
        assert "status_flags" not in screen and "extended_info" not in screen
        assert "SELECT SLEEP(" in screen
    finally:
        double.stop()
