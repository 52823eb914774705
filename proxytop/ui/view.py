"""Pure rendering: controller state + snapshots -> lines of (text, style) segments.

The curses layer only paints these lines; tests and the benchmark can call render() directly.
"""
from __future__ import annotations

import re
import time
from typing import List, Optional, Sequence, Tuple

from proxytop.collectors.proxysql import ConnectionPool
from proxytop.collectors.sides import twin_name
from proxytop.metrics import units
from proxytop.metrics.sides import MYSQL, PGSQL
from proxytop.screens.base import Cells
from proxytop.screens.connpool import header_queries
from proxytop.screens.sided import header_label, header_readings
from proxytop.screens import HALF_TITLES, MYSQL_HALF, PROXYSQL_HALF, filters, keys, tab_keys, table
from proxytop.ui import graph_view

Segment = Tuple[str, Optional[str]]
Line = List[Segment]


ELLIPSIS = "\u2026"


def fit(line: Line, width: int) -> Line:
    """Cut a line of segments to width characters; a line that was cut ends in '…'.

    >>> fit([("ab", None), ("cd", "x")], 4), fit([("ab", None), ("cdef", "x")], 4)
    ([('ab', None), ('cd', 'x')], [('ab', None), ('c', 'x'), ('…', 'x')])
    """
    if sum(len(text) for text, _ in line) <= width:
        return list(line)
    out: Line = []
    used = 0
    room = width - 1  # the ellipsis takes the last cell
    for text, style in line:
        piece = text[: max(0, room - used)]
        if piece:
            out.append((piece, style))
            used += len(piece)
        if used >= room:
            if width > 0:
                out.append((ELLIPSIS, style))
            break
    return out


def wrap(line: Line, width: int, indent: int = 2, most: int = 4) -> List[Line]:
    """A line of segments broken at spaces into lines of at most ``width`` characters, the
    ones after the first indented; at most ``most`` lines, the last cut with '…'. A message
    that matters is wrapped rather than cut.

    >>> [screen_text([l]) for l in wrap([("a connection was refused", "danger")], 12)]
    ['a connection', '  was', '  refused']
    """
    if sum(len(text) for text, _ in line) <= width or width < 8:
        return [fit(line, width)]
    words: List[Segment] = [(word, style) for text, style in line for word in re.findall(r"\s+|\S+", text)]
    lines: List[Line] = [[]]
    used = 0
    for word, style in words:
        if used + len(word) > width and used > indent and lines[-1]:
            if word.isspace():
                continue  # the break replaces the space
            lines.append([(" " * indent, None)])
            used = indent
        if word.isspace() and used == indent and len(lines) > 1:
            continue
        lines[-1].append((word, style))
        used += len(word)
    if len(lines) > most:
        lines = lines[: most - 1] + [lines[most - 1] + [(" ", None)] + [seg for l in lines[most:] for seg in l]]
    return [fit(l, width) for l in lines]


def fit_fields(fields: Sequence[Tuple[int, Line]], width: int) -> Line:
    """A line made of whole fields: (priority, segments), 0 the most important. Fields give
    way, least important and rightmost first, until the line fits; fields of priority 0 never
    give way (what they can't show is cut with '…').

    >>> screen_text([fit_fields([(0, [("proxytop ", None)]), (2, [("up 5s", None)]), (1, [("  Q/s 9", None)])], 16)])
    'proxytop   Q/s 9'
    """
    kept = list(enumerate(fields))

    def length(chosen) -> int:
        return sum(len(text) for _, (_, segments) in chosen for text, _ in segments)

    while length(kept) > width:
        candidates = [f for f in kept if f[1][0] > 0]
        if not candidates:
            break
        kept.remove(max(candidates, key=lambda f: (f[1][0], f[0])))
    return fit([segment for _, (_, segments) in kept for segment in segments], width)


