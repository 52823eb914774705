"""Figures typed with a unit (``2s``, ``500ms``, ``1.5GiB``, ``10MiB/s``), read in the unit a
column holds its values in: what the filter's ``col>N`` compares. Pure functions.

A column's unit is a duration (``us``, ``ms``, ``s``), a size (``B``, ``KiB``) or either per
second or hour (``B/s``, ``KiB/s``, ``B/h``). A typed figure may carry any unit of the same
kind, as the screens print them or as people write them:

* durations: ``us`` (or ``µs``), ``ms``, ``s``, ``m`` (or ``min``), ``h``, ``d``;
* sizes, in binary multiples whichever way they are written (a size is never shown in
  powers of ten): ``B``, ``K``/``KB``/``KiB``, ``M``/``MB``/``MiB``, ``G``..., ``T``...;
* a rate adds ``/s``, ``/m`` or ``/h``; without it, the column's own ``/s`` or ``/h``.

A bare figure is read in the column's *bare unit*: seconds for a duration and bytes for a
size (the base units durations and sizes are printed in, however the cell scales them), unless
the column names another one in its title (iostat's ``rkB/s``). Units are matched without
regard to case.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

DURATIONS: Dict[str, float] = {"us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
                               "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
SIZES: Dict[str, float] = {"b": 1.0}
for _power, _letter in enumerate("kmgt", start=1):
    for _name in (_letter, _letter + "b", _letter + "ib"):
        SIZES[_name] = 1024.0 ** _power
KINDS: Dict[str, Dict[str, float]] = {"duration": DURATIONS, "size": SIZES}
# How each kind's units are listed in an error line.
NAMES = {"duration": "us, ms, s, m, h", "size": "B, K/KiB, M/MiB, G/GiB, T/TiB"}
BARE = {"duration": "s", "size": "B"}

_FIGURE = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*([a-z\u00b5]*)\s*(?:/\s*([a-z]+))?\s*$", re.IGNORECASE)


class UnitError(ValueError):
    """A typed figure that doesn't fit the column; the message says why, in a few words."""


@dataclass(frozen=True)
class Unit:
    """A unit: its kind, how many base units (seconds, bytes) one of it is, and for a rate
    how many seconds its time unit is."""

    name: str
    kind: str  # "duration" or "size"
    factor: float
    per: Optional[float] = None  # a rate: seconds of "/s" (1) or "/h" (3600)


def unit(name: str) -> Unit:
    """A column's unit from its name.

    >>> unit("ms"), unit("KiB/s").per, unit("B/h").per
    (Unit(name='ms', kind='duration', factor=0.001, per=None), 1.0, 3600.0)
    """
    amount, _, per = name.partition("/")
    kind, factor = _kind_of(amount)
    if kind is None:
        raise ValueError(f"not a unit: {name!r}")
    return Unit(name, kind, factor, DURATIONS[per.lower()] if per else None)


def bare_unit_of(column_unit: str) -> str:
    """What a figure typed without a unit means on a column of ``column_unit``: seconds or
    bytes, per the column's own time unit for a rate.

    >>> bare_unit_of("ms"), bare_unit_of("KiB/s"), bare_unit_of("B/h")
    ('s', 'B/s', 'B/h')
    """
    column = unit(column_unit)
    return BARE[column.kind] + (_per_name(column.per) if column.per else "")


def _kind_of(name: str, first: str = "duration") -> Tuple[Optional[str], float]:
    """The kind of a unit and its factor; ``first`` is the kind looked in first (``m`` is a
    minute for a duration, a mebibyte for a size)."""
    for kind in sorted(KINDS, key=lambda k: k != first):
        table = KINDS[kind]
        factor = table.get(name.lower())
        if factor is not None:
            return kind, factor
    return None, 0.0


def read(text: str, column_unit: str, bare_unit: str = "") -> Tuple[float, str]:
    """``text`` in ``column_unit``, and how it was read (the figure and the unit it was taken
    in, for the user to check); ``bare_unit`` (default: seconds or bytes) is what a figure
    without a unit means. UnitError when it is not a figure or its unit doesn't fit.

    >>> read("2s", "ms"), read("1", "ms"), read("500ms", "s"), read("1.5m", "s")
    ((2000.0, '2 s'), (1000.0, '1 s'), (0.5, '500 ms'), (90.0, '1.5 min'))
    >>> read("2G", "B"), read("1MiB/s", "B/s"), read("1MiB", "B/s"), read("1GiB/h", "B/s")
    ((2147483648.0, '2 GiB'), (1048576.0, '1 MiB/s'), (1048576.0, '1 MiB/s'), (298261.6177777778, '1 GiB/h'))
    >>> read("100", "KiB/s", bare_unit="KiB/s"), read("3us", "us"), read("3µs", "ms"), read(".50M", "B")
    ((100.0, '100 KiB/s'), (3.0, '3 µs'), (0.003, '3 µs'), (524288.0, '0.5 MiB'))
    """
    column = unit(column_unit)
    found = _FIGURE.match(text)
    if not found:
        raise UnitError(f"'{text}' is not a {column.kind}")
    figure, typed, per = found.group(1), found.group(2), found.group(3)
    value = float(figure)
    if not typed:
        if per:
            raise UnitError(f"'{text}': a rate needs a unit before the /")
        typed = bare_unit or bare_unit_of(column_unit)
        typed, _, per = typed.partition("/")
    kind, factor = _kind_of(typed, column.kind)
    if kind != column.kind:
        raise UnitError(f"'{text}' is not a {column.kind}")
    if per and column.per is None:
        raise UnitError(f"'{text}' is a rate; this column is not")
    per_seconds = column.per
    if per:
        per_seconds = DURATIONS.get(per.lower())
        if per_seconds is None or per.lower() not in ("s", "sec", "m", "min", "h"):
            raise UnitError(f"'{text}': per what? (/s, /m or /h)")
    value_in_base = value * factor / (per_seconds or 1.0)  # base units per second for a rate
    in_column = value_in_base * (column.per or 1.0) / column.factor
    shown = f"{_figure_text(figure)} {_unit_text(typed, kind)}" + (_per_name(per_seconds) if column.per else "")
    return in_column, shown


def _figure_text(figure: str) -> str:
    """The figure as typed, without a leading + or trailing zeros after a point: '2', '1.5'."""
    figure = figure.lstrip("+")
    figure = ("-0" + figure[1:]) if figure.startswith("-.") else ("0" + figure if figure.startswith(".") else figure)
    if "." in figure:
        figure = figure.rstrip("0").rstrip(".") or "0"
    return figure


def _unit_text(typed: str, kind: str) -> str:
    """A unit as the screens print it: 'GiB' for g, gb or gib; 'µs' for us; 'min' for m."""
    lower = typed.lower()
    if kind == "size":
        return "B" if lower == "b" else lower[0].upper() + "iB"
    return {"us": "\u00b5s", "sec": "s", "m": "min"}.get(lower, lower)


def _per_name(seconds: Optional[float]) -> str:
    return {1.0: "/s", 60.0: "/m", 3600.0: "/h"}.get(seconds or 1.0, "/s")
