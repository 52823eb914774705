"""Redo-log limits per server version, with the worked numbers of the servers' own arithmetic,
and the assessment that picks the server's own figures over computed ones."""
from __future__ import annotations

import doctest
import importlib

import pytest

from proxytop.metrics.innodb import (ASYNC, OK, SYNC, EngineReading, Flavour, Metric, RedoLimits, assess, checkpoint_state,
                             computed_limits, detect_flavour, limits_from_margin, mariadb_limits, mysql57_limits,
                             mysql80_limits, mysql8030_limits, parse_status_text, redo_capacity, server_limits,
                             time_to_full)

MiB = 1024 * 1024
GiB = 1024 * MiB

MARIADB = Flavour("MariaDB", (10, 11, 6))
MYSQL57 = Flavour("MySQL", (5, 7, 44))
PERCONA57 = Flavour("Percona Server", (5, 7, 44))
MYSQL80 = Flavour("MySQL", (8, 0, 28))
MYSQL8030 = Flavour("MySQL", (8, 0, 36))
MYSQL84 = Flavour("MySQL", (8, 4, 3))


def pct(part, whole):
    return round(100.0 * part / whole, 1)


# ----- the formulas, worked numbers ----------------------------------------------------------


def test_mysql57_two_48mib_files_is_the_75_percent_rule_of_thumb():
    # cap = 2 × (48 MiB − 2048) = 100659200; −10 % → 90593280
    # free = 4 × 16 KiB × 10 + 8 × 16 KiB = 786432; margin = 89806848 − 10 % → 80826164
    # async = margin − margin/8 = 70722894; sync = margin − margin/16 = 75774529
    limits = mysql57_limits(48 * MiB, 2)
    assert (limits.capacity, limits.async_age, limits.sync_age) == (100663296, 70722894, 75774529)
    assert (pct(limits.async_age, limits.capacity), pct(limits.sync_age, limits.capacity)) == (70.3, 75.3)
    # Percona 5.7 prints the same margin as "Max checkpoint age 80826164"
    assert limits_from_margin(80826164, limits.capacity, mariadb=False).async_age == limits.async_age


def test_mysql57_thread_concurrency_reserves_more_free_space():
    more = mysql57_limits(48 * MiB, 2, thread_concurrency=16)
    # 16 more threads × 4 pages × 16 KiB = 1 MiB less margin before the 10 % cut
    difference = mysql57_limits(48 * MiB, 2).async_age - more.async_age
    assert abs(difference - 1048576 * 0.9 * 7 / 8) <= 2  # 825754 bytes


def test_mysql80_before_8030_worked_numbers():
    # 2 × 48 MiB: real 100659200, safety 10065920, writer 90593280, limit 86063616
    small = mysql80_limits(48 * MiB, 2)
    assert (small.async_age, small.sync_age) == (75305984, 80685056)
    assert (pct(small.async_age, small.capacity), pct(small.sync_age, small.capacity)) == (74.8, 80.2)
    # 2 × 1 GiB: the safety margin is capped at 16 MiB
    big = mysql80_limits(GiB, 2)
    assert (pct(big.async_age, big.capacity), pct(big.sync_age, big.capacity)) == (82.5, 88.4)
    assert big.async_age % 512 == 0 and big.sync_age % 512 == 0


@pytest.mark.parametrize("capacity", [100 * MiB, GiB, 8 * GiB])
def test_mysql8030_about_77_5_and_83_percent(capacity):
    limits = mysql8030_limits(capacity)
    assert 77.0 <= pct(limits.async_age, capacity) <= 78.0
    assert 82.5 <= pct(limits.sync_age, capacity) <= 83.5
    assert limits.capacity == capacity


def test_mysql8030_one_gib_exactly():
    # lsn_cap = 1 GiB × 30/32 − (31 × 2048 + 128 KiB) = 1006438400; next-file margin 3355648
    # hard = 1003082752; soft = 95 % → 952928256; async = soft − soft/8; sync = soft − soft/16
    limits = mysql8030_limits(GiB)
    assert (limits.async_age, limits.sync_age) == (833812224, 893370240)