def header_lines(ctl, width: int) -> List[Line]:
    """proxytop, the ProxySQL watched, its version, the side, uptime, Q/s, conn and trx; the
    interval, the data's age and the connection; the backend alarm. A narrow terminal drops
    whole fields, the least important first (fit_fields), and a disconnection's reason is
    wrapped onto lines of its own rather than cut. The MySQL servers' half has its own."""
    if ctl.ui.half == MYSQL_HALF:
        return mysql_header_lines(ctl, width)
    engine = ctl.engine
    now, replaying = engine.now(), engine.replaying
    source, state = engine.source("proxysql"), engine.state("proxysql")
    session = getattr(source, "session", None)
    title: Line = [("proxytop ", "header_title")] + ([("REPLAY ", "warning_bold")] if replaying else [])
    first: List[Tuple[int, Line]] = [(0, title)]
    if hasattr(source, "watched_title"):  # several ProxySQL nodes: "node 2/3 10.0.0.2:6032 node-2"
        first.append((1, [(source.watched_title(), "header")]))
    else:
        first.append((1, [(source.endpoint.label if source is not None else "no ProxySQL", "header")]))
    if session is not None and session.version_text:
        first.append((5, [(f"  ProxySQL {session.version_text.split('-')[0]}", "header")]))
        if not session.is_admin:
            first.append((3, [("  (stats user)", "dim")]))
        if getattr(session, "encryption", None):
            first.append((6, [("  TLS", "good")]))  # the admin connection is encrypted
    side = header_label(ctl.screen, session)
    if side is not None:
        first.append((1, [(f"  {side}", "warning_bold" if side == "PgSQL" else "header")]))
    previous, current = header_readings(engine.last_two, ctl.screen)
    if current is not None and current.data:
        stats = current.data
        # Questions; on the PostgreSQL side of 3.0 (no Questions) the queries sent to backends
        pool_pair = engine.last_two(twin_name(ConnectionPool.name, PGSQL))
        qps, counted = header_queries(getattr(ctl.screen, "side", MYSQL), (previous, current), pool_pair)
        first.append((4, [("  up ", "label"), (units.duration(stats.get("ProxySQL_Uptime")), "header")]))
        first.append((1, [("  Q/s ", "label"), (units.number(qps) if qps is not None else units.MISSING, "header")]
                      + ([(f" {counted}", "dim")] if counted else [])))
        first.append((2, [("  conn ", "label"), (units.number(stats.get("Client_Connections_connected")), "header")]))
        first.append((3, [("  trx ", "label"), (units.number(stats.get("Active_Transactions")), "header")]))
    second = timing_fields(ctl)
    reason: Line = []
    if state is not None:  # the header's own reading comes from ProxySQL on every screen (IOstat's too)
        if state.connected:
            second.append((3, [("  connected", "good")]))
        elif state.error:
            reason = [(f"disconnected, {state.retry_text(now)}: {state.error}", "danger")]
        else:
            second.append((0, [("  connecting\u2026", "warning")]))
    lines = [fit_fields(first, width), fit_fields(second, width)]
    if reason:  # on the line if it fits, else on lines of its own: never cut
        if len(screen_text([lines[1] + reason])) + 2 <= width:
            lines[1] = lines[1] + [("  ", None)] + reason
        else:
            lines += wrap(reason, width, indent=2, most=3)
    alarm = _backend_alarm(ctl)
    if alarm:
        lines += wrap([("! ", "danger"), (alarm, "danger")], width, most=2)
    return lines


def timing_fields(ctl) -> List[Tuple[int, Line]]:
    """The header's second line but the connection: the interval (a replay: where it is), how
    old the data is (paused: when it was read), PAUSED."""
    engine = ctl.engine
    now, replaying = engine.now(), engine.replaying
    second: List[Tuple[int, Line]]
    if replaying:
        second = [(0, list(ctl.overlay.status(ctl)))]  # proxytop.recordings.replay.ReplayControls
    else:
        second = [(1, [("every ", "label"), (units.interval(ctl.interval()), "header")])]
        minimum = ctl.minimum_interval(ctl.screen)
        if minimum > 0.5:
            second.append((5, [(f" (min {minimum:g}s)", "dim")]))
    latest = ctl.newest_of_screen()
    if latest is not None and engine.paused and not replaying:
        # frozen: when it was read, which says how stale it is without a redraw every second
        read_at = time.strftime("%H:%M:%S", time.localtime(latest.wall_time))
        second.append((2, [("  data read at ", "label"), (read_at, "header")]))
    elif latest is not None:
        second.append((2, [("  data ", "label"), (f"{units.duration(max(0.0, now - latest.taken_at))} old", "header")]))
    if engine.paused and not replaying:
        second.append((0, [("  PAUSED", "warning_bold")]))
    return second


