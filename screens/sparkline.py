"""Sparklines: a series of numbers as one line of block characters. Pure functions."""
from __future__ import annotations

import math
from typing import Optional, Sequence

LEVELS = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"  # ▁▂▃▄▅▆▇█
GAP = " "  # no value for that interval (first reading, counter reset)


def sparkline(values: Sequence[Optional[float]], width: Optional[int] = None) -> str:
    """One character per value, scaled to the largest; zero is the lowest block, any positive
    value at least the second, the maximum the full block. ``width`` keeps the latest values.

    >>> sparkline([0, 1, 2, 4, 8])
    '▁▂▃▅█'
    >>> sparkline([3, None, 3])
    '█ █'
    >>> sparkline([0, 0]), sparkline([]), sparkline([1, 2, 3, 4], width=2)
    ('▁▁', '', '▇█')
    """
    if width is not None:
        values = list(values)[-width:] if width > 0 else []
    numbers = [v for v in values if v is not None and v >= 0]
    top = max(numbers, default=0)
    out = []
    for value in values:
        if value is None or value < 0:
            out.append(GAP)
        elif value == 0 or top <= 0:
            out.append(LEVELS[0])
        else:
            level = math.ceil(round(value / top * (len(LEVELS) - 1), 9))
            out.append(LEVELS[max(1, min(len(LEVELS) - 1, level))])
    return "".join(out)
