"""Galera: one row per Galera node among the watched MySQL servers (wsrep on), and ProxySQL's
side of it: its Galera hostgroups and the last checks of its Galera monitor, which say why
ProxySQL put a node where it is.

A node's figures (its ``mysql.galera.<server>`` readings, collectors.galera): the cluster
status, the node's state, the cluster size and conf_id (a node whose view differs from its
cluster's majority is split), the fraction of the interval flow control paused replication,
flow-control messages sent and received, the local queues' averages, certification failures
and brute-force aborts per second, and wsrep_ready. Servers without wsrep are not rows.

The header alarm (every screen): a node not Synced, split, or paused by flow control more than
10% of the interval. Off this screen the nodes are read every 5 s for it (a server without
wsrep every minute).
"""
from __future__ import annotations

import time
from typing import Callable, Dict, List, Mapping, Optional, Tuple

from proxytop.collectors.galera import GaleraReading
from proxytop.collectors.galera_proxysql import GaleraHostgroups, GaleraLog
from proxytop.collectors.innodb import DISCOVERY
from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.core import Table
from proxytop.metrics import units
from proxytop.metrics.galera import PRIMARY, SYNCED, node_alarms, paused_fraction, proxysql_verdict, split_nodes
from proxytop.metrics.rates import rate, to_number
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.connpool import alarm_line
from proxytop.screens.servers import fleet_states_token, note_style
from proxytop.screens.table import Column, Row

ALARM_PACE = 5.0  # seconds between readings for the header alarm while another screen is shown
NO_WSREP_PACE = 60.0  # ... of a server whose last reading had wsrep off
RATES = {"fc_sent_s": "wsrep_flow_control_sent", "fc_recv_s": "wsrep_flow_control_recv",
         "cert_s": "wsrep_local_cert_failures", "bf_s": "wsrep_local_bf_aborts"}
HOSTGROUP_KINDS = (("writer", "writer_hostgroup"), ("backup writer", "backup_writer_hostgroup"),
                   ("reader", "reader_hostgroup"), ("offline", "offline_hostgroup"))


def galera_reading(snapshot) -> Optional[GaleraReading]:
    data = snapshot.data if snapshot is not None else None
    return data if isinstance(data, GaleraReading) else None


def config_for(hostgroups: Tuple[int, ...], configs: List[Mapping]) -> Optional[Mapping]:
    """The runtime_mysql_galera_hostgroups row a node belongs to: the one naming one of its
    hostgroups, else the only row there is.

    >>> rows = [{"writer_hostgroup": "10", "backup_writer_hostgroup": "11", "reader_hostgroup": "20",
    ...          "offline_hostgroup": "30"}, {"writer_hostgroup": "40", "backup_writer_hostgroup": "41",
    ...          "reader_hostgroup": "42", "offline_hostgroup": "43"}]
    >>> config_for((30,), rows)["writer_hostgroup"], config_for((), rows), config_for((), rows[:1]) is rows[0]
    ('10', None, True)
    """
    for config in configs:
        if any(str(config.get(column)) in {str(h) for h in hostgroups} for _kind, column in HOSTGROUP_KINDS):
            return config
    return configs[0] if len(configs) == 1 else None


def verdict_text(check: Mapping, config: Optional[Mapping]) -> Tuple[str, str]:
    """(where, 'where: why') of one ProxySQL check, the hostgroup named when the node's
    Galera hostgroups are known."""
    kind, why = proxysql_verdict(check, (config or {}).get("max_transactions_behind"))
    column = dict(HOSTGROUP_KINDS).get(kind)
    where = f"{kind} hostgroup {config.get(column)}" if config is not None and column else kind
    return kind, f"{where}: {why}"


def check_time(check: Mapping) -> str:
    try:
        return time.strftime("%H:%M:%S", time.localtime(int(str(check.get("time_start_us"))) / 1e6))
    except (TypeError, ValueError, OverflowError):
        return "?"


def state_style(row: Mapping) -> Optional[str]:
    state = row.get("state")
    return None if state == SYNCED else ("danger" if state in (None, "DOWN") else "warning")


def flag_style(key: str, bad) -> Callable[[Mapping], Optional[str]]:
    return lambda row: "danger" if row.get(key) == bad else None


