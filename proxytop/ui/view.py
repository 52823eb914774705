"""Pure rendering: controller state + snapshots -> lines of (text, style) segments.

The curses layer only paints these lines; tests and the benchmark can call render() directly.
"""
from __future__ import annotations

import time
from typing import List, Optional, Sequence, Tuple

from proxytop.collectors.proxysql import ConnectionPool
from proxytop.collectors.sides import twin_name
from proxytop.metrics import units
from proxytop.metrics.sides import MYSQL, PGSQL
from proxytop.screens.connpool import header_queries
from proxytop.screens.sided import header_label, header_readings
from proxytop.screens import keys, table

Segment = Tuple[str, Optional[str]]
Line = List[Segment]


def fit(line: Line, width: int) -> Line:
    """Cut a line of segments to width characters."""
    out: Line = []
    used = 0
    for text, style in line:
        if used >= width:
            break
        piece = text[: width - used]
        out.append((piece, style))
        used += len(piece)
    return out


def header_lines(ctl, width: int) -> List[Line]:
    """proxytop, the ProxySQL watched, its version, the side, uptime, Q/s, conn and trx; the
    interval, the data's age and the connection; the backend alarm."""
    engine = ctl.engine
    now, replaying = engine.now(), engine.replaying
    source, state = engine.source("proxysql"), engine.state("proxysql")
    session = getattr(source, "session", None)
    first: Line = [("proxytop ", "header_title")]
    if replaying:
        first.append(("REPLAY ", "warning_bold"))
    if hasattr(source, "watched_title"):  # several ProxySQL nodes: "node 2/3 10.0.0.2:6032 node-2"
        first.append((source.watched_title(), "header"))
    else:
        first.append((source.endpoint.label if source is not None else "no ProxySQL", "header"))
    if session is not None and session.version_text:
        first.append((f"  ProxySQL {session.version_text.split('-')[0]}", "header"))
        if not session.is_admin:
            first.append(("  (stats user)", "dim"))
        if getattr(session, "encryption", None):
            first.append(("  TLS", "good"))  # the admin connection is encrypted
    side = header_label(ctl.screen, session)
    if side is not None:
        first.append((f"  {side}", "warning_bold" if side == "PgSQL" else "header"))
    previous, current = header_readings(engine.last_two, ctl.screen)
    if current is not None and current.data:
        stats = current.data
        # Questions; on the PostgreSQL side of 3.0 (no Questions) the queries sent to backends
        pool_pair = engine.last_two(twin_name(ConnectionPool.name, PGSQL))
        qps, counted = header_queries(getattr(ctl.screen, "side", MYSQL), (previous, current), pool_pair)
        first += [("  up ", "label"), (units.duration(stats.get("ProxySQL_Uptime")), "header"),
                  ("  Q/s ", "label"), (units.number(qps) if qps is not None else units.MISSING, "header")]
        if counted:
            first.append((f" {counted}", "dim"))
        first += [
            ("  conn ", "label"), (units.number(stats.get("Client_Connections_connected")), "header"),
            ("  trx ", "label"), (units.number(stats.get("Active_Transactions")), "header"),
        ]
    if replaying:
        second: Line = list(ctl.overlay.status(ctl))  # proxytop.recordings.replay.ReplayControls
    else:
        second = [("every ", "label"), (units.interval(ctl.interval()), "header")]
        minimum = ctl.minimum_interval(ctl.screen)
        if minimum > 0.5:
            second.append((f" (min {minimum:g}s)", "dim"))
    latest = ctl.newest_of_screen()
    if latest is not None and engine.paused and not replaying:
        # frozen: when it was read, which says how stale it is without a redraw every second
        read_at = time.strftime("%H:%M:%S", time.localtime(latest.wall_time))
        second += [("  data read at ", "label"), (read_at, "header")]
    elif latest is not None:
        second += [("  data ", "label"), (f"{units.duration(max(0.0, now - latest.taken_at))} old", "header")]
    if engine.paused and not replaying:
        second.append(("  PAUSED", "warning_bold"))
    if state is not None:  # the header's own reading comes from ProxySQL on every screen (IOstat's too)
        if state.connected:
            second.append(("  connected", "good"))
        elif state.error:
            second.append((f"  disconnected, {state.retry_text(now)}: {state.error}", "danger"))
        else:
            second.append(("  connecting\u2026", "warning"))
    lines = [fit(first, width), fit(second, width)]
    alarm = _backend_alarm(ctl)
    if alarm:
        lines.append(fit([("! ", "danger"), (alarm, "danger")], width))
    return lines


def _backend_alarm(ctl) -> Optional[str]:
    """One line while any backend is not ONLINE or lags past its threshold (screens.connpool)."""
    for screen in ctl.screens:
        alarm = getattr(screen, "alarm", None)
        if alarm is not None:
            return alarm(ctl.view)
    return None