def mysql_header_lines(ctl, width: int) -> List[Line]:
    """The MySQL servers' half: how many servers, how many down, and the ProxySQL they were
    found through; the interval and the data's age; the backend alarm."""
    engine = ctl.engine
    fleet = next((s.fleet for s in ctl.screens if getattr(s, "fleet", None) is not None), None)
    listed = fleet.listed() if fleet is not None else []
    states = [engine.state(server.source) for server in listed]
    down = sum(1 for state in states if state is not None and state.error and not state.connected)
    first: List[Tuple[int, Line]] = [
        (0, [("proxytop ", "header_title")] + ([("REPLAY ", "warning_bold")] if engine.replaying else []))]
    if len(listed) == 1:  # one server: the header names it, as the ProxySQL half's names its ProxySQL
        session = getattr(engine.source(listed[0].source), "session", None)
        flavour = getattr(session, "flavour", None)
        first.append((0, [("MySQL ", "label"), (listed[0].key, "header")]))
        if flavour is not None:
            first.append((2, [(f"  {flavour.label}", "header")]))
    else:
        first.append((0, [(f"{len(listed)} MySQL servers", "header")]))
    if down:
        first.append((0, [(f"  {down} down" if len(listed) > 1 else "  down", "danger")]))
    source, state = engine.source("proxysql"), engine.state("proxysql")
    if source is not None and PROXYSQL_HALF in ctl.halves:
        first.append((3, [("  through ProxySQL ", "label"), (source.endpoint.label, "header")]
                      + ([("  (disconnected)", "danger")] if state is not None and state.error else [])))
    lines = [fit_fields(first, width), fit_fields(timing_fields(ctl), width)]
    alarm = _backend_alarm(ctl)
    if alarm:
        lines += wrap([("! ", "danger"), (alarm, "danger")], width, most=2)
    return lines


def _backend_alarm(ctl) -> Optional[str]:
    """The alarms of every screen that has one, joined, the most severe (lowest ``alarm_rank``)
    first: a backend not ONLINE or lagging past its threshold (screens.connpool), a replica's
    thread stopped or its lag heading past ProxySQL's limit (screens.replication), a lock wait
    past --lock-wait-alarm (screens.locks), a Galera node not Synced (screens.galera)."""
    alarms = []
    for screen in ctl.screens:
        alarm = getattr(screen, "alarm", None)
        text = alarm(ctl.view) if alarm is not None else None
        if text:
            alarms.append((getattr(screen, "alarm_rank", 0), text))
    return "; ".join(text for _rank, text in sorted(alarms, key=lambda a: a[0])) or None


def tab_line(ctl, width: int) -> Line:
    """The key (number or letter) and title of every screen of the half shown; on a narrower terminal the
    short titles, then the numbers alone beside the current screen's title: every number
    stays visible. With both halves, which half and the key to the other, where there is room."""
    for level in ("title", "short_title", None):
        line: Line = []
        letters = tab_keys([ctl.screens[i].key for i in ctl.tabs])
        for tab, i in enumerate(ctl.tabs):
            screen = ctl.screens[i]
            current = i == ctl.ui.index
            style = "tab_active" if current else ("tab" if screen.built else "tab_dim")
            name = screen.title if current else ((getattr(screen, level) or screen.title) if level else "")
            line += [(" ", None)] if line else []
            line.append((f"{letters[tab]}:{name}" if name else letters[tab], style))
        if sum(len(text) for text, _ in line) <= width:
            break
    if len(ctl.halves) > 1:
        other = next(HALF_TITLES[h] for h in ctl.halves if h != ctl.ui.half)
        for hint in (f"   {HALF_TITLES[ctl.ui.half]} screens; M: {other}", f"   M: {other}"):
            if len(screen_text([line])) + len(hint) <= width:
                return line + [(hint, "dim")]
    return fit(line, width)


