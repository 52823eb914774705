"""The Status and Commands screens of one MySQL server, over real MariaDB servers the suite
starts: SHOW GLOBAL STATUS in sections with rates that move under the test's own statements,
the Com_* counters in ComCount's table, n / N shared with Sessions, --batch; and the rules that
classify the status variables, against a real MariaDB's whole list and MySQL 8's names from
its manual."""
from __future__ import annotations

import json
import re
import subprocess
import threading
import time

import pytest

from proxytop.collectors.innodb_fleet import Fleet
from proxytop.config.mysql_options import Credentials
from proxytop.core import Snapshot
from proxytop.polling.connection import Endpoint
from proxytop.screens.commands import CommandsScreen
from proxytop.screens.glostat import BYTES, COUNTER, GAUGE, SECONDS, TEXT, UNKNOWN, global_rows
from proxytop.screens.status import StatusScreen, classify
from tests.mariadb import MariaDBServer
from tests.terminal import ENTER, ESC, proxytop_command
from tests.test_servers import mysql_args


class Selects:
    """SELECTs on a connection of the test's, in a thread, until stopped."""

    def __init__(self, server):
        self.conn = server.connect()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with self.conn.cursor() as cursor:
            while not self.done.is_set():
                cursor.execute("SELECT 1")
                cursor.fetchall()
                time.sleep(0.005)

    def stop(self) -> None:
        if not self.done.is_set():
            self.done.set()
            self.thread.join(10)
            self.conn.close()


@pytest.fixture
def selects(mariadb):
    load = Selects(mariadb)
    yield load
    load.stop()


def cells(screen: str, first: str) -> list:
    """The cells of the table row whose first cell is ``first`` (the last such line: a note
    above the table may start with the same word)."""
    lines = [line for line in screen.splitlines() if line.split()[:1] == [first]]
    return lines[-1].split() if lines else []


def rate_of(screen: str, name: str) -> float:
    """A row's per-second figure (Status: the third cell; Commands: likewise), 0 when absent."""
    found = cells(screen, name)
    try:
        return float(found[2].rstrip("k")) * (1000 if found[2].endswith("k") else 1)
    except (IndexError, ValueError):
        return 0.0


def test_status_shows_threads_connected_and_a_questions_rate_that_moves(proxytop_term, mariadb, selects):
    term = proxytop_term(*mysql_args(mariadb), "--screen", "status", cols=160, rows=30)
    term.wait_until(lambda s: f"Server  {mariadb.address}" in s and "Threads" in s and "connected" in s,
                    timeout=20, what="the server and its threads")
    term.send("/")
    term.send("name:^(Threads_connected|Questions)$" + ENTER)
    # Threads_connected is a gauge (no rate); Questions a counter whose rate the SELECTs drive
    term.wait_until(lambda s: re.match(r"Threads_connected\s+[1-9]\d*\s+gauge\s+Connections",
                                       " ".join(cells(s, "Threads_connected"))) is not None
                    and rate_of(s, "Questions") >= 20, timeout=20, what="Threads_connected and Questions/s >= 20")
    selects.stop()
    term.wait_until(lambda s: cells(s, "Questions") and rate_of(s, "Questions") < 10,
                    timeout=20, what="Questions/s down once the SELECTs stop")
    term.send("q")
    assert term.wait_exit(5) == 0