def tab_line(ctl, width: int) -> Line:
    line: Line = []
    for i, screen in enumerate(ctl.screens):
        style = "tab_active" if i == ctl.ui.index else ("tab" if screen.built else "tab_dim")
        line += [(f"{(i + 1) % 10}:{screen.title}", style), (" ", None)]
    return fit(line, width)


def status_line(ctl, shown: int, total: int, width: int) -> Line:
    state = ctl.state
    line: Line = [("sort ", "label"), (ctl.column_title(state.sort_key) + (" \u2193" if state.descending else " \u2191"), "header")]
    if not state.filter.empty:
        line += [("  filter ", "label"), (state.filter.text, "warning_bold"), (f"  {shown}/{total} rows", "label")]
    else:
        line.append((f"  {total} rows", "label"))
    problem = ctl.screen.status(ctl.view)
    if problem:
        line.append((f"  {problem}", "danger"))
    return fit(line, width)


def footer_line(ctl, width: int) -> Line:
    mode, message = ctl.ui.mode, ctl.current_message()
    if mode in ("filter", "prompt"):
        label, hint = ("filter: ", "Enter apply  Esc cancel  (text, col:regex, col>N)") if mode == "filter" else \
            (ctl.ui.prompt_label, f"{ctl.ui.prompt_hint}  (Enter, Esc)")
        after = (f"   {message[0]}", message[1]) if message else (f"   {hint}", "dim")
        return fit([(label, "label"), (ctl.ui.input, "input"), ("_", "cursor"), after], width)
    if message is not None:
        return fit([message], width)
    if mode == "confirm":  # its panel says which keys do what
        return []
    if mode == "help":  # (its title says which lines show)
        return fit([("\u2191\u2193 PgUp PgDn scroll  any other key closes", "footer")], width)
    if mode == "detail":
        hints = ["Esc back", "\u2191\u2193 scroll"] + [_hint(ctl, b) for b in ctl.detail_bindings() if b.hint] + ["q quit"]
    else:
        hints = [_hint(ctl, b) for b in ctl.bindings() if b.hint]
    return fit([("  ".join(hints), "footer")], width)


def _hint(ctl, binding) -> str:
    """A binding's footer hint; pausing's says "resume" while paused."""
    if binding.action == "pause" and ctl.engine.paused:
        return binding.hint.replace("pause", "resume")
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


def help_lines(ctl, width: int) -> List[Line]:
    """The help's body (help_title goes above it): the keys of the screen, of a replay and of
    the key table, then every column of the screen (screen.columns, as the table shows them)."""
    overlay = ctl.overlay
    groups = [(f"{ctl.screen.title} screen", ctl.screen.bindings),
              (overlay.title if overlay else "", overlay.bindings if overlay else ()),
              ("everywhere", [b for b in ctl.bindings() if b in keys.GLOBAL_BINDINGS])]  # those not overridden
    groups = [(title, [(keys.describe(b), b.help) for b in bindings]) for title, bindings in groups if bindings]
    groups.append(("columns of this screen", [(c.title.strip(), c.help) for c in ctl.screen.columns]))
    left = 2 + max(len(name) for _, entries in groups for name, _ in entries)  # no name runs into its text
    lines: List[Line] = []
    for title, entries in groups:
        lines.append([(title, "label")])
        lines += [[(f"  {name:<{left}}", "header"), (text, None)] for name, text in entries]
        lines.append([])
    return [fit(line, width) for line in lines[:-1]]


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
        [fit(list(line), width) for line in detail.lines]


def confirm_lines(ctl, width: int) -> List[Line]:
    confirm = ctl.ui.confirm
    lines: List[Line] = [[("Confirm", "warning_bold")], []]
    for text in confirm.question:
        lines.append(fit([(text, None)], width))
    lines += [[], [("y", "warning_bold"), (" = yes, any other key = no", None)]]  # (the footer is blank)
    return lines


def render(ctl, width: int, height: int) -> List[Line]:
    """The whole screen as lines. Small terminals keep the header, tabs and footer first."""
    width = max(1, width)
    lines: List[Line] = header_lines(ctl, width) + [tab_line(ctl, width)]
    footer = footer_line(ctl, width)
    room = height - len(lines) - 1
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
    else:
        rows = ctl.rows()
        notes = [fit(list(n), width) for n in ctl.screen.notes(ctl.view)]
        lines.append(status_line(ctl, ctl.shown_rows, ctl.total_rows, width))
        lines += notes[: max(0, room - 3)]
        lines += table_lines(ctl, rows, width, height - len(lines) - 1)
    lines = lines[: max(0, height - 1)]
    lines += [[] for _ in range(height - 1 - len(lines))] + [footer]
    return lines[:height] if height > 0 else []


def screen_text(lines: Sequence[Line]) -> str:
    """Plain text of rendered lines (for captures and tests)."""
    return "\n".join("".join(text for text, _ in line).rstrip() for line in lines)