def status_line(ctl, shown: int, total: int, width: int) -> Line:
    """The sort, the filter, how many rows, how many columns the width hides (and the keys
    that reach them: the sort column always shows), and the screen's problem."""
    state = ctl.state
    fields: List[Tuple[int, Line]] = [
        (0, [("sort ", "label"), (ctl.column_title(state.sort_key) + (" \u2193" if state.descending else " \u2191"),
                                  "header")])]
    if not state.filter.empty:
        fields += [(0, [("  filter ", "label"), (state.filter.described, "warning_bold")]),
                   (1, [(f"  {shown}/{total} {table.rows_word(total)}", "label")])]
    else:
        fields.append((1, [(f"  {total} {table.rows_word(total)}", "label")]))
    columns = ctl.screen.columns
    hidden = len(columns) - len(table.fit_columns(columns, width, keep=state.sort_key)) if columns else 0
    problem = ctl.screen.status(ctl.view)
    if problem:
        fields.append((0, [(f"  {problem}", "danger")]))
    if hidden:
        room = width - len(screen_text([fit_fields(fields, width)]))
        plural = "s" if hidden > 1 else ""
        marker = next((text for text in (f"  +{hidden} column{plural} hidden: s/</> sort by one to show it, "
                                         "? lists all", f"  +{hidden} column{plural} hidden (s/</> show)",
                                         f"  +{hidden} hidden (s/</>)") if len(text) <= room), None)
        if marker:
            fields.insert(len(fields) - bool(problem), (0, [(marker, "warning")]))
    return fit_fields(fields, width)


def footer_line(ctl, width: int) -> Line:
    mode, message = ctl.ui.mode, ctl.current_message()
    if mode in ("filter", "prompt"):
        label, hint = ("filter: ", "Enter apply  Esc cancel  (text, col:regex, col>N, time>2s)") if mode == "filter" else \
            (ctl.ui.prompt_label, f"{ctl.ui.prompt_hint}  (Enter, Esc)")
        after = (f"   {message[0]}", message[1]) if message else (f"   {hint}", "dim")
        return fit([(label, "label"), (ctl.ui.input, "input"), ("_", "cursor"), after], width)
    if message is not None:
        return fit([message], width)
    if mode == "confirm":  # its panel says which keys do what
        return []
    if mode == "help":  # (its title says which lines show)
        return fit([("\u2191\u2193 PgUp PgDn scroll  q quit  any other key closes", "footer")], width)
    if mode == "detail":
        hints = ["Esc back", "\u2191\u2193 scroll"] + [_hint(ctl, b) for b in ctl.detail_bindings() if b.hint] + ["q quit"]
    elif mode == "graph":
        hints = [b.hint for b in keys.GRAPH_BINDINGS if b.hint and (b.action != "graph_jump" or ctl.engine.replaying)]
        hints += [_hint(ctl, b) for b in ctl.detail_bindings() if b.hint] + ["q quit"]
    else:
        hints = [_hint(ctl, b) for b in ctl.bindings() if b.hint and ctl.offers(b)]
    # whole hints only: the later ones give way first, never quitting, the help and going back
    fields = [(0 if hint in ("q quit", "? help", "Esc back") else 1 + i, [(("  " if i else "") + hint, "footer")])
              for i, hint in enumerate(hints)]
    text = screen_text([fit_fields(fields, width)]).lstrip()
    return [(text, "footer")] if text else []


def footer_lines(ctl, width: int) -> List[Line]:
    """The bottom line; a message too long for it is wrapped onto the lines above it."""
    message = ctl.current_message()
    if message is not None and ctl.ui.mode not in ("filter", "prompt") and len(message[0]) > width:
        return wrap([message], width, most=3)
    return [footer_line(ctl, width)]


