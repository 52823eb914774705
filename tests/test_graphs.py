"""Graphs: the figure history's downsampling, the braille chart, and both in the real program
(g on a ConnPool backend, the Trends tab) in a pseudo-terminal against the ProxySQL double."""
from __future__ import annotations

import math
import re


from proxytop.metrics.history import KEPT_SECONDS, MINUTE_SECONDS, RAW_SECONDS, FigureHistory, Series
from proxytop.screens import chart
from tests.terminal import ESC

DAY = 86400.0
T0 = 1_700_000_000.0  # a whole minute and ten minutes (1700000000 = 28333333 min 20 s: shifted below)
T0 -= T0 % 600


def test_the_last_hour_is_kept_as_read_and_older_minutes_are_their_exact_means():
    series = Series()
    for i in range(2 * 3600):  # two hours, a reading a second, value = the second within its minute
        series.add(T0 + i, float(i % 60))
    raw = list(zip(series.times, series.values))
    assert RAW_SECONDS <= len(raw) <= RAW_SECONDS + 60 and raw[-1] == (T0 + 7199, 59.0)
    minutes = list(series.tiers[0].points())
    assert minutes and all(value == 29.5 for _t, value in minutes)  # mean of 0..59
    assert minutes[0][0] == T0 + 30  # drawn at the middle of its minute
    # no point is both averaged and kept raw: times strictly increase
    times = [t for t, _v in series.points()]
    assert times == sorted(set(times))


def test_a_gap_is_left_out_of_the_mean_and_a_replaced_value_counts_once():
    series = Series()
    for i in range(3 * 3600):
        value = None if i % 60 == 0 else 10.0  # the first reading of each minute has no rate
        series.add(T0 + i, value)
        series.add(T0 + i, value)  # the rows made again for a new sort: the same time, once
    minutes = list(series.tiers[0].points())
    assert minutes and all(v == 10.0 for _t, v in minutes)
    raw_gaps = [v for v in series.values if math.isnan(v)]
    assert raw_gaps  # kept as gaps in the raw hour (the chart breaks its line there)


def test_after_a_day_minutes_become_ten_minute_means_and_a_week_is_the_most_kept():
    series = Series()
    step = 30  # a reading every 30 s for 9 days: 1, 2, ... so each bucket's mean is known
    for i in range(int(9 * DAY / step)):
        series.add(T0 + i * step, float(i))
    ten = list(series.tiers[1].points())
    now = T0 + (int(9 * DAY / step) - 1) * step
    assert ten and ten[0][0] - 300 >= now - RAW_SECONDS - KEPT_SECONDS - 600
    for t, value in ten:
        first = (t - 300 - T0) / step  # the readings of [start, start + 600): 20 of them
        assert value == first + 9.5, (t, value)
    minute_times = [t for t, _ in series.tiers[1].points()] + [t for t, _ in series.tiers[0].points()]
    assert minute_times == sorted(minute_times)
    assert series.tiers[0].starts[0] >= now - RAW_SECONDS - MINUTE_SECONDS - 600
    assert series.size() < 3600 / step + 24 * 60 + 7 * 144 + 10


def test_the_history_is_bounded_by_figures_dropping_the_stalest():
    history = FigureHistory(max_series=3)
    for n, key in enumerate("abca"):  # a added to again: b is now the stalest
        history.add(key, T0 + n, 1.0)
    history.add("d", T0 + 4, 1.0)
    assert "b" not in history and all(k in history for k in "acd")


def plot_text(lines):
    return ["".join(text for text, _ in line) for line in lines]


def test_a_known_series_is_drawn_where_it_belongs():
    # a ramp from 0 to 100 over five minutes, then flat: the value axis 0-100, the last
    # column at the top row, the first at the bottom row
    points = [(T0 + i, min(100.0, i / 2)) for i in range(300)]
    lines = chart.draw([chart.Plot("ramp", points, "series0")], 60, 10, T0, T0 + 300)
    text = plot_text(lines)
    assert text[0].startswith("100 \u2502") and text[8].startswith("  0 \u2502")
    assert text[4].startswith(" 50 \u2502")
    top, bottom = text[0][5:], text[8][5:]
    assert top.rstrip()[-1] != " " and top[:10].strip() == ""  # flat at 100 on the right only
    assert bottom[:2].strip() and bottom[-10:].strip() == ""  # starts at 0 on the left only
    axis = text[9]
    assert axis.startswith("    \u2514") and chart.clock_label(T0, 300) in axis and chart.clock_label(T0 + 300, 300) in axis
    # every dot is a braille character of its series' colour
    styles = {style for text_, style in lines[0][2:] if text_.strip()}
    assert styles == {"series0"}