def test_mariadb_96mib_matches_the_live_server():
    limits = mariadb_limits(96 * MiB)
    assert (limits.async_age, limits.sync_age) == (70717088, 80819529)


def test_mariadb_64mib_matches_innodb_checkpoint_max_age_of_the_test_server():
    assert mariadb_limits(64 * MiB).sync_age == 53640439
    # 48 MiB, the load test's log: the live server reports Innodb_checkpoint_max_age 40050893
    assert (mariadb_limits(48 * MiB).async_age, mariadb_limits(48 * MiB).sync_age) == (35044532, 40050893)


def test_mariadb_106_uses_the_smaller_header():
    new, old = mariadb_limits(96 * MiB, version=(10, 11, 6)), mariadb_limits(96 * MiB, version=(10, 6, 18))
    assert old.sync_age > new.sync_age
    # (12288 − 2048) bytes less log, −10 % twice
    assert old.sync_age - new.sync_age in range(8290, 8300)


def test_limits_from_a_reported_margin():
    mariadb = limits_from_margin(80819529, 96 * MiB, mariadb=True)
    assert (mariadb.async_age, mariadb.sync_age) == (70717088, 80819529)
    assert (mariadb.async_origin, mariadb.sync_origin) == ("computed", "server")
    percona = limits_from_margin(80826164, 100663296, mariadb=False)
    assert (percona.async_age, percona.sync_age) == (70722894, 75774529)


# ----- states and times ---------------------------------------------------------------------


def test_checkpoint_state_boundaries():
    limits = RedoLimits(100 * MiB, 70717088, 80819529)
    assert checkpoint_state(0, limits) == OK
    assert checkpoint_state(70717088, limits) == OK
    assert checkpoint_state(70717089, limits) == ASYNC
    assert checkpoint_state(80819529, limits) == ASYNC
    assert checkpoint_state(80819530, limits) == SYNC
    assert checkpoint_state(5, RedoLimits(None, None, None)) is None


def test_time_to_full():
    # 96 MiB log, 40 MiB of age, 8 MiB/s of redo: 56 MiB left = 7 s
    assert time_to_full(96 * MiB, 40 * MiB, 8 * MiB) == 7.0
    assert time_to_full(96 * MiB, 40 * MiB, None) is None
    assert time_to_full(96 * MiB, 40 * MiB, 0.0) is None


# ----- which limits are used --------------------------------------------------------------------


def test_capacity_per_flavour():
    assert redo_capacity(MYSQL57, {"innodb_log_file_size": 48 * MiB, "innodb_log_files_in_group": 2}) == 96 * MiB
    assert redo_capacity(MYSQL84, {"innodb_redo_log_capacity": 100 * MiB, "innodb_log_file_size": 48 * MiB}) == 100 * MiB
    assert redo_capacity(MARIADB, {"innodb_log_file_size": 96 * MiB, "innodb_log_files_in_group": 1}) == 96 * MiB


def test_computed_limits_pick_the_version_formula():
    variables = {"innodb_log_file_size": str(48 * MiB), "innodb_log_files_in_group": "2",
                 "innodb_redo_log_capacity": str(100 * MiB), "innodb_page_size": "16384"}
    assert computed_limits(MYSQL57, variables).async_age == mysql57_limits(48 * MiB, 2).async_age
    assert computed_limits(MYSQL80, variables).async_age == mysql80_limits(48 * MiB, 2).async_age
    assert computed_limits(MYSQL8030, variables).async_age == mysql8030_limits(100 * MiB).async_age
    assert computed_limits(MYSQL84, variables).formula == "MySQL 8.0.30+ formula"
    assert computed_limits(MARIADB, {"innodb_log_file_size": str(96 * MiB)}).sync_age == 80819529
    assert computed_limits(None, variables) is None
    assert computed_limits(MYSQL57, {}) is None