def test_commands_shows_the_select_rate_and_i_shows_the_commands_never_executed(proxytop_term, mariadb, selects):
    term = proxytop_term(*mysql_args(mariadb), "--screen", "commands", cols=160, rows=40)
    screen = term.wait_until(lambda s: rate_of(s, "select") >= 20 and "never executed are hidden" in s,
                             timeout=20, what="select/s >= 20")
    assert "Latency per statement is in performance_schema" in screen and cells(screen, "xa_start") == []
    assert "Avg" not in screen and "p99" not in screen  # no latency columns: the status has no time
    term.send("/")
    term.send("command:^select$" + ENTER)  # the cursor on it
    term.send(ENTER)
    term.wait_until(lambda s: f"Com_select of {mariadb.address}" in s and "of all commands per second" in s,
                    what="the command's detail")
    term.send(ESC, pause=0.4)
    term.wait_until(lambda s: "Esc back" not in s and "Count/s" in s, what="the table again")
    term.send("\\")  # the filter cleared, then the xa_ commands alone
    term.send("/")
    term.send("xa_" + ENTER)
    term.wait_until(lambda s: re.search(r"\b0/\d+ rows", s) is not None, what="no xa_ command shown")
    term.send("i")
    term.wait_until(lambda s: cells(s, "xa_start")[:2] == ["xa_start", "0"], what="the commands never executed")
    term.send("i")
    term.wait_until(lambda s: cells(s, "xa_start") == [] and "hiding commands never executed" in s,
                    what="hidden again")


def test_n_on_status_changes_the_server_and_commands_and_sessions_show_it(proxytop_term, mariadb):
    second = MariaDBServer(name="status-2").start()
    try:
        term = proxytop_term(*mysql_args(mariadb, second), "--screen", "status", cols=160, rows=30)
        term.wait_until(lambda s: f"Server  {mariadb.address}" in s and "n/N: next/previous server" in s
                        and "Threads" in s, timeout=20, what="the first server's status")
        term.send("n")
        term.wait_until(lambda s: f"Server  {second.address}" in s and "Threads" in s, timeout=20,
                        what="the second server's status")
        term.go("Commands")
        term.wait_until(lambda s: "Count/s" in s and f"Server  {second.address}" in s and "all commands" in s,
                        timeout=20, what="the second server's commands")
        term.go("Sessions")
        term.wait_until(lambda s: f"Server  {second.address}" in s and "Sessions  " in s, timeout=20,
                        what="the second server's sessions")
        term.send("N")
        term.wait_for(f"Server  {mariadb.address}")
        term.go("Status")  # again: the server Sessions stepped to
        term.wait_until(lambda s: f"Server  {mariadb.address}" in s and "Variable" in s, what="the first again")
        term.send("?")
        term.wait_until(lambda s: "the status of the next MySQL server" in s, what="n in the help")
    finally:
        second.stop()


