"""PostgreSQL's SQLSTATE codes, for the Errors screen's PostgreSQL side (stats_pgsql_errors).

A SQLSTATE is five characters; the first two are its class (PostgreSQL documentation,
Appendix A "PostgreSQL Error Codes"). Every class has a name here; the conditions a DBA
meets through a proxy (refused or lost connections, authentication, limits, shutdowns,
deadlocks, missing objects) have theirs as well. A code stays text: ``08006`` is not a number.

>>> class_name("08006"), class_name("28P01"), class_name("3D000"), class_name("ZZ999"), class_name(None)
('connection_exception', 'invalid_authorization_specification', 'invalid_catalog_name', '', '')
>>> condition_name("57P01"), condition_name("08006"), condition_name("08999"), condition_name("")
('admin_shutdown', 'connection_failure', '', '')
>>> describe("53300"), describe("08999"), describe("ZZ999")
('too_many_connections (53 insufficient_resources)', '08 connection_exception', '')
"""
from __future__ import annotations

from typing import Any, Optional

CLASSES = {
    "00": "successful_completion", "01": "warning", "02": "no_data",
    "03": "sql_statement_not_yet_complete", "08": "connection_exception", "09": "triggered_action_exception",
    "0A": "feature_not_supported", "0B": "invalid_transaction_initiation", "0F": "locator_exception",
    "0L": "invalid_grantor", "0P": "invalid_role_specification", "0Z": "diagnostics_exception",
    "20": "case_not_found", "21": "cardinality_violation", "22": "data_exception",
    "23": "integrity_constraint_violation", "24": "invalid_cursor_state", "25": "invalid_transaction_state",
    "26": "invalid_sql_statement_name", "27": "triggered_data_change_violation",
    "28": "invalid_authorization_specification", "2B": "dependent_privilege_descriptors_still_exist",
    "2D": "invalid_transaction_termination", "2F": "sql_routine_exception", "34": "invalid_cursor_name",
    "38": "external_routine_exception", "39": "external_routine_invocation_exception",
    "3B": "savepoint_exception", "3D": "invalid_catalog_name", "3F": "invalid_schema_name",
    "40": "transaction_rollback", "42": "syntax_error_or_access_rule_violation", "44": "with_check_option_violation",
    "53": "insufficient_resources", "54": "program_limit_exceeded", "55": "object_not_in_prerequisite_state",
    "57": "operator_intervention", "58": "system_error", "72": "snapshot_too_old",
    "F0": "config_file_error", "HV": "fdw_error", "P0": "plpgsql_error", "XX": "internal_error",
}

# The conditions seen through a proxy, by full code (the class alone names the rest).
CONDITIONS = {
    "08000": "connection_exception", "08001": "sqlclient_unable_to_establish_sqlconnection",
    "08003": "connection_does_not_exist", "08004": "sqlserver_rejected_establishment_of_sqlconnection",
    "08006": "connection_failure", "08P01": "protocol_violation",
    "0A000": "feature_not_supported", "22001": "string_data_right_truncation", "22003": "numeric_value_out_of_range",
    "22012": "division_by_zero", "22P02": "invalid_text_representation",
    "23502": "not_null_violation", "23503": "foreign_key_violation", "23505": "unique_violation",
    "23514": "check_violation", "25001": "active_sql_transaction", "25006": "read_only_sql_transaction",
    "25P02": "in_failed_sql_transaction", "28000": "invalid_authorization_specification",
    "28P01": "invalid_password", "3D000": "invalid_catalog_name", "3F000": "invalid_schema_name",
    "40001": "serialization_failure", "40P01": "deadlock_detected",
    "42501": "insufficient_privilege", "42601": "syntax_error", "42703": "undefined_column",
    "42883": "undefined_function", "42P01": "undefined_table", "53100": "disk_full", "53200": "out_of_memory",
    "53300": "too_many_connections", "55P03": "lock_not_available", "57014": "query_canceled",
    "57P01": "admin_shutdown", "57P02": "crash_shutdown", "57P03": "cannot_connect_now",
    "57P05": "idle_session_timeout", "58000": "system_error", "58030": "io_error", "XX000": "internal_error",
}


def _code(sqlstate: Any) -> Optional[str]:
    text = "" if sqlstate is None else str(sqlstate).strip().upper()
    return text if len(text) == 5 and text.isalnum() else None


def class_name(sqlstate: Any) -> str:
    """The name of a SQLSTATE's class (its first two characters); '' when not a known class."""
    code = _code(sqlstate)
    return CLASSES.get(code[:2], "") if code else ""


def condition_name(sqlstate: Any) -> str:
    """The condition name of a full SQLSTATE; '' when it is not one listed here."""
    code = _code(sqlstate)
    return CONDITIONS.get(code, "") if code else ""


def describe(sqlstate: Any) -> str:
    """The condition and its class ('too_many_connections (53 insufficient_resources)'), or the
    class alone when the condition is not listed; '' for a code of no known class."""
    klass = class_name(sqlstate)
    if not klass:
        return ""
    code = _code(sqlstate)
    condition = condition_name(code)
    return f"{condition} ({code[:2]} {klass})" if condition else f"{code[:2]} {klass}"