def _hint(ctl, binding) -> str:
    """A binding's footer hint; pausing's says "resume" while paused, M where it goes."""
    if binding.action == "pause" and ctl.engine.paused:
        return binding.hint.replace("pause", "resume")
    if binding.action == "switch_half" and ctl.ui.half == MYSQL_HALF:
        return "M proxysql"
    return binding.hint


def table_lines(ctl, rows: Sequence[dict], width: int, height: int) -> List[Line]:
    """Column titles and as many rows as fit, scrolled to keep the cursor visible."""
    screen = ctl.screen
    if not screen.columns or height <= 0:
        return []
    body = height - 1
    ctl.page_rows = max(1, body - 1)
    key = screen.key
    cursor = ctl.ui.cursor[key]
    top = ctl.ui.scroll[key]
    if cursor < top:
        top = cursor
    elif cursor >= top + body:
        top = cursor - body + 1
    top = max(0, min(top, max(0, len(rows) - body)))
    ctl.ui.scroll[key] = top
    fitted = table.fit_columns(screen.columns, width, keep=ctl.state.sort_key)
    ctl.visible_keys = [c.key for c, _ in fitted]
    screen.complete_rows(rows[top:top + body], ctl.view)
    lines: List[Line] = [_join(table.header_cells(fitted, ctl.state))]
    on_cursor = cursor if ctl.ui.mode == "table" else -1
    for i in range(top, min(len(rows), top + body)):
        lines.append(_join(table.row_cells(rows[i], fitted), cursor=i == on_cursor))
    return lines


def _join(cells: Sequence[Segment], cursor: bool = False) -> Line:
    """Cells with a space between them, as runs of one style (table.Runs.joined)."""
    return table.Runs.joined(cells, cursor)


def column_help(column) -> str:
    """A column's help, and what a bare figure means when a filter compares it (its cells
    may scale it: 850ms, 5.87s)."""
    bare = filters.bare_unit(column)
    note = f"filter: a bare number is {bare}" if bare else ""
    return f"{column.help} ({note})" if column.help and note else column.help or note


def help_lines(ctl, width: int) -> List[Line]:
    """The help's body (help_title goes above it): the keys of the screen, of a replay and of
    the key table, then every column of the screen (screen.columns, as the table shows them);
    a text too long for the width wraps under its own column."""
    overlay = ctl.overlay
    groups = [(f"{ctl.screen.title} screen", ctl.screen.bindings),
              (overlay.title if overlay else "", overlay.bindings if overlay else ()),
              ("everywhere", [b for b in ctl.bindings() if b in keys.GLOBAL_BINDINGS]),  # those not overridden
              ("in a graph (g)", keys.GRAPH_BINDINGS)]
    groups = [(title, [(keys.describe(b), b.help) for b in bindings]) for title, bindings in groups if bindings]
    groups.append(("columns of this screen", [(c.title.strip(), column_help(c)) for c in ctl.screen.columns]))
    left = 2 + max(len(name) for _, entries in groups for name, _ in entries)  # no name runs into its text
    lines: List[Line] = []
    for title, entries in groups:
        lines.append([(title, "label")])
        lines += [[(f"  {name:<{left}}", "header"), (text, None)] for name, text in entries]
        lines.append([])
    # a long text wraps under its own column: the help is read, not skimmed
    return [part for line in lines[:-1] for part in wrap(line, width, indent=left + 2)]


def help_title(ctl, shown: int, total: int, width: int) -> Line:
    """The help's first line: which of its lines are shown (the footer says how to scroll)."""
    top = ctl.ui.help_scroll
    where = "" if shown >= total else f"   lines {top + 1}-{top + shown} of {total}"
    return fit([("proxytop keys", "header_title"), (where, "dim")], width)


def detail_lines(ctl, width: int) -> List[Line]:
    detail = ctl.ui.detail
    if detail is None:
        return []
    return [fit([(detail.title, "header_title"), ("   Esc back", "dim")], width)] + \
        [part for line in detail.lines for part in wrap(list(line), width, indent=_hanging(line, width))]


