"""ProxySQL's side of Galera, on the admin connection (admin users only): the Galera
hostgroups in force (runtime_mysql_galera_hostgroups) and the last checks of its Galera
monitor (monitor.mysql_server_galera_log), which say why ProxySQL put a node where it is.

ProxySQL rebuilds the log from its memory (the last 100 checks of each node) whenever a query
names it, and checks each node every mysql-monitor_galera_healthcheck_interval (5 s by
default): it is read at that pace at the most, and only the newest rows.
"""
from __future__ import annotations

from typing import Optional

from proxytop.collectors.proxysql import TableCollector
from proxytop.core import Table

LOG_COLUMNS = ("hostname", "port", "time_start_us", "success_time_us", "primary_partition", "read_only",
               "wsrep_local_recv_queue", "wsrep_local_state", "wsrep_desync", "wsrep_reject_queries",
               "wsrep_sst_donor_rejects_queries", "pxc_maint_mode", "error")
LOG_ROWS = 60  # the newest checks: a dozen nodes' last few


class _OptionalTable(TableCollector):
    """A table older ProxySQL versions lack: read as None there, not as an error."""

    needs_admin = True
    history = 1

    def sql(self) -> str:
        return f"select * from {self.table}"

    def collect(self, session) -> Optional[Table]:
        if not session.is_admin:
            return None  # "needs an admin user": said by the screen, no failing query sent
        try:
            return session.query(self.sql())
        except Exception as exc:
            if "no such table" in str(exc).lower():
                return None  # a ProxySQL without Galera support: nothing to show
            raise


class GaleraHostgroups(_OptionalTable):
    """runtime_mysql_galera_hostgroups: writer, backup writer, reader and offline hostgroups,
    max_writers, writer_is_also_reader, max_transactions_behind."""

    name = "proxysql.galera_hostgroups"
    table = "runtime_mysql_galera_hostgroups"
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True


class GaleraLog(_OptionalTable):
    """The newest rows of monitor.mysql_server_galera_log, newest first."""

    name = "proxysql.galera_log"
    table = "monitor.mysql_server_galera_log"
    default_interval = 5.0
    min_interval = 2.0
    own_pace = True

    def sql(self) -> str:
        return f"select {', '.join(LOG_COLUMNS)} from {self.table} order by time_start_us desc limit {LOG_ROWS}"
