"""Formatting of values for people: one format per kind of figure, on every screen, in the
live view and in ``--batch`` text. Pure functions.

The rules:

* No value (first reading, a reset, unavailable): an em dash, ``MISSING``.
* A figure and its unit are written together, without a space: ``1.2k``, ``36.0MiB``, ``7s``.
* Counts, and rates of counts: compact, the same in a narrow column, a header and a note:
  ``999``, ``1.2k``, ``19.3k``, ``3.4M``, ``5.6G``; a small fraction keeps one decimal
  (``0.4``). :func:`number`.
* Bytes always carry a byte unit, in binary multiples with their IEC names (so that ``M``
  always means a million and ``MiB`` a mebibyte): ``0B``, ``15B``, ``819.7KiB``,
  ``36.0MiB``, ``5.0GiB``. :func:`size`; :func:`size_rate` adds ``/s`` in prose.
* Durations: at most three significant digits in the unit their size calls for, without
  trailing zeros, so a measured value and a bucket bound read alike (``586µs`` beside
  ``≤1ms``): ``586µs``, ``1.4ms``, ``250ms``, ``7s``, ``56s``, ``1m30s``, ``2h04m``,
  ``3d04h``. :func:`duration` takes seconds, :func:`milliseconds` and
  :func:`microseconds` what their names say.
* Ages of things known to the second (an error last seen) are whole seconds below a minute
  (``7s``), then durations: :func:`age`.
* Percentages: one decimal, ``70.1%``. :func:`percent`.
* A column states its unit once. A title that carries one (``Sent/s``, ``Used%``,
  ``rkB/s``) has bare figures in its cells (:func:`percent_figure` for ``%``; counts and
  sizes per second are shown without ``/s``); a title without one (``Latency``, ``Avg``)
  has the unit in every cell (``1.4ms``).
* Positions and identifiers are not quantities: an LSN keeps every digit, :func:`exact`.
* A setting is shown as it is set (``mysql-max_connections 2048``): :func:`plain`.
"""
from __future__ import annotations

from statistics import median
from typing import Any, Iterable, Optional

from proxytop.metrics.rates import NO_RATE_YET, to_number

MISSING = "\u2014"  # an em dash: "no value yet" (first sample, reset, unavailable)

COUNT_STEPS = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
BYTE_STEPS = ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))
NEXT_UNIT_AT = 999.95 / 1024  # of a unit: what would print as 1000.0 of the one below


def plain(value: Any) -> str:
    """Text as it is; a float as a count.

    >>> plain("ONLINE"), plain(12), plain(0.25), plain(None)
    ('ONLINE', '12', '0.2', '—')
    """
    if value is None:
        return MISSING
    if isinstance(value, float):
        return number(value)
    return str(value)


def _number(value: Any) -> Optional[float]:
    """``value`` itself when it is already an int or float (most cells: no call to to_number),
    else to_number's reading of it."""
    kind = value.__class__
    return value if kind is int or kind is float else to_number(value)


def number(value: Any) -> str:
    """A count or a rate of counts, compact.

    >>> number(999), number(1234), number(19338), number(2500000), number(0.4), number(12.5)
    ('999', '1.2k', '19.3k', '2.5M', '0.4', '12')
    >>> number(None), number("n/a")
    ('—', '—')
    """
    value = _number(value)
    if value is None:
        return MISSING
    size_ = abs(value)
    if size_ >= 1e3:
        for limit, suffix in COUNT_STEPS:
            if size_ >= limit:
                return f"{value / limit:.1f}{suffix}"
    if isinstance(value, float) and value != int(value) and size_ < 10:
        return f"{value:.1f}"
    return f"{value:.0f}"


def exact(value: Any) -> str:
    """A position or identifier, every digit with thousands separators (an LSN).

    >>> exact(36625046), exact(None)
    ('36,625,046', '—')
    """
    value = to_number(value)
    if value is None:
        return MISSING
    return f"{value:,.0f}"


def size(value: Any) -> str:
    """Bytes, always with a unit; never four digits before the point (1000KiB is 1.0MiB), so
    a size fits eight characters.

    >>> size(0), size(15), size(1536), size(36.0 * 1024**2), size(5 * 1024**3), size(None)
    ('0B', '15B', '1.5KiB', '36.0MiB', '5.0GiB', '—')
    >>> size(999), size(1000), size(999.9 * 1024), size(1000 * 1024)
    ('999B', '1.0KiB', '999.9KiB', '1.0MiB')
    """
    value = _number(value)
    if value is None:
        return MISSING
    magnitude = abs(value)
    for limit, suffix in BYTE_STEPS:
        if magnitude >= limit * NEXT_UNIT_AT:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}B"


def size_rate(value: Any) -> str:
    """Bytes per second in prose (a column titled .../s shows :func:`size`).

    >>> size_rate(819.7 * 1024), size_rate(None)
    ('819.7KiB/s', '—')
    """
    text = size(value)
    return text if text == MISSING else text + "/s"


def percent(value: Any, decimals: int = 1) -> str:
    """A percentage, with its sign.

    >>> percent(70.14), percent(6.25, 0), percent(None)
    ('70.1%', '6%', '—')
    """
    text = percent_figure(value, decimals)
    return text if text == MISSING else text + "%"