def _hanging(line, width: int) -> int:
    """How far a wrapped detail line's next lines are indented: under the text that follows
    its label (field() pads labels to one column), else a little."""
    if line and line[0][1] == "label" and len(line[0][0]) < width // 2:
        return len(line[0][0])
    return 4


def graph_lines(ctl, width: int, room: int) -> List[Line]:
    """The graph of a row (g): as many of its figures' charts as fit, the rows of the table
    still made from each new reading (that is what feeds the history)."""
    ctl.rows()
    graph = ctl.ui.graph
    screen = next(s for s in ctl.screens if s.key == graph.screen)
    start, end = ctl.graph_span()
    lines, ctl.graph_figures = graph_view.graph_lines(graph, screen.columns, ctl.figures, ctl.engine.wall_now(),
                                                      width, room, markers=ctl.event_markers(start, end),
                                                      recording=ctl.engine.wall_span())
    return lines[:max(0, room)]


def confirm_lines(ctl, width: int) -> List[Line]:
    confirm = ctl.ui.confirm
    lines: List[Line] = [[("Confirm", "warning_bold")], []]
    for text in confirm.question:
        lines += wrap([(text, None)], width)
    lines += [[], [("y", "warning_bold"), (" = yes, any other key = no", None)]]  # (the footer is blank)
    return lines


def render(ctl, width: int, height: int) -> List[Line]:
    """The whole screen as lines. Small terminals keep the header, tabs and footer first."""
    width = max(1, width)
    lines: List[Line] = header_lines(ctl, width) + [tab_line(ctl, width)]
    footer = footer_lines(ctl, width - 1)  # (the shell never writes the screen's last cell)
    room = height - len(lines) - len(footer)
    if ctl.ui.mode in ("help", "detail", "confirm"):
        ctl.page_rows = max(1, room - 1)
        if ctl.ui.mode == "help":
            whole, rows = help_lines(ctl, width), max(0, room - 1)  # the title stays
            ctl.page_rows = max(1, rows - 1)
            ctl.ui.help_scroll = min(ctl.ui.help_scroll, max(0, len(whole) - rows))
            body = whole[ctl.ui.help_scroll:][:rows]
            content = [help_title(ctl, len(body), len(whole), width)] + body
        elif ctl.ui.mode == "detail":
            ctl.refresh_detail()
            content = detail_lines(ctl, width)
            ctl.ui.detail_scroll = min(ctl.ui.detail_scroll, max(0, len(content) - room))
            content = content[:1] + content[1 + ctl.ui.detail_scroll:]  # the title stays
        else:
            content = confirm_lines(ctl, width)
        lines += content[:max(0, room)]
    elif ctl.ui.mode == "graph":
        lines += graph_lines(ctl, width, room)
    elif hasattr(ctl.screen, "canvas"):  # a screen of charts (Trends): drawn to the room it has
        ctl.rows()
        lines += ctl.screen.canvas(ctl.view, width, room, events=ctl.event_markers)
    else:
        rows = ctl.rows()
        notes = [part for note in ctl.screen.notes(ctl.view)
                 for part in ([fit(list(note), width)] if isinstance(note, Cells) else wrap(list(note), width, most=3))]
        lines.append(status_line(ctl, ctl.shown_rows, ctl.total_rows, width))
        body = room - 1
        # the table keeps its titles and some rows (half the room, or all of them): notes take the rest
        kept = min(len(rows) + 1, max(3, body // 2)) if ctl.screen.columns else 0
        if len(notes) > body - kept:
            shown = max(0, body - kept - 1)
            notes = notes[:shown] + [fit([(f"\u2026 {len(notes) - shown} more note lines: a taller terminal shows them",
                                           "dim")], width)]
        lines += notes
        lines += table_lines(ctl, rows, width, height - len(lines) - len(footer))
    lines = lines[: max(0, height - len(footer))]
    lines += [[] for _ in range(height - len(footer) - len(lines))] + footer
    return lines[:height] if height > 0 else []


def screen_text(lines: Sequence[Line]) -> str:
    """Plain text of rendered lines (for captures and tests)."""
    return "\n".join("".join(text for text, _ in line).rstrip() for line in lines)
