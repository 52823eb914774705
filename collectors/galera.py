"""A Galera (wsrep) node's state for the Galera screen, read on the connection the server's
other readings use: ``mysql.galera.<server>``.

Two narrow statements, neither needing a privilege: the wsrep variables (is wsrep on, the
node's and the cluster's names, wsrep_desync), then, only on a node where wsrep is on, the
wsrep status variables the screen shows. A server without wsrep (wsrep_on OFF, no provider, or
MySQL, which has none of these variables) costs the one statement.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict

from proxytop.collectors.innodb import MySQLSession, counter, server_label, source_name
from proxytop.core import Collector
from proxytop.polling.connection import Endpoint

WSREP_VARIABLES = ("wsrep_on", "wsrep_provider", "wsrep_node_name", "wsrep_cluster_name", "wsrep_desync")
WSREP_STATUS = (
    "wsrep_cluster_status", "wsrep_cluster_size", "wsrep_cluster_conf_id", "wsrep_cluster_state_uuid",
    "wsrep_local_state", "wsrep_local_state_comment", "wsrep_ready", "wsrep_connected",
    "wsrep_flow_control_paused_ns", "wsrep_flow_control_sent", "wsrep_flow_control_recv",
    "wsrep_local_send_queue_avg", "wsrep_local_recv_queue_avg", "wsrep_local_recv_queue",
    "wsrep_local_cert_failures", "wsrep_local_bf_aborts",
)


def _in_list(names) -> str:
    return ", ".join(f"'{name}'" for name in names)


VARIABLES_SQL = f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({_in_list(WSREP_VARIABLES)})"
STATUS_SQL = f"SHOW GLOBAL STATUS WHERE Variable_name IN ({_in_list(WSREP_STATUS)})"
SENT_STATEMENTS = (VARIABLES_SQL, STATUS_SQL)  # the Statements screen knows them as proxytop's own


@dataclass(frozen=True)
class GaleraReading:
    """One node's wsrep variables (as text) and, when wsrep is on, its wsrep status (numbers
    where they are numbers)."""

    on: bool
    variables: Dict[str, object] = field(default_factory=dict)
    status: Dict[str, object] = field(default_factory=dict)


def wsrep_on(variables: Dict[str, object]) -> bool:
    """wsrep is on and a provider is loaded (MariaDB without Galera says wsrep_provider 'none').

    >>> wsrep_on({"wsrep_on": "ON", "wsrep_provider": "/usr/lib/galera/libgalera_smm.so"})
    True
    >>> wsrep_on({"wsrep_on": "ON", "wsrep_provider": "none"}), wsrep_on({})
    (False, False)
    """
    provider = str(variables.get("wsrep_provider") or "none").strip().lower()
    return str(variables.get("wsrep_on") or "").upper() == "ON" and provider not in ("", "none")


class GaleraStatus(Collector):
    """``mysql.galera.<server>``: a :class:`GaleraReading` of one server."""

    default_interval = 1.0
    min_interval = 0.5
    history = 2  # rates and the flow-control paused fraction come from the last two readings

    def __init__(self, endpoint: Endpoint):
        self.server = server_label(endpoint)
        self.name = f"mysql.galera.{self.server}"
        self.source = source_name(endpoint)

    def collect(self, session: MySQLSession) -> GaleraReading:
        variables = {str(name).lower(): value for name, value in session.query(VARIABLES_SQL).rows}
        if not wsrep_on(variables):
            return GaleraReading(False, variables)
        status = {str(name).lower(): counter(value) for name, value in session.query(STATUS_SQL).rows}
        return GaleraReading(True, variables, status)
