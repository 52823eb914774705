"""Status: one MySQL / MariaDB server's SHOW GLOBAL STATUS, GloStat's table with the server as
its subject.

Every variable in one table, in sections a DBA knows, with a per-second rate for counters and
the plain value for gauges (sizes in bytes, Uptime as a duration). A server's counters move with
every statement, so a rate is the difference of the last two readings over the time between
them. A variable these rules do not know (a plugin's, a newer server's) is shown as text,
without a rate: nothing is guessed.

The server is the one the Servers screen's cursor is on; n / N step through the fleet
(screens.one_server). Its reading, ``mysql.global_status.<server>``, is read only for that
server and only while this screen or Commands (the same reading's Com_* counters) is shown.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List, Mapping, Optional, Sequence

from proxytop.collectors.innodb_fleet import Server
from proxytop.metrics import units
from proxytop.metrics.rates import rate, to_number
from proxytop.screens.base import DataView, Screen, seconds_between
from proxytop.screens.glostat import (BYTES, COUNT, COUNTER, GAUGE, MICROSECONDS, MILLISECONDS, NANOSECONDS, SECONDS,
                                      TEXT, GloStatScreen, Rule, first_match, global_rows, in_sections, rule)
from proxytop.screens.one_server import OneServer, server_bindings
from proxytop.screens.servers import hit_ratio
from proxytop.screens.table import Row, TableState

SECTIONS = ("Connections", "Commands", "Selects and sorts", "InnoDB", "Replication", "Galera", "Tables and temp",
            "Handler", "Traffic", "Cache", "Other")

CONNECTIONS, COMMANDS, SELECTS, INNODB, REPLICATION, GALERA, TABLES, HANDLER, TRAFFIC, CACHE, OTHER = SECTIONS


def _r(regex: str, section: str, kind: str, unit: str = COUNT) -> Rule:
    # Status variable names are matched whatever their case: SHOW STATUS and
    # information_schema spell them differently, MariaDB and MySQL too (Innodb_..._lru_flushed).
    return rule(regex, section, kind, unit, re.IGNORECASE)


# What proxytop knows of SHOW GLOBAL STATUS: MariaDB 10.11 as it runs here, MySQL 8.0 / 8.4 from
# its manual ("Server Status Variables", "InnoDB ... Status Variables", the X Plugin's). The
# first matching rule wins.
RULES = (
    # --- text (not numbers) ---------------------------------------------------------------------
    _r(r"Ssl_(cipher|cipher_list|version|server_not_after|server_not_before|session_cache_mode)"
       r"|Current_tls_\w+|Tls_library_version|Tls_sni_server_name|Compression(_algorithm)?"
       r"|Caching_sha2_password_rsa_public_key|Rsa_public_key", CONNECTIONS, TEXT),
    _r(r"Innodb_buffer_pool_(dump|load|resize)_status|Innodb_buffer_pool_load_incomplete|Innodb_have_\w+"
       r"|Innodb_redo_log_(enabled|read_only|resize_status|uuid)", INNODB, TEXT),
    _r(r"Binlog_snapshot_file|Rpl_status|Rpl_semi_sync_(master|source|slave|replica)_status|Slave_running"
       r"|(Slave|Replica)_rows_last_search_algorithm_used", REPLICATION, TEXT),
    _r(r"wsrep_(cluster_status|local_state_comment|local_state_uuid|cluster_state_uuid|incoming_addresses"
       r"|provider_\w+|cluster_capabilities|ready|connected|flow_control_active|flow_control_requested"
       r"|gcomm_uuid|evs_state|evs_delayed|evs_evict_list|evs_repl_latency|cluster_weight_details|local_status)",
       GALERA, TEXT),
    _r(r"Mysqlx_(address|socket|compression_algorithm|ssl_(active|cipher|cipher_list|server_not_after"
       r"|server_not_before|version))", OTHER, TEXT),
    _r(r"Resource_group_supported|Telemetry_\w+_supported|Max_used_connections_time", OTHER, TEXT),
    # --- connections ------------------------------------------------------------------------------
    _r(r"Threads_(connected|running|cached)|Max_used_connections|Threadpool_(idle_)?threads"
       r"|Global_connection_memory", CONNECTIONS, GAUGE),
    _r(r"Aborted_(clients|connects|connects_preauth)|Access_denied_errors|Connections|Connection_errors_\w+"
       r"|Threads_created|Slow_launch_threads|Locked_connects", CONNECTIONS, COUNTER),
    _r(r"Ssl_(ctx_verify_depth|ctx_verify_mode|default_timeout|verify_depth|verify_mode|session_cache_size"
       r"|used_session_cache_entries)|Compression_level", CONNECTIONS, GAUGE),
    _r(r"Ssl_\w+", CONNECTIONS, COUNTER),  # the rest are counts: accepts, connects, cache hits...
    # --- commands ---------------------------------------------------------------------------------
    _r(r"Prepared_stmt_count|Last_query_cost|Last_query_partial_plans", COMMANDS, GAUGE),
    _r(r"Busy_time|Cpu_time|Query_time", COMMANDS, COUNTER, SECONDS),  # MariaDB's, with userstat
    _r(r"Com_\w+|Questions|Queries|Slow_queries|Empty_queries|Max_statement_time_exceeded"
       r"|Max_execution_time_(exceeded|set|set_failed)|Executed_events|Executed_triggers|Rows_(read|sent|tmp_read)"
       r"|Resultset_metadata_skipped|Optimizer_join_prefixes_check_calls|Secondary_engine_execution_count"
       r"|Flush_commands", COMMANDS, COUNTER),
    _r(r"(Select|Sort)_\w+|(Delete|Update)_scan", SELECTS, COUNTER),
    # --- InnoDB -----------------------------------------------------------------------------------
    _r(r"Innodb_buffer_pool_bytes_(data|dirty)|Innodb_page_size|Innodb_mem_(adaptive_hash|dictionary)"
       r"|Innodb_checkpoint_(max_)?age|Innodb_redo_log_(logical_size|physical_size|capacity_resized)",
       INNODB, GAUGE, BYTES),
    _r(r"Innodb_buffer_pool_pages_(data|dirty|free|misc|old|total|latched)|Innodb_data_pending_\w+"
       r"|Innodb_os_log_pending_\w+|Innodb_history_list_length|Innodb_row_lock_current_waits|Innodb_num_open_files"
       r"|Innodb_available_undo_logs|Innodb_ibuf_(free_list|segment_size|size)|Innodb_onlineddl_\w+"
       r"|Innodb_encryption_rotation_estimated_iops|Innodb_undo_tablespaces_\w+|Innodb_buffer_pool_resize_status_\w+"
       r"|Innodb_max_trx_id", INNODB, GAUGE),
    _r(r"Innodb_row_lock_time_(avg|max)", INNODB, GAUGE, MILLISECONDS),
    _r(r"Innodb_row_lock_time", INNODB, COUNTER, MILLISECONDS),
    _r(r"Innodb_data_(read|written)|Innodb_os_log_written|Innodb_page_compression_saved"
       r"|Innodb_lsn_(current|flushed|last_checkpoint)|Innodb_redo_log_(checkpoint|current|flushed_to_disk)_lsn",
       INNODB, COUNTER, BYTES),  # an LSN grows by the bytes of redo written: its rate is redo per second
    _r(r"Innodb_buffer_pool_(read_requests|reads|read_ahead\w*|wait_free|write_requests|pages_flushed"
       r"|pages_lru_flushed|pages_lru_freed|pages_made_young|pages_made_not_young|pages_split)"
       r"|Innodb_data_(reads|writes|fsyncs)|Innodb_dblwr_\w+|Innodb_log_(waits|write_requests|writes)"
       r"|Innodb_os_log_fsyncs|Innodb_pages_(created|read|written)|Innodb_row_lock_waits|Innodb_deadlocks"
       r"|Innodb_(system_)?rows_(read|inserted|updated|deleted)|Innodb_truncated_status_writes"
       r"|Innodb_adaptive_hash_\w+|Innodb_ahi_drop_lookups|Innodb_ibuf_(merged|discarded)_\w+|Innodb_ibuf_merges"
       r"|Innodb_defragment_\w+|Innodb_instant_alter_column|Innodb_encryption_\w+|Innodb_num_pages_\w+"
       r"|Innodb_num_page_compressed_trim_op|Innodb_bulk_operations|Innodb_undo_truncations"
       r"|Innodb_master_thread_(active|idle)_loops|Innodb_background_log_sync|Innodb_sampled_pages_(read|skipped)"
       r"|Innodb_secondary_index_triggered_cluster_reads(_avoided)?", INNODB, COUNTER),
    # --- replication ------------------------------------------------------------------------------
    _r(r"Binlog_bytes_written", REPLICATION, COUNTER, BYTES),
    _r(r"Binlog_snapshot_position|Slaves_connected|Slaves_running|(Slave|Replica)_open_temp_tables"
       r"|Rpl_semi_sync_(master|source)_(clients|wait_sessions)|Tc_log_max_pages_used"
       r"|Ongoing_\w+_count", REPLICATION, GAUGE),
    _r(r"Slave_heartbeat_period", REPLICATION, GAUGE, SECONDS),
    _r(r"Tc_log_page_size", REPLICATION, GAUGE, BYTES),
    _r(r"Rpl_semi_sync_(master|source)_(net|tx)_avg_wait_time", REPLICATION, GAUGE, MICROSECONDS),
    _r(r"Rpl_semi_sync_(master|source)_(net|tx)_wait_time|Master_gtid_wait_time", REPLICATION, COUNTER,
       MICROSECONDS),
    _r(r"Binlog_\w+|Rpl_semi_sync_\w+|Rpl_transactions_multi_engine|Slave_(connections|received_heartbeats"
       r"|retried_transactions|skipped_errors)|Master_gtid_wait_(count|timeouts)|Transactions_gtid_foreign_engine"
       r"|Transactions_multi_engine|Tc_log_page_waits", REPLICATION, COUNTER),
    # --- Galera -----------------------------------------------------------------------------------
    _r(r"wsrep_(replicated|received|repl_keys|repl_data|repl_other)_bytes", GALERA, COUNTER, BYTES),
    _r(r"wsrep_gcache_pool_size", GALERA, GAUGE, BYTES),
    _r(r"wsrep_flow_control_paused_ns", GALERA, COUNTER, NANOSECONDS),
    _r(r"wsrep_(flow_control_(sent|recv)|local_cert_failures|local_bf_aborts|local_commits|local_replays"
       r"|replicated|received|repl_keys|causal_reads|last_committed)", GALERA, COUNTER),
    _r(r"wsrep|wsrep_(cluster_conf_id|cluster_size|cluster_weight|local_index|local_state|desync_count"
       r"|(applier|rollbacker)_thread_count|thread_count|local_(recv|send)_queue(_avg|_max|_min)?"
       r"|flow_control_paused|cert_deps_distance|(apply|commit)_(oooe|oool|window)|cert_index_size"
       r"|cert_bucket_count|cert_interval|local_cached_downto|open_connections|open_transactions"
       r"|protocol_version|repl_data_bytes_avg)", GALERA, GAUGE),
    # --- tables and temporary tables --------------------------------------------------------------
    _r(r"Open_(tables|files|streams|table_definitions)|Table_open_cache_active_instances", TABLES, GAUGE),
    _r(r"Opened_(tables|files|table_definitions|views)|Table_open_cache_(hits|misses|overflows)"
       r"|Table_locks_(immediate|waited)|Created_tmp_(disk_tables|files|tables)|Count_hit_tmp_table_size",
       TABLES, COUNTER),
    # --- handler ----------------------------------------------------------------------------------
    _r(r"Handler_\w+", HANDLER, COUNTER),
    # --- traffic ----------------------------------------------------------------------------------
    _r(r"Bytes_(received|sent)|Mysqlx_bytes_\w+", TRAFFIC, COUNTER, BYTES),
    # --- caches: query cache, MyISAM key cache, Aria page cache, subquery cache -------------------
    _r(r"Qcache_free_memory", CACHE, GAUGE, BYTES),
    _r(r"Qcache_(free_blocks|queries_in_cache|total_blocks)|Key_blocks_(not_flushed|unused|used|warm)"
       r"|Aria_pagecache_blocks_(not_flushed|unused|used)", CACHE, GAUGE),
    _r(r"Qcache_(hits|inserts|lowmem_prunes|not_cached)|Key_(read_requests|reads|write_requests|writes)"
       r"|Aria_pagecache_(read_requests|reads|write_requests|writes)|Subquery_cache_(hit|miss)", CACHE, COUNTER),
    # --- other ------------------------------------------------------------------------------------
    _r(r"Uptime(_since_flush_status)?", OTHER, GAUGE, SECONDS),
    _r(r"Memory_used(_initial)?|Max_memory_used|Stack_usage|Error_log_buffered_bytes", OTHER, GAUGE, BYTES),
    _r(r"Delayed_insert_threads|Not_flushed_delayed_rows|Acl_\w+|Mysqlx_(port|connections_active|sessions"
       r"|worker_threads(_active)?|compression_level|ssl_(ctx_)?verify_(depth|mode))|Error_log_buffered_events"
       r"|Error_log_latest_write|Performance_schema_session_connect_attrs_longest_seen"
       r"|Deprecated_use_i_s_processlist_last_timestamp", OTHER, GAUGE),
    _r(r"Delayed_(errors|writes)|Feature_\w+|Performance_schema_\w+_lost|Column_(compressions|decompressions)"
       r"|Syncs|Opened_plugin_libraries|Aria_transaction_log_syncs|Error_log_expired_events"
       r"|Deprecated_use_i_s_processlist_count|Mysqlx_\w+", OTHER, COUNTER),
)


@lru_cache(maxsize=4096)  # the same few hundred names every second
def classify(name: str) -> Rule:
    """Section, kind (counter / gauge / text) and unit of a MySQL / MariaDB status variable.

    >>> [(r.section, r.kind, r.unit) for r in map(classify, ("Com_select", "Threads_connected", "Uptime"))]
    [('Commands', 'counter', 'count'), ('Connections', 'gauge', 'count'), ('Other', 'gauge', 'seconds')]
    >>> [(r.section, r.kind, r.unit) for r in map(classify, ("Innodb_data_written", "Frobs_new"))]
    [('InnoDB', 'counter', 'bytes'), ('Other', 'text', 'count')]
    """
    return first_match(RULES, name)


def numbers(status: Mapping[str, object], *names: str) -> Dict[str, Optional[float]]:
    return {name: to_number(status.get(name)) for name in names}


def threads_text(status: Mapping[str, object]) -> Optional[str]:
    """Threads running and connected, and the most connected at once since the server started.

    >>> threads_text({"Threads_running": "3", "Threads_connected": "40", "Max_used_connections": "151"})
    '3 running, 40 connected (151 at most since start)'
    """
    found = numbers(status, "Threads_running", "Threads_connected", "Max_used_connections")
    if found["Threads_connected"] is None:
        return None
    text = f"{units.number(found['Threads_running'])} running, {units.number(found['Threads_connected'])} connected"
    if found["Max_used_connections"] is not None:
        text += f" ({units.number(found['Max_used_connections'])} at most since start)"
    return text


def buffer_pool_text(before: Mapping[str, object], status: Mapping[str, object]) -> Optional[str]:
    """The buffer pool's fill and its hit ratio over the interval.

    >>> buffer_pool_text({"Innodb_buffer_pool_read_requests": "1000", "Innodb_buffer_pool_reads": "10"},
    ...                  {"Innodb_buffer_pool_read_requests": "2000", "Innodb_buffer_pool_reads": "20",
    ...                   "Innodb_buffer_pool_pages_free": "250", "Innodb_buffer_pool_pages_total": "1000"})
    '75.0% used, hit ratio 99.0% over the interval'
    >>> buffer_pool_text({}, {"Innodb_buffer_pool_pages_free": "250", "Innodb_buffer_pool_pages_total": "1000"})
    '75.0% used'
    """
    names = ("Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads")
    ratio = hit_ratio(numbers(before, *names), numbers(status, *names))
    pages = numbers(status, "Innodb_buffer_pool_pages_free", "Innodb_buffer_pool_pages_total")
    free, total = pages["Innodb_buffer_pool_pages_free"], pages["Innodb_buffer_pool_pages_total"]
    parts = []
    if free is not None and total:
        parts.append(f"{units.percent(100.0 * (total - free) / total)} used")
    if ratio is not None:
        parts.append(f"hit ratio {units.percent(ratio)} over the interval")
    elif before:  # two readings, but no page requested between them (or the counters were reset)
        parts.append("no hit ratio: no page requested over the interval")
    return ", ".join(parts) or None


class StatusScreen(OneServer, Screen):
    key = "status"
    title = "Status"
    short_title = "Stat"
    shows = "status"
    default_sort = ("name", False)
    columns = GloStatScreen.columns
    bindings = server_bindings("the status")

    def reading_name(self, server: Server) -> str:
        return server.global_status_name

    def rows(self, view: DataView) -> List[Row]:
        previous, current = self.readings(view)
        return global_rows(previous, current, classify=classify)

    def arrange(self, rows: Sequence[Row], state: TableState) -> List[Row]:
        return in_sections(rows, self.columns, state, SECTIONS)

    def notes(self, view: DataView):
        previous, current = self.readings(view)
        status = current.data if current is not None and current.data else None
        lines = self.server_lines(view, status)
        if status is None:
            return lines
        before = previous.data if previous is not None and previous.data else {}
        seconds = seconds_between(previous, current)
        lines.append(((f"Per second: over the last {units.duration(seconds)}" if seconds
                       else "Per second: from the second reading", "dim"),))
        threads = threads_text(status)
        if threads:
            lines.append((("Threads       ", "label"), (threads, None)))
        questions = rate(before.get("Questions"), status.get("Questions"), seconds)
        if questions is not None:
            lines.append((("Questions     ", "label"), (f"{units.number(questions)}/s", None)))
        pool = buffer_pool_text(before, status)
        if pool:
            lines.append((("Buffer pool   ", "label"), (pool, None)))
        return lines


SCREEN = StatusScreen