def paused_style(row: Mapping) -> Optional[str]:
    return "danger" if (row.get("paused_pct") or 0) > 10 else None


class GaleraScreen(Screen):
    key = "galera"
    title = "Galera"
    short_title = "Gal"
    uses_fleet = True
    default_sort = ("server", False)
    tiebreak = ("server",)
    columns = (
        Column("server", "Server", 18, "<", numeric=False, priority=0),
        Column("node", "Node", 10, "<", numeric=False, priority=4, help="wsrep_node_name"),
        Column("cluster", "Cluster", 8, "<", numeric=False, priority=6, help="wsrep_cluster_name"),
        Column("status", "Status", 8, "<", numeric=False, style=flag_style("split", "split"), priority=1,
               help="wsrep_cluster_status: Primary, or non-Primary (a partition that can't commit)"),
        Column("state", "State", 14, "<", numeric=False, style=state_style, priority=0,
               help="wsrep_local_state_comment: Synced, Donor/Desynced, Joining, Joined, Initialized"),
        Column("size", "Size", 4, priority=1, help="wsrep_cluster_size: nodes in the node's component"),
        Column("conf_id", "ConfID", 6, priority=3, help="wsrep_cluster_conf_id: +1 with every membership change"),
        Column("split", "Split", 5, "<", numeric=False, style=flag_style("split", "split"), priority=1,
               help="split: the node's view (cluster state UUID, conf_id, Primary) is not its cluster's majority's"),
        Column("paused_pct", "FCpaus%", 7, fmt=units.percent_figure, style=paused_style, priority=1,
               help="share of the interval replication was paused by flow control (Δ wsrep_flow_control_paused_ns)"),
        Column("fc_sent_s", "FCsent/s", 8, fmt=units.number, priority=2,
               help="flow-control pause messages this node sent per second (its receive queue was too long)"),
        Column("fc_recv_s", "FCrecv/s", 8, fmt=units.number, priority=3,
               help="flow-control messages received per second (every node's, this node's own included)"),
        Column("send_q", "SendQ", 6, fmt=units.number, priority=4,
               help="wsrep_local_send_queue_avg: average send queue length (since FLUSH STATUS)"),
        Column("recv_q", "RecvQ", 6, fmt=units.number, priority=2,
               help="wsrep_local_recv_queue_avg: average receive queue length (since FLUSH STATUS)"),
        Column("cert_s", "Cert/s", 6, fmt=units.number, priority=3,
               help="certification failures per second (wsrep_local_cert_failures): clients get 1213"),
        Column("bf_s", "BFab/s", 6, fmt=units.number, priority=3,
               help="local transactions aborted by replicated ones per second (wsrep_local_bf_aborts)"),
        Column("ready", "Ready", 5, "<", numeric=False, style=flag_style("ready", "OFF"), priority=1,
               help="wsrep_ready: ON when the node accepts queries"),
        Column("proxysql", "ProxySQL", 8, "<", numeric=False, priority=5,
               help="where ProxySQL's last Galera check put the node: writer, reader or offline (Enter: why)"),
        Column("note", "Note", 20, "<", numeric=False, style=note_style, priority=0, flexible=True,
               help="why a node can't be read; why ProxySQL put it where it is"),
    )

    def __init__(self, config=None, fleet: Optional[Fleet] = None):
        super().__init__(config)
        self.fleet = fleet if fleet is not None else Fleet.from_config(config)
        self._alarm: Tuple[tuple, Optional[str]] = ((), None)

    def collectors(self):
        # ProxySQL's side, on the admin connection: only when a ProxySQL is watched
        return [GaleraHostgroups(), GaleraLog()] if getattr(self.config, "proxysql", True) else []

    def active_collectors(self) -> List[str]:
        names = [DISCOVERY] if self.fleet.discover else []
        return names + [server.galera_name for server in self.fleet.listed()] + super().active_collectors()

    def rows_token(self, view: DataView):
        return fleet_states_token(self.fleet, view)

    # ----- the nodes -------------------------------------------------------------------------
    def rows(self, view: DataView) -> List[Row]:
        self.fleet.sync_discovered()
        rows = self._node_rows(view)
        checks = self._last_checks(view)
        for row in rows:
            check = checks.get(row["_id"])
            if check is not None:
                row["proxysql"], why = verdict_text(check, self._config_of(row["_id"], view))
                if row["proxysql"] != "writer" and not row.get("note"):
                    row.update(note=f"ProxySQL: {why}", _note_style="warning" if row["proxysql"] == "offline" else None)
        return rows

    def _node_rows(self, view: DataView) -> List[Row]:
        """The rows of the servers whose last reading had wsrep on, split marked."""
        rows, views = [], {}
        for server in self.fleet.listed():
            row = self._node_row(server, view)
            if row is not None:
                rows.append(row)
                if not row.get("_down"):
                    views[server.key] = (row.get("cluster"), row.pop("_uuid"), row.get("conf_id"), row.get("status"))
        split = split_nodes(views)
        for row in rows:
            row.pop("_uuid", None)
            row["split"] = "split" if row["_id"] in split else None if row.get("_down") else "no"
        return rows

    def _node_row(self, server: Server, view: DataView) -> Optional[Row]:
        previous, current = view.pair(server.galera_name)
        reading = galera_reading(current)
        if reading is None or not reading.on:
            return None
        variables, status = reading.variables, reading.status
        row: Row = {"_id": server.key, "server": server.key, "node": variables.get("wsrep_node_name"),
                    "cluster": variables.get("wsrep_cluster_name")}
        state = view.state(server.source)
        if state is not None and not state.connected and state.error:
            row.update(state="DOWN", _down=True, _note_style="danger", _spill="note",
                       note=f"down, {state.retry_text(view.now())}: {state.error}")
            return row
        before = galera_reading(previous)
        before_status = before.status if before is not None and before.on else {}
        seconds = seconds_between(previous, current)
        paused = paused_fraction(before_status.get("wsrep_flow_control_paused_ns"),
                                 status.get("wsrep_flow_control_paused_ns"), seconds)
        row.update({key: rate(before_status.get(name), status.get(name), seconds) for key, name in RATES.items()})
        row.update(status=status.get("wsrep_cluster_status"), state=status.get("wsrep_local_state_comment"),
                   size=to_number(status.get("wsrep_cluster_size")), conf_id=to_number(status.get("wsrep_cluster_conf_id")),
                   _uuid=status.get("wsrep_cluster_state_uuid"),
                   paused_pct=None if paused is None else 100.0 * paused,
                   send_q=to_number(status.get("wsrep_local_send_queue_avg")),
                   recv_q=to_number(status.get("wsrep_local_recv_queue_avg")),
                   ready=status.get("wsrep_ready"), note=view.error(server.galera_name), _note_style="warning")
        if str(variables.get("wsrep_desync") or "").upper() == "ON" and not row["note"]:
            row.update(note="wsrep_desync=ON: it sends no flow control and may fall behind", _note_style="warning")
        return row

    def notes(self, view: DataView):
        lines = self._proxysql_lines(view)
        listed = self.fleet.listed()
        readings = [galera_reading(view.latest(server.galera_name)) for server in listed]
        if any(reading is not None and reading.on for reading in readings):
            return lines
        unread = readings.count(None)
        text = (f"No Galera node: none of the {len(listed)} watched server(s) has wsrep on"
                + (f" ({unread} not read yet)." if unread else "."))
        style = "dim"
        return [((text, style),)] + lines

    # ----- ProxySQL's side ---------------------------------------------------------------------
    def _proxysql_tables(self, view: DataView) -> Tuple[Optional[Table], Optional[Table]]:
        tables = []
        for name in (GaleraHostgroups.name, GaleraLog.name):
            snapshot = view.latest(name)
            data = snapshot.data if snapshot is not None else None
            tables.append(data if isinstance(data, Table) else None)
        return tables[0], tables[1]

    def _last_checks(self, view: DataView) -> Dict[str, Mapping]:
        """ProxySQL's newest check of each node, by host:port (the log comes newest first)."""
        _configs, log = self._proxysql_tables(view)
        checks: Dict[str, Mapping] = {}
        for check in log.dicts() if log is not None else ():
            checks.setdefault(f"{check.get('hostname')}:{check.get('port')}", check)
        return checks

    def _config_of(self, key: str, view: DataView) -> Optional[Mapping]:
        configs, _log = self._proxysql_tables(view)
        server = self.fleet.servers.get(key)
        hostgroups = server.discovered.hostgroups if server is not None and server.discovered else ()
        return config_for(hostgroups, configs.dicts() if configs is not None else [])

    def _proxysql_lines(self, view: DataView):
        if not getattr(self.config, "proxysql", True):
            return []
        configs, _log = self._proxysql_tables(view)
        snapshot = view.latest(GaleraHostgroups.name)
        if snapshot is None:
            return []
        session = getattr(view.source("proxysql"), "session", None)
        if configs is None:
            admin = getattr(session, "is_admin", True)
            return [(("ProxySQL's Galera hostgroups and monitor log need an admin user." if not admin
                      else "This ProxySQL has no Galera hostgroups table.", "dim"),)]
        if not configs.rows:
            lines = [(("ProxySQL: no Galera hostgroups (runtime_mysql_galera_hostgroups is empty).", "dim"),)]
        else:
            lines = [self._hostgroups_line(config) for config in configs.dicts()]
        for key, check in sorted(self._last_checks(view).items()):
            kind, why = verdict_text(check, self._config_of(key, view))
            lines.append(((f"  {key}", "label"), (f"  checked {check_time(check)}  ", "dim"),
                          (why, "warning" if kind == "offline" else None)))
        return lines

    @staticmethod
    def _hostgroups_line(config: Mapping):
        groups = ", ".join(f"{kind} {config.get(column)}" for kind, column in HOSTGROUP_KINDS)
        active = "" if str(config.get("active", "1")) == "1" else "  (inactive)"
        return (("ProxySQL Galera hostgroups: ", "label"), (groups, "header"),
                (f"; max_writers {config.get('max_writers')}, writer_is_also_reader "
                 f"{config.get('writer_is_also_reader')}, max_transactions_behind "
                 f"{config.get('max_transactions_behind')}{active}", None))

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        key = row.get("_id")
        _configs, log = self._proxysql_tables(view)
        config = self._config_of(key, view)
        lines = []
        for check in log.dicts() if log is not None else ():
            if f"{check.get('hostname')}:{check.get('port')}" == key:
                _kind, why = verdict_text(check, config)
                lines.append(((f"{check_time(check)}  ", "label"),
                              (f"recv_queue {check.get('wsrep_local_recv_queue')}, state "
                               f"{check.get('wsrep_local_state')}, read_only {check.get('read_only')}  ", "dim"),
                              (why, None)))
        if not lines:
            lines.append((("ProxySQL's Galera monitor has no check of this node.", "dim"),))
        return Detail(title=f"ProxySQL's last Galera checks of {key}", lines=tuple(lines))

    def mysql_server(self, row: Row) -> Optional[str]:
        return row.get("_id")

    # ----- the header alarm ------------------------------------------------------------------
    def alarm_readings(self, view: DataView) -> Tuple[Tuple[str, float], ...]:
        """The readings the header alarm takes on every screen: each node every 5 s, a server
        whose last reading had wsrep off every minute."""
        plan = []
        for server in self.fleet.listed():
            reading = galera_reading(view.latest(server.galera_name))
            plan.append((server.galera_name, NO_WSREP_PACE if reading is not None and not reading.on else ALARM_PACE))
        return tuple(plan)

    def alarm(self, view: DataView) -> Optional[str]:
        """A node not Synced (or down), split, or paused by flow control above 10%."""
        listed = self.fleet.listed()
        token = tuple((view.latest(s.galera_name), getattr(view.state(s.source), "connected", None)) for s in listed)
        cached_token, cached = self._alarm
        if len(cached_token) == len(token) and all(a[0] is b[0] and a[1] == b[1] for a, b in zip(cached_token, token)):
            return cached
        texts = []
        for row in self._node_rows(view):
            if row.get("_down"):
                texts.append(f"galera {row['server']} down")
                continue
            paused = row.get("paused_pct")
            texts += node_alarms(row["server"], row.get("state"), row.get("split") == "split",
                                 row.get("status") or PRIMARY, None if paused is None else paused / 100.0)
        text = alarm_line(texts)
        self._alarm = (token, text)
        return text


SCREEN = GaleraScreen