def percent_figure(value: Any, decimals: int = 1) -> str:
    """A percentage in a column whose title says ``%`` (``Used%``): the figure alone.

    >>> percent_figure(70.14), percent_figure(None)
    ('70.1', '—')
    """
    value = to_number(value)
    if value is None:
        return MISSING
    return f"{value:.{decimals}f}"


def _significant(value: float) -> str:
    """Up to three significant digits, no trailing zeros: 586, 1.4, 56, 0.3 (value < 999.5)."""
    text = f"{value:.3g}"
    return "0" if "e" in text else text  # below 0.0001 of the unit: nothing to show


def duration(seconds: Any) -> str:
    """A duration given in seconds.

    >>> duration(0.000586), duration(0.0014), duration(0.25), duration(7), duration(56.2)
    ('586µs', '1.4ms', '250ms', '7s', '56.2s')
    >>> duration(0), duration(0.9996), duration(59.97), duration(90), duration(7440), duration(273600)
    ('0s', '1s', '1m00s', '1m30s', '2h04m', '3d04h')
    >>> duration(-2), duration(None)
    ('-2s', '—')
    """
    value = to_number(seconds)
    if value is None:
        return MISSING
    if value < 0:
        return "-" + duration(-value)
    # Each unit holds what rounds below 1000 of it (999.6ms is 1s, not 1000ms).
    if value == 0:
        return "0s"
    if value < 0.0009995:
        return _significant(value * 1e6) + "\u00b5s"
    if value < 0.9995:
        return _significant(value * 1e3) + "ms"
    if value < 59.95:
        return _significant(value) + "s"
    return _clock(round(value))


def age(seconds: Any) -> str:
    """How long ago something known to the second happened (an error last seen, a node's last
    check): whole seconds below a minute, then as :func:`duration`.

    >>> age(0.2), age(6.99), age(125), age(None)
    ('0s', '7s', '2m05s', '—')
    """
    value = to_number(seconds)
    if value is None:
        return MISSING
    return f"{round(value)}s" if value < 59.5 else duration(value)


def _clock(seconds: int) -> str:
    """A minute or more: the two largest units, 1m30s, 2h04m, 3d04h."""
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s"


def milliseconds(value: Any) -> str:
    """A duration given in milliseconds.

    >>> milliseconds(0.65), milliseconds(12.3), milliseconds(1500), milliseconds(None)
    ('650µs', '12.3ms', '1.5s', '—')
    """
    value = to_number(value)
    return MISSING if value is None else duration(value / 1e3)


def microseconds(value: Any) -> str:
    """A duration given in microseconds.

    >>> microseconds(586), microseconds(1000), microseconds(10_000_000), microseconds(None)
    ('586µs', '1ms', '10s', '—')
    """
    value = to_number(value)
    return MISSING if value is None else duration(value / 1e6)


def interval(seconds: Optional[float]) -> str:
    """An interval setting, as any duration: 500ms, 1s, 30s.

    >>> interval(0.5), interval(2), interval(None)
    ('500ms', '2s', '—')
    """
    return duration(seconds)


def covers_text(spans: Iterable[Optional[float]], interval: Optional[float]) -> Optional[str]:
    """What a notes line says of the spans rates cover (seconds each; None: no rate yet), when
    they differ from the refresh interval. Most figures span the same time (their counters move
    at every update); that is the span named, and the counters whose span is longer (they move
    only now and then: a span runs from one of their changes to another) or shorter (they
    began moving later: a span starts at a change) are counted apart, so that no figure is
    said to cover what it doesn't.

    >>> covers_text([10.02], 1.0), covers_text([1.01], 1.0), covers_text([None], 1.0)
    ('rates over the last 10s of counter updates', None, 'no rates yet: they start at the second counter update proxytop sees')
    >>> covers_text([20.0, 20.3, 20.1, 28.9, 23.0, None], 1.0)
    'rates over the last 20.3s of counter updates; 2 counters that move now and then over longer (up to 28.9s)'
    >>> covers_text([20.0, 20.2, 6.5], 1.0)
    'rates over the last 20s of counter updates; 1 counter that began moving later over 6.5s'
    """
    seconds = sorted(s for s in spans if s)
    if not seconds:
        return NO_RATE_YET
    low, high = seconds[0], seconds[-1]
    if interval and abs(high - interval) <= 0.1 * interval and abs(low - interval) <= 0.1 * interval:
        return None
    most = median(seconds)
    near = max(1.5, 0.05 * most)  # a reading or an update more or less (~1 s each): the same span
    longer = [s for s in seconds if s > most + near]
    shorter = [s for s in seconds if s < most - near]
    text = f"rates over the last {duration(most)} of counter updates"
    if longer:
        text += f"; {_counters(len(longer))} that move now and then over longer (up to {duration(longer[-1])})"
    if shorter:
        over = duration(shorter[0]) if shorter[-1] - shorter[0] < 0.05 else \
            f"{duration(shorter[0])}-{duration(shorter[-1])}"
        text += f"; {_counters(len(shorter))} that began moving later over {over}"
    return text


def _counters(count: int) -> str:
    return f"{count} counter" if count == 1 else f"{count} counters"
