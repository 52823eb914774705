"""Per-second rates from cumulative counters.

Every rate in proxytop comes from :func:`rate` so that counter resets (a ProxySQL restart,
somebody reading a ``*_reset`` table, a query-rule reload, a 32-bit wrap) are handled in one
place: a negative delta means the counter started again, and that interval has no rate.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional


def to_number(value: Any) -> Optional[float]:
    """ProxySQL sends every value as text; turn it into a number, or None when it isn't one.

    >>> to_number("42"), to_number("1.5"), to_number(None), to_number("true")
    (42, 1.5, None, None)
    """
    kind = value.__class__
    if kind is str:  # the usual case first (called for every cell that is sorted or rated)
        try:
            return int(value)  # int() and float() skip surrounding whitespace themselves
        except ValueError:
            return _float(value)
    if kind is int or kind is float:
        return value
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        return _float(text)


def _float(text: str) -> Optional[float]:
    try:
        number = float(text)
    except ValueError:
        return None
    if number != number or number in (float("inf"), float("-inf")):
        return None
    return number


def rate(previous: Any, current: Any, seconds: Optional[float]) -> Optional[float]:
    """Δvalue / Δt, or None when there is no honest rate for the interval.

    None when either sample is missing or not a number, when no time passed, and when the
    counter went down (restart, stats reset, 32-bit wrap): never a negative or huge rate.

    >>> rate(100, 250, 1.5)
    100.0
    >>> rate(None, 5, 1.0) is None, rate(10, 3, 1.0) is None, rate(1, 2, 0) is None
    (True, True, True)
    """
    before = to_number(previous)
    after = to_number(current)
    if before is None or after is None or not seconds or seconds <= 0:
        return None
    delta = after - before
    if delta < 0:
        return None
    return delta / seconds


def delta(previous: Any, current: Any) -> Optional[float]:
    """Counter increase between two samples; None for a reset or a missing sample."""
    before = to_number(previous)
    after = to_number(current)
    if before is None or after is None:
        return None
    difference = after - before
    return None if difference < 0 else difference


def row_rates(
    previous: Optional[Mapping[str, Any]],
    current: Mapping[str, Any],
    fields: Iterable[str],
    seconds: Optional[float],
) -> dict:
    """Rates for several counters of one row: {field: rate or None}."""
    if previous is None:
        return {name: None for name in fields}
    return {name: rate(previous.get(name), current.get(name), seconds) for name in fields}