def test_server_limits_prefer_metrics_over_the_formula():
    variables = {"innodb_log_file_size": str(48 * MiB), "innodb_log_files_in_group": "2"}
    metrics = {"log_max_modified_age_async": Metric(70000000, True), "log_max_modified_age_sync": Metric(75000000, True)}
    limits = server_limits(MYSQL80, {}, variables, metrics)
    assert (limits.async_age, limits.sync_age, limits.async_origin, limits.sync_origin) == (
        70000000, 75000000, "server", "server")
    disabled = {name: Metric(0, False) for name in metrics}
    limits = server_limits(MYSQL80, {}, variables, disabled)
    assert (limits.async_origin, limits.sync_origin) == ("computed", "computed")
    assert limits.async_age == mysql80_limits(48 * MiB, 2).async_age


def test_server_limits_mariadb_uses_innodb_checkpoint_max_age():
    status = {"Innodb_checkpoint_max_age": "53640439"}
    limits = server_limits(MARIADB, status, {"innodb_log_file_size": str(64 * MiB)}, None)
    assert (limits.async_age, limits.sync_age) == (46935385, 53640439)
    assert (limits.async_origin, limits.sync_origin) == ("computed", "server")
    # the async metric, when someone enabled it, is the server's own figure
    limits = server_limits(MARIADB, status, {"innodb_log_file_size": str(64 * MiB)},
                           {"log_max_modified_age_async": Metric(46935385, True)})
    assert limits.async_origin == "server" and limits.sync_origin == "server"


def test_server_limits_percona57_from_its_status_variable():
    limits = server_limits(PERCONA57, {"Innodb_checkpoint_max_age": "80826164"},
                           {"innodb_log_file_size": str(48 * MiB), "innodb_log_files_in_group": "2"}, None)
    assert (limits.async_age, limits.sync_age) == (70722894, 75774529)
    assert limits.capacity == 96 * MiB


# ----- the assessment ------------------------------------------------------------------------


MARIADB_VARS = {"version": "10.11.6-MariaDB-log", "version_comment": "mariadb.org binary distribution",
                "innodb_log_file_size": str(96 * MiB), "innodb_page_size": "16384", "innodb_io_capacity": "200",
                "innodb_io_capacity_max": "2000", "innodb_max_dirty_pages_pct": "90.000000",
                "innodb_max_dirty_pages_pct_lwm": "0.000000", "innodb_adaptive_flushing": "ON",
                "innodb_adaptive_flushing_lwm": "10.000000"}


def mariadb_status(lsn, checkpoint, flushed_pages, dirty, wait_free=0, log_waits=0):
    return {"Innodb_lsn_current": str(lsn), "Innodb_lsn_last_checkpoint": str(checkpoint),
            "Innodb_lsn_flushed": str(lsn), "Innodb_checkpoint_age": str(lsn - checkpoint),
            "Innodb_checkpoint_max_age": "80819529", "Innodb_buffer_pool_pages_dirty": str(dirty),
            "Innodb_buffer_pool_pages_total": "8192", "Innodb_buffer_pool_pages_flushed": str(flushed_pages),
            "Innodb_buffer_pool_wait_free": str(wait_free), "Innodb_log_waits": str(log_waits),
            "Innodb_history_list_length": "42", "Innodb_data_pending_fsyncs": "0",
            "Innodb_os_log_written": str(lsn)}