def test_a_silence_longer_than_three_readings_is_a_gap_not_a_line():
    points = [(T0 + i, 50.0) for i in range(0, 60)] + [(T0 + i, 50.0) for i in range(240, 300)]
    text = plot_text(chart.draw([chart.Plot("x", points)], 64, 6, T0, T0 + 300))
    row = next(line for line in text if any(0x2800 < ord(c) <= 0x28FF for c in line))
    plot = row.split("\u2502", 1)[1]
    middle = plot[len(plot) // 2 - 5:len(plot) // 2 + 5]
    assert middle.strip() == "", row


def test_an_infinite_value_is_kept_as_a_gap_and_the_chart_draws_the_rest():
    # ComCount's percentiles are infinite for a command in its last (>10 s) bucket
    history = FigureHistory()
    for i, value in enumerate((4.0, math.inf, 6.0)):
        history.add("p95", T0 + i, value)
    points = history.points("p95")
    assert [v for _t, v in points if not math.isnan(v)] == [4.0, 6.0] and math.isnan(points[1][1])
    text = plot_text(chart.draw([chart.Plot("p95", points)], 60, 8, T0, T0 + 3))
    assert any(0x2800 < ord(c) <= 0x28FF for line in text for c in line)


def test_a_group_of_trends_is_kept_once_per_new_reading_at_that_readings_time():
    from proxytop.core import Snapshot
    from proxytop.screens.trends import TrendsScreen

    class InnoDB:  # a screen Trends' checkpoint age comes from, read only while it was shown
        key, built = "innodb", True

        def active_collectors(self):
            return ["mysql.innodb"]

    trends = TrendsScreen()
    trends.from_screens, trends.with_header = [InnoDB()], False
    made: dict = {}
    first = {"mysql.innodb": Snapshot("mysql.innodb", {}, 0.0, 0.0, wall_time=T0)}  # a replay's first, at 0 s
    assert trends.new_inputs(first.get, made) == [("innodb", T0)]
    assert trends.new_inputs(first.get, made) == []  # still the same reading: not a new point
    later = {"mysql.innodb": Snapshot("mysql.innodb", {}, 5.0, 0.0, wall_time=T0 + 5)}
    assert trends.new_inputs(later.get, made) == [("innodb", T0 + 5)]
    assert trends.new_inputs({}.get, made) == []  # nothing read


def test_times_and_the_trends_table_are_not_figures_of_their_own():
    from proxytop.screens.events import EventsScreen
    from proxytop.screens.figures import graphed_columns
    from proxytop.screens.trends import TrendsScreen

    event = {"_id": 1, "time": T0, "source": "proxysql", "kind": "status"}
    trend = {"_id": "qps", "place": 1, "figure": "Queries/s", "now": 5.0, "low": 1.0, "mean": 3.0, "high": 5.0}
    assert graphed_columns(EventsScreen.columns, event) == []
    assert graphed_columns(TrendsScreen.columns, trend) == []  # (the figures are kept under their own keys)


def test_charts_fit_small_terminals():
    points = [(T0 + i, float(i)) for i in range(300)]
    lines = chart.draw([chart.Plot("x", points)], 60, 5, T0, T0 + 300, markers=[chart.Marker(T0 + 150, "S")])
    assert len(lines) == 5 and all(len("".join(t for t, _ in line)) <= 60 for line in lines)
    assert plot_text(lines)[-1].strip() == "S"


# ----- the real program ---------------------------------------------------------------------

def start(proxytop_term, double, cols=120, rows=40):
    term = proxytop_term("-P", str(double.port), "-d", "1", cols=cols, rows=rows)
    term.wait_for("127.0.0.1:3313")
    return term


def test_g_graphs_the_selected_backend_and_w_widens_the_window(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.wait_until(lambda s: re.search(r"127\.0\.0\.1:3311\s+ONLINE.*\d[\d.]*k", s) is not None, what="rates")
    term.send("g")
    screen = term.wait_until(lambda s: "ConnPool: " in s and "5 minutes" in s and "\u2514" in s, what="the graph")
    assert re.search(r"^ConnPool: 10\s+127\.0\.0\.1:3311\s+ONLINE", screen, re.M), screen  # the first row: the writer
    assert re.search(r"^Used\s+now \d+", screen, re.M), screen
    # time labels on the axis, braille dots in the plot once there are readings
    assert re.search(r"\u2514\d\d:\d\d:\d\d", screen), screen
    screen = term.wait_until(lambda s: any(0x2800 < ord(c) <= 0x28FF for c in s), what="dots")
    term.send("w")
    term.wait_for("1 hour")
    term.send("\x1bOD")  # ← puts a time cursor on the chart
    screen = term.wait_for("cursor ")
    assert "\u25b2" in screen
    term.send(ESC)
    screen = term.wait_until(lambda s: "sort " in s and "\u2514" not in s, what="the table again")


def test_trends_charts_the_whole_system(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.send("T")
    screen = term.wait_until(lambda s: re.search(r"Queries/s \d", s) is not None
                             and re.search(r"Client connections \d", s) is not None, timeout=30,
                             what="Trends with a Q/s and a connection count")
    assert "T:Trends" in screen and "The whole system over the last 5 minutes" in screen
    term.send("w")
    term.wait_for("over the last 1 hour")
    term.send("\x1bOB")  # the charts below
    term.wait_until(lambda s: "SHUNNED backends" in s or "Worst replica lag" in s, what="the later charts")
    term.send("q")
    assert term.wait_exit() == 0


def test_a_small_terminal_still_shows_a_whole_chart(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double, cols=60, rows=15)
    term.send("T")
    screen = term.wait_until(lambda s: re.search(r"Queries/s \d", s) is not None and "\u2514" in s, timeout=30,
                             what="one chart at 60x15")
    lines = screen.splitlines()
    assert all(len(line) <= 60 for line in lines)


def test_trends_begin_with_proxysqls_own_history(proxytop_term, proxysql_double):
    # the double serves the recorded 2.7.2 stats_history: 72 minutes of 1-minute rows
    term = start(proxytop_term, proxysql_double)
    term.send("T")
    term.wait_until(lambda s: re.search(r"Queries/s \d", s) is not None, timeout=30, what="Trends")
    for _ in range(3):  # 5 minutes -> 1 hour -> 24 hours -> 7 days
        term.send("w")
    screen = term.wait_until(lambda s: "over the last 7 days" in s and "ProxySQL's own 1-minute figures" in s,
                             timeout=30, what="ProxySQL's own history joined to the Q/s chart")
    assert re.search(r"^Queries/s \S+\s+\u2501 ProxySQL's own 1-minute figures", screen, re.M), screen
    for _ in range(12):
        term.send("\x1bOB")  # to the last charts: the figures only ProxySQL's history has
    screen = term.wait_until(lambda s: re.search(r"^ProxySQL CPU % of a core \d", s, re.M) is not None,
                             what="ProxySQL's CPU from its own history")
    assert re.search(r"^Slow queries/s \d", screen, re.M), screen
    # its points are drawn: braille dots in the dim style of ProxySQL's own figures
    assert any(0x2800 < ord(c) <= 0x28FF for c in screen)


def test_in_a_replay_trends_say_the_value_now_before_the_recordings_scan_has_a_point(proxytop_term):
    term = proxytop_term("--demo", cols=120, rows=40)
    term.wait_for("ConnPool")
    term.send("T")
    # the scan reads the recording every 10 s: before its second point, the value now is the
    # header's, as the header shows it
    screen = term.wait_until(lambda s: re.search(r"playing 1x  0:0[2-8] ", s) is not None
                             and re.search(r"Q/s (\S+) ", s) is not None
                             and re.search(r"^Queries/s \d", s, re.M) is not None, timeout=20,
                             what="Trends' Q/s in the first seconds of the recording")
    header_qps = re.search(r"Q/s (\S+) ", screen).group(1)
    assert re.search(rf"^Queries/s {re.escape(header_qps)}\s", screen, re.M), screen


def test_the_last_trends_charts_are_reached_on_a_short_terminal(proxytop_term):
    term = proxytop_term("--demo", cols=100, rows=20)
    term.wait_for("ConnPool")
    term.send("T")
    # ProxySQL's own history adds its charts (CPU, memory) after proxytop's, two or three a page
    # ProxySQL's 5, the MySQL servers' 3, lag, checkpoint age, the disks' 2, ProxySQL's own 3 (once read)
    count = 15
    term.wait_until(lambda s: re.search(rf"charts 1-[23] of {count}", s) is not None, timeout=20,
                    what="Trends' first charts")
    for _ in range(count):
        term.send("\x1bOB")  # down (xterm in application mode)
    term.wait_until(lambda s: "ProxySQL memory" in s and re.search(rf"charts \d+-{count} of {count}", s) is not None,
                    timeout=10, what="the last chart")


def test_in_a_replay_charts_cover_the_whole_recording_and_enter_plays_from_the_cursor(proxytop_term):
    term = proxytop_term("--demo", cols=120, rows=40)
    term.wait_for("ConnPool")
    term.send("T")
    # the recording is read for the charts on a thread of its own: the first chart fills from
    # its first to its last reading, the playing position marked under it
    screen = term.wait_until(lambda s: "over the whole recording" in s and "\u25b2" in s
                             and braille_columns(s, "Queries/s") > 60, timeout=30,
                             what="the Q/s chart across the whole recording")
    term.send("1")
    term.send("g")
    term.wait_until(lambda s: "the whole recording" in s and braille_columns(s, "Used") > 60, timeout=30,
                    what="a backend's graph across the whole recording")
    term.send("p")  # paused, the cursor's jump is seen exactly
    for _ in range(10):
        term.send("\x1bOD")  # the time cursor, a quarter of the recording back from the end
    term.wait_for("cursor ")
    term.send("\r")
    screen = term.wait_for("playing from ")
    assert "end of recording" not in screen


def braille_columns(screen: str, title: str) -> int:
    """How many columns of the chart under the line starting with ``title`` hold a dot."""
    lines = screen.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(title)), None)
    if start is None:
        return 0
    columns = set()
    for line in lines[start + 1:start + 8]:
        columns |= {x for x, c in enumerate(line) if 0x2800 < ord(c) <= 0x28FF}
    return len(columns)


def test_events_are_marked_under_the_charts(proxytop_term):
    # the demo changes a ProxySQL variable, reloads the rules and sets a reader's variable 8 s in
    term = proxytop_term("--demo", cols=120, rows=40)
    term.wait_for("ConnPool")
    term.send("T")
    # the title explains the letters marked, only those
    screen = term.wait_until(lambda s: re.search(r"events \(E\): (V=variable L=reload|L=reload)", s) is not None
                             and re.search(r"^\s+\S*[VL]", s.split("Queries/s", 1)[-1], re.M) is not None,
                             timeout=40, what="the demo's variable change and rules reload marked under a chart")
    marks = [line for line in screen.splitlines() if re.fullmatch(r"\s+[A-Z\u25b2 ]+", line) and re.search("[VL]", line)]
    assert marks and "R=restart" not in screen, screen


def test_a_digest_of_queries_is_graphed_too(proxytop_term):
    # Queries fills in its rows only for those shown: the kept figures are filled in first
    term = proxytop_term("--demo", cols=120, rows=40)
    term.wait_for("ConnPool")
    term.go("Queries")
    term.wait_until(lambda s: re.search(r"^sort Time/s", s, re.M) is not None, what="the Queries screen")
    term.send("g")
    term.wait_until(lambda s: s.splitlines()[3].startswith("Queries: ") and braille_columns(s, "Count/s") > 40,
                    timeout=30, what="a digest's Count/s across the recording")


def test_a_shows_every_backend_of_the_hostgroup_on_the_same_charts(proxytop_term, proxysql_double):
    term = start(proxytop_term, proxysql_double)
    term.wait_until(lambda s: re.search(r"127\.0\.0\.1:3312\s+ONLINE", s) is not None, what="the readers")
    term.send("\x1bOB")  # the second row: 127.0.0.1:3312 of hostgroup 20
    term.send("g")
    term.wait_until(lambda s: re.search(r"^ConnPool: 20\s+127\.0\.0\.1:3312", s, re.M) is not None, what="its graph")
    term.send("a")
    screen = term.wait_until(lambda s: re.search(r"^Used\s+\u2501 127\.0\.0\.1:3312 \d+\s+\u2501 127\.0\.0\.1:3313 \d+",
                                                 s, re.M) is not None, what="both readers on one chart")
    assert "127.0.0.1:3311" not in screen.split("\n", 4)[4]  # the writer is in hostgroup 10
    term.send("a")
    term.wait_until(lambda s: re.search(r"^Used\s+now \d+", s, re.M) is not None, what="the row alone again")
