"""Formatting of values for people: units, rates, durations. Pure functions."""
from __future__ import annotations

from typing import Any, Optional

from proxytop.metrics.rates import to_number

MISSING = "\u2014"  # an em dash: "no value yet" (first sample, reset, unavailable)


def plain(value: Any) -> str:
    if value is None:
        return MISSING
    if isinstance(value, float):
        return number(value)
    return str(value)


def number(value: Any, decimals: int = 0) -> str:
    """Thousands separators; small non-integers keep one decimal so 0.4/s isn't shown as 0.

    >>> number(1234567), number(0.4), number(12.5), number(None)
    ('1,234,567', '0.4', '12', '—')
    """
    value = to_number(value)
    if value is None:
        return MISSING
    if isinstance(value, float) and not decimals and 0 < abs(value) < 10 and value != int(value):
        return f"{value:,.1f}"
    return f"{value:,.{decimals}f}"


def _number(value: Any) -> Optional[float]:
    """``value`` itself when it is already an int or float (most cells: no call to to_number),
    else to_number's reading of it."""
    kind = value.__class__
    return value if kind is int or kind is float else to_number(value)


def scaled(value: Any) -> str:
    """Compact counts for narrow columns: 1.2k, 3.4M, 5.6G.

    >>> scaled(999), scaled(1234), scaled(2500000), scaled(0.25)
    ('999', '1.2k', '2.5M', '0.2')
    """
    value = _number(value)
    if value is None:
        return MISSING
    size = abs(value)
    if size >= 1e3:
        for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if size >= limit:
                return f"{value / limit:.1f}{suffix}"
    if isinstance(value, float) and value != int(value) and size < 10:
        return f"{value:.1f}"
    return f"{value:.0f}"


def human_bytes(value: Any) -> str:
    """Bytes in binary units.

    >>> human_bytes(512), human_bytes(1536), human_bytes(5 * 1024**3)
    ('512B', '1.5K', '5.0G')
    """
    value = _number(value)
    if value is None:
        return MISSING
    size = abs(value)
    if size >= 1024:
        for limit, suffix in ((1024**4, "T"), (1024**3, "G"), (1024**2, "M"), (1024, "K")):
            if size >= limit:
                return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}B"


def bytes_rate(value: Any) -> str:
    return human_bytes(value) if to_number(value) is None else human_bytes(value) + "/s"


def percent(value: Any, decimals: int = 1) -> str:
    value = to_number(value)
    if value is None:
        return MISSING
    return f"{value:.{decimals}f}%"


def milliseconds(value: Any) -> str:
    """A duration given in milliseconds, kept short.

    >>> milliseconds(0.25), milliseconds(12.3), milliseconds(1500)
    ('0.25ms', '12.3ms', '1.50s')
    """
    value = to_number(value)
    if value is None:
        return MISSING
    if value < 1:
        return f"{value:.2f}ms"
    if value < 1000:
        return f"{value:.1f}ms"
    return duration(value / 1000.0)


def duration(seconds: Any) -> str:
    """A duration for people: 1.50s, 3m05s, 2h04m, 3d04h.

    >>> duration(1.5), duration(185), duration(7440), duration(273600)
    ('1.50s', '3m05s', '2h04m', '3d04h')
    """
    value = to_number(seconds)
    if value is None:
        return MISSING
    if value < 60:
        return f"{value:.2f}s" if value < 10 else f"{value:.0f}s"
    value = int(value)
    minutes, secs = divmod(value, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s"


def interval(seconds: Optional[float]) -> str:
    """An interval setting: 0.5s, 1s, 30s."""
    if seconds is None:
        return MISSING
    return f"{seconds:g}s"