def test_assess_mariadb_async_flush_with_rates():
    before = mariadb_status(1_000_000_000, 940_000_000, 10_000, 3000)
    after = mariadb_status(1_016_000_000, 940_000_000, 12_000, 3500, wait_free=4, log_waits=0)
    a = assess(after, before, 2.0, MARIADB_VARS)
    assert a.flavour.product == "MariaDB"
    assert a.age == 76_000_000 and a.age_source == "Innodb_checkpoint_age"
    assert a.state == ASYNC  # 70717088 < 76000000 <= 80819529
    assert a.redo_rate == 8_000_000.0 and a.redo_rate_source == "Δ LSN"
    # "Sync in" is the time to MariaDB's own sync limit (Innodb_checkpoint_max_age 80,819,529),
    # not to the end of the 96 MiB log: 0.60 s, where the log itself fills in 3.08 s.
    assert a.full_in == pytest.approx((80819529 - 76_000_000) / 8_000_000)
    assert a.log_full_in == pytest.approx((96 * MiB - 76_000_000) / 8_000_000)
    assert a.dirty_pct == pytest.approx(100 * 3500 / 8192)
    assert (a.max_dirty_pct, a.max_dirty_lwm) == (90.0, 0.0)
    assert (a.flushed_rate, a.wait_free_rate, a.log_waits_rate) == (1000.0, 2.0, 0.0)
    assert (a.io_capacity, a.io_capacity_max, a.adaptive_flushing) == (200, 2000, True)
    assert a.history_list_length == 42
    assert a.needs_process == ()


def test_assess_first_sample_has_no_rates_and_a_reset_has_none_either():
    now = mariadb_status(1_000_000, 900_000, 500, 10)
    a = assess(now, None, None, MARIADB_VARS)
    assert a.redo_rate is None and a.flushed_rate is None and a.full_in is None
    restarted = mariadb_status(50_000, 40_000, 3, 1)
    b = assess(restarted, now, 1.0, MARIADB_VARS)
    assert b.redo_rate is None and b.flushed_rate is None  # counters went down: no rate


def test_assess_mysql57_needs_process_for_the_checkpoint_age():
    variables = {"version": "5.7.44-log", "version_comment": "MySQL Community Server (GPL)",
                 "innodb_log_file_size": str(48 * MiB), "innodb_log_files_in_group": "2"}
    status = {"Innodb_os_log_written": "5000000", "Innodb_buffer_pool_pages_dirty": "10",
              "Innodb_buffer_pool_pages_total": "100"}
    previous = dict(status, Innodb_os_log_written="1000000")
    denied = EngineReading(text_denied=True, metrics_denied=True)
    a = assess(status, previous, 2.0, variables, denied)
    assert a.age is None and a.state is None
    assert {"age", "pending_writes", "by_type", "history_list_length"} <= set(a.needs_process)
    # the redo rate still comes from a status variable that needs no privilege
    assert a.redo_rate == 2_000_000.0 and a.redo_rate_source == "Innodb_os_log_written"
    assert a.limits.async_age == 70722894  # the formula needs only variables


def test_assess_mysql57_from_the_status_text_compares_the_modified_age():
    with open("tests/data/innodb/mysql-5.7.txt", encoding="utf-8") as handle:
        text = parse_status_text(handle.read())
    variables = {"version": "5.7.44", "version_comment": "MySQL Community Server (GPL)",
                 "innodb_log_file_size": str(48 * MiB), "innodb_log_files_in_group": "2"}
    # a modified age just over the async limit, checkpoint age a little more
    lsn = text.pages_flushed_lsn + 70722894 + 10
    shifted = parse_status_text(open("tests/data/innodb/mysql-5.7.txt", encoding="utf-8").read().replace(
        "Log sequence number 148839402211", f"Log sequence number {lsn}"))
    a = assess({}, None, None, variables, EngineReading(text=shifted, metrics={}))
    assert a.age == lsn - text.checkpoint_lsn and a.age_source.endswith("(SHOW ENGINE INNODB STATUS)")
    assert a.modified_age == 70722894 + 10
    assert a.state == ASYNC
    assert (a.pending_lru, a.pending_flush_list, a.pending_single_page) == (0, 3, 0)
    assert a.history_list_length == 1893
    assert a.limits.async_origin == "computed"