def batch(server, screen: str, form: str) -> str:
    result = subprocess.run(list(proxytop_command()) + mysql_args(server)
                            + ["--batch", "--count", "2", "-d", "1", "--screen", screen, "--format", form],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_batch_of_the_status_screen_as_json_and_a_table(mariadb):
    reports = [json.loads(line) for line in batch(mariadb, "status", "json").splitlines()]
    assert [r["screen"] for r in reports] == ["status", "status"]
    rows = {row["name"]: row for row in reports[-1]["rows"]}
    assert rows["Threads_connected"]["type"] == GAUGE and rows["Threads_connected"]["value"] >= 1
    assert rows["Questions"]["type"] == COUNTER and rows["Questions"]["rate"] > 0  # proxytop's own, at least
    assert rows["Uptime"]["section"] == "Other" and rows["Innodb_buffer_pool_pages_free"]["section"] == "InnoDB"
    assert f"Server  {mariadb.address}" in reports[-1]["notes"]
    text = batch(mariadb, "status", "table")
    assert "Status  sort Variable" in text and "\u2500\u2500 InnoDB" in text and "\u2500\u2500 Galera" in text
    assert re.search(r"^Uptime\s+(\d+s|\d+m\d\ds|\d+h\d\dm)\s+gauge", text, re.M)


def test_batch_of_the_commands_screen_as_json_and_a_table(mariadb):
    reports = [json.loads(line) for line in batch(mariadb, "commands", "json").splitlines()]
    assert reports[-1]["columns"] == ["command", "total", "rate", "share"]
    rows = {row["command"]: row for row in reports[-1]["rows"]}
    # proxytop's own SHOW GLOBAL STATUS, once a reading: about one a second, all of the commands
    assert rows["show_status"]["total"] >= 2 and rows["show_status"]["rate"] > 0
    assert all(row["total"] for row in rows.values())  # those never executed are hidden
    text = batch(mariadb, "commands", "table")
    assert re.search(r"^Command\s+Total\s+Count/s\S*\s+Share", text, re.M) and "never executed are hidden" in text


# ----- the rules ---------------------------------------------------------------------------------

# What a real MariaDB 10.11 sends that is not a number: shown as text, by its rule.
MARIADB_TEXT = {
    "Binlog_snapshot_file", "Compression", "Innodb_buffer_pool_dump_status", "Innodb_buffer_pool_load_incomplete",
    "Innodb_buffer_pool_load_status", "Innodb_buffer_pool_resize_status", "Innodb_have_lz4", "Innodb_have_lzo",
    "Innodb_have_lzma", "Innodb_have_bzip2", "Innodb_have_snappy", "Innodb_have_punch_hole", "Max_memory_used",
    "Rpl_semi_sync_master_status", "Rpl_semi_sync_slave_status", "Rpl_status", "Slave_running", "Ssl_cipher",
    "Ssl_cipher_list", "Ssl_server_not_after", "Ssl_server_not_before", "Ssl_session_cache_mode", "Ssl_version",
    "wsrep_cluster_capabilities", "wsrep_cluster_state_uuid", "wsrep_cluster_status", "wsrep_connected",
    "wsrep_provider_capabilities", "wsrep_provider_name", "wsrep_provider_vendor", "wsrep_provider_version",
    "wsrep_ready",
}


def test_every_variable_of_a_real_mariadb_has_a_rule(mariadb):
    def reading(at: float) -> Snapshot:
        return Snapshot("s", {str(n): v for n, v in mariadb.query("SHOW GLOBAL STATUS")}, taken_at=at, duration=0.0)

    first = reading(0.0)
    mariadb.query("SELECT 1")
    rows = {row["name"]: row for row in global_rows(first, reading(1.0), classify=classify)}
    assert len(rows) > 400
    assert [name for name in rows if classify(name) is UNKNOWN] == []
    assert {name for name, row in rows.items() if row["type"] == TEXT} <= MARIADB_TEXT
    assert rows["Questions"]["rate"] >= 1 and rows["Threads_connected"]["rate"] is None
    assert (rows["Bytes_sent"]["type"], rows["Bytes_sent"]["_unit"]) == (COUNTER, BYTES)
    assert (rows["Uptime"]["type"], rows["Uptime"]["_unit"]) == (GAUGE, SECONDS)
    assert rows["Innodb_buffer_pool_pages_free"]["type"] == GAUGE


# MySQL 8.0 / 8.4's own status variables (MySQL manual, "Server Status Variable Reference",
# "Server Status Variables", "InnoDB ... Status Variables", "X Plugin Status Variables"): no
# MySQL runs here. Com_* are left out but a few; plugins' own (audit log, firewall, group
# replication, NDB) too.
MYSQL8 = """
Aborted_clients Aborted_connects Acl_cache_items_count Binlog_cache_disk_use Binlog_cache_use
Binlog_stmt_cache_disk_use Binlog_stmt_cache_use Bytes_received Bytes_sent Caching_sha2_password_rsa_public_key
Com_select Com_stmt_execute Com_change_replication_source Com_show_replica_status Compression_algorithm
Compression_level Connection_errors_accept Connection_errors_internal Connection_errors_max_connections
Connection_errors_peer_address Connection_errors_select Connection_errors_tcpwrap Connections Count_hit_tmp_table_size
Created_tmp_disk_tables Created_tmp_files Created_tmp_tables Current_tls_ca Current_tls_capath Current_tls_cert
Current_tls_cipher Current_tls_ciphersuites Current_tls_crl Current_tls_crlpath Current_tls_key Current_tls_version
Delayed_errors Delayed_insert_threads Delayed_writes Deprecated_use_i_s_processlist_count
Deprecated_use_i_s_processlist_last_timestamp Error_log_buffered_bytes Error_log_buffered_events
Error_log_expired_events Error_log_latest_write Flush_commands Global_connection_memory
Handler_commit Handler_delete Handler_discover Handler_external_lock Handler_mrr_init Handler_prepare
Handler_read_first Handler_read_key Handler_read_last Handler_read_next Handler_read_prev Handler_read_rnd
Handler_read_rnd_next Handler_rollback Handler_savepoint Handler_savepoint_rollback Handler_update Handler_write
Innodb_buffer_pool_dump_status Innodb_buffer_pool_load_status Innodb_buffer_pool_resize_status
Innodb_buffer_pool_resize_status_code Innodb_buffer_pool_resize_status_progress Innodb_buffer_pool_bytes_data
Innodb_buffer_pool_bytes_dirty Innodb_buffer_pool_pages_data Innodb_buffer_pool_pages_dirty
Innodb_buffer_pool_pages_flushed Innodb_buffer_pool_pages_free Innodb_buffer_pool_pages_latched
Innodb_buffer_pool_pages_misc Innodb_buffer_pool_pages_total Innodb_buffer_pool_read_ahead
Innodb_buffer_pool_read_ahead_evicted Innodb_buffer_pool_read_ahead_rnd Innodb_buffer_pool_read_requests
Innodb_buffer_pool_reads Innodb_buffer_pool_wait_free Innodb_buffer_pool_write_requests Innodb_data_fsyncs
Innodb_data_pending_fsyncs Innodb_data_pending_reads Innodb_data_pending_writes Innodb_data_read Innodb_data_reads
Innodb_data_writes Innodb_data_written Innodb_dblwr_pages_written Innodb_dblwr_writes Innodb_have_atomic_builtins
Innodb_log_waits Innodb_log_write_requests Innodb_log_writes Innodb_os_log_fsyncs Innodb_os_log_pending_fsyncs
Innodb_os_log_pending_writes Innodb_os_log_written Innodb_page_size Innodb_pages_created Innodb_pages_read
Innodb_pages_written Innodb_redo_log_enabled Innodb_redo_log_capacity_resized Innodb_redo_log_checkpoint_lsn
Innodb_redo_log_current_lsn Innodb_redo_log_flushed_to_disk_lsn Innodb_redo_log_logical_size
Innodb_redo_log_physical_size Innodb_redo_log_read_only Innodb_redo_log_resize_status Innodb_redo_log_uuid
Innodb_row_lock_current_waits Innodb_row_lock_time Innodb_row_lock_time_avg Innodb_row_lock_time_max
Innodb_row_lock_waits Innodb_rows_deleted Innodb_rows_inserted Innodb_rows_read Innodb_rows_updated
Innodb_system_rows_deleted Innodb_system_rows_inserted Innodb_system_rows_read Innodb_system_rows_updated
Innodb_sampled_pages_read Innodb_sampled_pages_skipped Innodb_num_open_files Innodb_truncated_status_writes
Innodb_undo_tablespaces_total Innodb_undo_tablespaces_implicit Innodb_undo_tablespaces_explicit
Innodb_undo_tablespaces_active Key_blocks_not_flushed Key_blocks_unused Key_blocks_used Key_read_requests Key_reads
Key_write_requests Key_writes Last_query_cost Last_query_partial_plans Locked_connects Max_execution_time_exceeded
Max_execution_time_set Max_execution_time_set_failed Max_used_connections Max_used_connections_time
Mysqlx_aborted_clients Mysqlx_address Mysqlx_bytes_received Mysqlx_bytes_sent Mysqlx_connection_accept_errors
Mysqlx_connections_accepted Mysqlx_connections_active Mysqlx_crud_find Mysqlx_port Mysqlx_sessions
Mysqlx_socket Mysqlx_ssl_active Mysqlx_ssl_cipher Mysqlx_ssl_version Mysqlx_stmt_execute_sql Mysqlx_worker_threads
Mysqlx_worker_threads_active Not_flushed_delayed_rows Ongoing_anonymous_gtid_violating_transaction_count
Ongoing_anonymous_transaction_count Ongoing_automatic_gtid_violating_transaction_count Open_files Open_streams
Open_table_definitions Open_tables Opened_files Opened_table_definitions Opened_tables
Performance_schema_accounts_lost Performance_schema_digest_lost Performance_schema_session_connect_attrs_longest_seen
Prepared_stmt_count Queries Questions Replica_open_temp_tables Replica_rows_last_search_algorithm_used
Resource_group_supported Rpl_semi_sync_source_clients Rpl_semi_sync_source_status Rpl_semi_sync_source_tx_avg_wait_time
Rpl_semi_sync_replica_status Rsa_public_key Secondary_engine_execution_count Select_full_join Select_full_range_join
Select_range Select_range_check Select_scan Slave_open_temp_tables Slave_rows_last_search_algorithm_used
Slow_launch_threads Slow_queries Sort_merge_passes Sort_range Sort_rows Sort_scan Ssl_accept_renegotiates Ssl_accepts
Ssl_callback_cache_hits Ssl_cipher Ssl_cipher_list Ssl_client_connects Ssl_connect_renegotiates Ssl_ctx_verify_depth
Ssl_ctx_verify_mode Ssl_default_timeout Ssl_finished_accepts Ssl_finished_connects Ssl_server_not_after
Ssl_server_not_before Ssl_session_cache_hits Ssl_session_cache_misses Ssl_session_cache_mode
Ssl_session_cache_overflows Ssl_session_cache_size Ssl_session_cache_timeouts Ssl_sessions_reused
Ssl_used_session_cache_entries Ssl_verify_depth Ssl_verify_mode Ssl_version Table_locks_immediate Table_locks_waited
Table_open_cache_hits Table_open_cache_misses Table_open_cache_overflows Tc_log_max_pages_used Tc_log_page_size
Tc_log_page_waits Threads_cached Threads_connected Threads_created Threads_running Tls_library_version
Tls_sni_server_name Uptime Uptime_since_flush_status
""".split()


def test_mysql_8s_status_variables_have_rules():
    assert [name for name in MYSQL8 if classify(name) is UNKNOWN] == []
    kinds = {name: (classify(name).section, classify(name).kind, classify(name).unit) for name in MYSQL8}
    assert kinds["Innodb_redo_log_current_lsn"] == ("InnoDB", COUNTER, BYTES)  # redo bytes per second
    assert kinds["Replica_open_temp_tables"] == ("Replication", GAUGE, "count")
    assert kinds["Current_tls_version"][1] == TEXT and kinds["Mysqlx_sessions"][1] == GAUGE
    assert kinds["Innodb_row_lock_time"] == ("InnoDB", COUNTER, "ms")
    assert kinds["Com_change_replication_source"][:2] == ("Commands", COUNTER)
    # case does not matter: information_schema.GLOBAL_STATUS names them in capitals
    assert classify("INNODB_BUFFER_POOL_PAGES_FREE") is classify("Innodb_buffer_pool_pages_free")


def test_only_the_server_shown_is_read_and_both_screens_share_its_reading():
    fleet = Fleet(Credentials(user="u"), 3.0, discover=False)
    for host in ("db1", "db2"):
        fleet.add_explicit(Endpoint(host=host, port=3306))
    status, commands = StatusScreen(fleet=fleet), CommandsScreen(fleet=fleet)
    assert status.active_collectors() == commands.active_collectors() == ["mysql.global_status.db1:3306"]
    commands.on_show({"servers": "db2:3306"})  # the Servers screen's cursor, or n on another one-server screen
    assert commands.active_collectors() == ["mysql.global_status.db2:3306"]
    assert "mysql.global_status.db2:3306" in {c.name for c in fleet.collectors()}  # registered for every server
