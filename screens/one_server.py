"""What every screen about one MySQL server shares: which server it shows, and n / N to step
through the fleet.

The server is the one under the Servers screen's cursor (``cursor_id["servers"]``), else the
first one listed. n / N move that cursor too, so every screen about one server (Sessions,
Status, Commands) shows the same server, and the Servers screen has it selected.
"""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.core import Snapshot
from proxytop.screens.base import DataView
from proxytop.screens.keys import Binding

NO_SERVER = "No MySQL server to watch: add one with --mysql HOST[:PORT] or --mysql-socket PATH."
Line = Tuple[Tuple[str, Optional[str]], ...]


def server_bindings(what: str) -> Tuple[Binding, Binding]:
    """n and N, said of what the screen shows of a server ("the sessions", "the status")."""
    return (Binding(("n",), "next_server", f"{what} of the next MySQL server", "n/N server"),
            Binding(("N",), "previous_server", f"{what} of the previous MySQL server"))


class OneServer:
    """A mixin for a Screen about one server of the fleet. A subclass names the reading it
    shows (``reading_name``) and what it shows of a server (``shows``, for the messages)."""

    uses_fleet = True
    shows = "the readings"

    def __init__(self, config=None, fleet: Optional[Fleet] = None):
        super().__init__(config)
        self.fleet = fleet if fleet is not None else Fleet.from_config(config)
        self.server_key: Optional[str] = None  # the server shown (None: the first listed)

    def reading_name(self, server: Server) -> str:  # pragma: no cover - each screen names its own
        raise NotImplementedError

    # --- which server --------------------------------------------------------------------------
    def server(self) -> Optional[Server]:
        listed = self.fleet.listed()
        chosen = self.fleet.servers.get(self.server_key) if self.server_key else None
        if chosen is not None and chosen.listed:
            return chosen
        return listed[0] if listed else None

    def on_show(self, selected: Mapping[str, Any]) -> None:
        key = selected.get("servers")
        if key in self.fleet.servers:
            self.server_key = key

    def _step_server(self, controller, step: int) -> None:
        listed = self.fleet.listed()
        current = self.server()
        if current is None or len(listed) < 2:
            controller.say("no other MySQL server to show")
            return
        keys = [server.key for server in listed]
        self.server_key = keys[(keys.index(current.key) + step) % len(keys)]
        # The Servers screen's cursor follows: every screen about one server shows this one next.
        controller.ui.cursor_id["servers"] = self.server_key
        controller.say(f"{self.shows} of {self.server_key}")

    def action_next_server(self, controller) -> None:
        self._step_server(controller, +1)

    def action_previous_server(self, controller) -> None:
        self._step_server(controller, -1)

    # --- what every such screen does alike ------------------------------------------------------
    def readings(self, view: DataView) -> Tuple[Optional[Snapshot], Optional[Snapshot]]:
        """The last two readings of the server shown (servers ProxySQL lists registered first)."""
        self.fleet.sync_discovered()
        server = self.server()
        return view.pair(self.reading_name(server)) if server is not None else (None, None)

    def active_collectors(self) -> List[str]:
        server = self.server()
        return [self.reading_name(server)] if server is not None else []

    def rows_token(self, view: DataView):
        server = self.server()
        state = view.state(server.source) if server is not None else None
        return (server.key if server else None, state is not None and state.connected)

    def status(self, view: DataView) -> Optional[str]:
        server = self.server()
        return view.error(self.reading_name(server)) if server is not None else None

    def server_lines(self, view: DataView, reading) -> List[Line]:
        """The notes' first lines: the server shown (and n/N when there are others), then, with
        no ``reading`` yet, why (the source's or the collector's error) or that it is coming."""
        server = self.server()
        if server is None:
            return [((NO_SERVER, "warning"),)]
        several = len(self.fleet.listed()) > 1
        lines: List[Line] = [(("Server  ", "label"), (server.key, "header"),
                              ("   n/N: next/previous server" if several else "", "dim"))]
        state = view.state(server.source)
        if state is not None and not state.connected and state.error:
            # as the Servers row says it; what is listed below, if anything, is from before
            shown = " (what follows is its last reading)" if reading is not None else ""
            lines.append(((f"down, {state.retry_text(view.now())}: {state.error}{shown}", "danger"),))
        elif reading is None:
            why = view.error(self.reading_name(server))
            lines.append(((why or "waiting for the first reading\u2026", "warning" if why else "dim"),))
        return lines