def test_assess_redo_rate_from_status_text_lsns():
    def reading(lsn):
        return EngineReading(text=parse_status_text(f"---\nLOG\n---\nLog sequence number {lsn}\n"
                                                    "Last checkpoint at  1000\n"), metrics=None)
    variables = {"version": "8.0.28", "innodb_log_file_size": str(48 * MiB), "innodb_log_files_in_group": "2"}
    a = assess({}, {}, 1.0, variables, reading(5_001_000), reading(1_001_000), 2.0)
    assert a.redo_rate == 2_000_000.0 and a.age == 5_000_000


def test_assess_flushing_by_type_and_disabled_counters():
    variables = {"version": "8.0.36", "innodb_redo_log_capacity": str(GiB)}
    before = {"buffer_flush_adaptive_total_pages": Metric(1000, True), "buffer_flush_sync_total_pages": Metric(0, True),
              "buffer_flush_background_total_pages": Metric(10, True),
              "buffer_LRU_batch_flush_total_pages": Metric(0, False), "buffer_flush_sync_waits": Metric(0, True)}
    after = {"buffer_flush_adaptive_total_pages": Metric(1400, True), "buffer_flush_sync_total_pages": Metric(60, True),
             "buffer_flush_background_total_pages": Metric(10, True),
             "buffer_LRU_batch_flush_total_pages": Metric(0, False), "buffer_flush_sync_waits": Metric(2, True)}
    a = assess({}, {}, 2.0, variables, EngineReading(metrics=after), EngineReading(metrics=before), 2.0)
    assert dict(a.by_type) == {"adaptive": 200.0, "sync": 30.0, "background": 0.0, "LRU": None}
    assert a.by_type_disabled == ("buffer_LRU_batch_flush_total_pages",)
    assert a.sync_waits_rate == 1.0
    off = {name: Metric(0, False) for name in after}
    b = assess({}, {}, 2.0, variables, EngineReading(metrics=off), EngineReading(metrics=off), 2.0)
    assert b.by_type is None and len(b.by_type_disabled) == 4


def test_flavour_detection():
    assert detect_flavour("8.4.3", "MySQL Community Server - GPL").series == "MySQL 8.4"
    assert detect_flavour("8.0.29", "MySQL Community Server - GPL").family == "mysql80"
    assert detect_flavour("8.0.35-27", "Percona Server (GPL), Release 27").short == "Percona 8.0.30+"
    assert detect_flavour("11.4.2-MariaDB", "").series == "MariaDB 11.4"
    assert detect_flavour(None, None) is None


@pytest.mark.parametrize("module", ["proxytop.metrics.innodb", "proxytop.collectors.innodb", "proxytop.screens.innodb",
                                    "proxytop.config.mysql_options", "proxytop.collectors.innodb_fleet",
                                    "tests.mariadb"])
def test_worked_examples_in_docstrings(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0



def test_server_limits_follow_the_redo_log_and_what_the_server_reports():
    """A changed redo log (a restart with another size, a resize on MariaDB 10.11) changes the
    limits; the server's own figures win over the formula."""
    variables = {"innodb_log_file_size": str(64 * MiB), "innodb_page_size": "16384", "version": "8.0.36"}
    first = server_limits(MARIADB, {}, variables, None)
    assert server_limits(MARIADB, {}, dict(variables), None) == first  # the same configuration
    resized = server_limits(MARIADB, {}, {**variables, "innodb_log_file_size": str(96 * MiB)}, None)
    assert resized.sync_age > first.sync_age and resized.capacity == 96 * MiB
    reported = server_limits(MARIADB, {"Innodb_checkpoint_max_age": 50_000_000}, variables, None)
    assert reported.sync_age == 50_000_000 and reported.sync_origin == "server"
    metrics = {"log_max_modified_age_async": Metric(40_000_000, True)}
    assert server_limits(MYSQL80, {}, variables, metrics).async_age == 40_000_000
    assert server_limits(MYSQL80, {}, variables, {"log_max_modified_age_async": Metric(41_000_000, True)}
                         ).async_age == 41_000_000
