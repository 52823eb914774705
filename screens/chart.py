"""Line charts drawn with Unicode braille characters, as lines of (text, style) segments.

A braille character is a 2x4 grid of dots, so a chart of W x H cells has 2W x 4H dots: four
times the resolution of block characters, in characters every terminal font of the last
decade has, painted like any other text (no escape codes to parse, no library to follow).
Pure functions: docs/graphs.md says why this was chosen over a charting library.
"""
from __future__ import annotations

import math
import time
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

Segment = Tuple[str, Optional[str]]
Line = List[Segment]
Point = Tuple[float, float]

BRAILLE = 0x2800
# the bit of each dot of a braille cell, by (column, row from the top)
DOT = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
SERIES_STYLES = ("series0", "series1", "series2", "series3", "series4", "series5")
LEGEND_MARK = "\u2501"  # ━


@dataclass(frozen=True)
class Plot:
    label: str
    points: Sequence[Point]  # (wall time, value); NaN is a gap
    style: Optional[str] = None
    steps: bool = False  # a count: each value held until the next reading, not a slope to it


@dataclass(frozen=True)
class Marker:
    t: float  # wall time
    mark: str  # one character under the chart
    style: Optional[str] = "warning"


def nice_ceiling(value: float) -> float:
    """The next "round" number at or above value: 1, 2, 2.5 or 5 times a power of ten.

    >>> [nice_ceiling(v) for v in (0.7, 1, 3, 7, 12, 230, 0.013)]
    [1.0, 1.0, 5.0, 10.0, 20.0, 250.0, 0.02]
    """
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power * (1 + 1e-9):
            return float(round(step * power, 12))
    return float(10 * power)


def value_range(plots: Sequence[Plot]) -> Tuple[float, float]:
    """The value axis: from 0 (or below, for a negative figure) to a round number above the top.

    >>> value_range([Plot("a", [(0, 3.0), (1, 7.0)])]), value_range([Plot("a", [(0, -3.0)])]), value_range([])
    ((0.0, 10.0), (-5.0, 0.0), (0.0, 1.0))
    """
    values = [v for plot in plots for _t, v in plot.points if not math.isnan(v)]
    low, high = min(values, default=0.0), max(values, default=0.0)
    top = nice_ceiling(high) if high > 0 else 0.0
    bottom = -nice_ceiling(-low) if low < 0 else 0.0
    return (bottom, top) if top > bottom else (bottom, bottom + 1.0)


def axis_labels(low: float, high: float, fmt: Callable[[float], str]) -> List[str]:
    """The value axis' labels, top, middle and bottom, in the figure's units (``fmt``) when
    those tell the three apart and say each value; else as plain numbers with as many decimals
    as they need (a checkpoint age of 0.004 %: "0.0 / 0.0 / 0" became this).

    >>> number = lambda v: f"{v:.1f}" if v else "0"
    >>> axis_labels(0.0, 10.0, number), axis_labels(0.0, 0.005, number), axis_labels(0.0, 0.25, number)
    (['10.0', '5.0', '0'], ['0.005', '0.0025', '0'], ['0.25', '0.125', '0'])
    >>> axis_labels(0.0, 0.005, lambda v: f"{v * 1000:g}ms")  # a unit of its own: kept
    ['5ms', '2.5ms', '0ms']
    """
    values = (high, (low + high) / 2, low)
    labels = [fmt(v) for v in values]
    half = (high - low) / 2
    if len(set(labels)) == len(labels) and all(_says(label, value, half / 10) for label, value in zip(labels, values)):
        return labels
    decimals = next((d for d in range(13) if all(abs(round(v, d) - v) <= half * 1e-6 for v in values)), 12)
    return [_plain(v, decimals) for v in values]


def _says(label: str, value: float, within: float) -> bool:
    """Whether a label says its value: a bare number within ``within`` of it, or text with a
    unit (read as the formatter meant it)."""
    try:
        return abs(float(label) - value) <= within
    except ValueError:
        return True


def _plain(value: float, decimals: int) -> str:
    """A number with at most ``decimals`` decimals, no trailing zeros.

    >>> _plain(0.0050, 4), _plain(0.0, 4), _plain(12.0, 0), _plain(-0.25, 3)
    ('0.005', '0', '12', '-0.25')
    """
    text = f"{value:.{decimals}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def clock_label(t: float, span: float) -> str:
    """A time axis label: HH:MM:SS under ten minutes, HH:MM under two days, else day and hour."""
    local = time.localtime(t)
    if span <= 600:
        return time.strftime("%H:%M:%S", local)
    if span <= 2 * 86400:
        return time.strftime("%H:%M", local)
    return time.strftime("%d %b %H:%M", local)


def _columns(plot: Plot, start: float, end: float, dots_x: int) -> Dict[int, Tuple[float, float, float, float]]:
    """Each x dot's first, min, max and last value (several readings may fall in one dot).
    The points are in time order: each dot's are found by bisection, not one by one (an hour
    at 1 s is 3,600 points for some 400 dots)."""
    times = [t for t, _v in plot.points]
    values = [v for _t, v in plot.points]
    out: Dict[int, Tuple[float, float, float, float]] = {}
    step = (end - start) / dots_x
    lower = bisect_left(times, start)
    for x in range(dots_x):
        upper = bisect_left(times, start + (x + 1) * step, lower) if x < dots_x - 1 else bisect_right(times, end, lower)
        if upper > lower:
            numbers = [v for v in values[lower:upper] if v == v]  # (NaN, a gap, is not equal to itself)
            if numbers:
                out[x] = (numbers[0], min(numbers), max(numbers), numbers[-1])
        lower = upper
    return out


def _gap_dots(plot: Plot, start: float, end: float, dots_x: int) -> float:
    """How many x dots apart two drawn points may be and still be joined: three times the
    usual distance between readings (a longer silence is a gap: the server was down)."""
    times = [t for t, v in plot.points if not math.isnan(v)]
    if len(times) < 2:
        return 0
    steps = sorted(b - a for a, b in zip(times, times[1:]) if b > a)
    usual = steps[len(steps) // 2] if steps else 0
    return max(1.0, 3 * usual / (end - start) * dots_x)


def draw(plots: Sequence[Plot], width: int, height: int, start: float, end: float,
         fmt: Callable[[float], str] = lambda v: f"{v:g}", markers: Sequence[Marker] = (),
         cursor: Optional[float] = None, label_width: int = 0) -> List[Line]:
    """A chart ``width`` x ``height`` cells: value labels on the left, the time axis below, then a
    line of event markers when there are any. ``fmt`` formats the value axis in the column's
    units; a ``cursor`` time is marked ▲ on the time axis."""
    low, high = value_range(plots)
    labels = axis_labels(low, high, fmt)
    left = max(label_width, max(len(text) for text in labels) + 1)  # (charts stacked: one width lines their axes up)
    rows = max(1, height - 1 - (1 if markers else 0))
    cols = max(1, width - left - 1)
    dots_x, dots_y = cols * 2, rows * 4
    span = max(end - start, 1e-9)
    cells: List[List[int]] = [[0] * cols for _ in range(rows)]
    owner: List[List[Optional[str]]] = [[None] * cols for _ in range(rows)]

    scale = (dots_y - 1) / (high - low)

    def y_dot(value: float) -> int:
        dot = round((value - low) * scale)
        return 0 if dot < 0 else (dot if dot < dots_y else dots_y - 1)

    def put(x: int, y0: int, y1: int, style: Optional[str]) -> None:
        for y in range(min(y0, y1), max(y0, y1) + 1):
            row = rows - 1 - y // 4
            cells[row][x // 2] |= DOT[x % 2][3 - y % 4]
            owner[row][x // 2] = style

    for plot in plots:
        columns = _columns(plot, start, end, dots_x)
        joinable = _gap_dots(plot, start, end, dots_x)
        previous = None
        for x in sorted(columns):
            first, lowest, highest, last = columns[x]
            bottom, top = y_dot(lowest), y_dot(highest)
            if previous is not None and x - previous[0] <= joinable:
                px, pv = previous
                if x - px == 1 or plot.steps:  # one vertical stroke from the last reading to this one's
                    for step in range(px + 1, x):  # (a count: held level across the dots between)
                        put(step, y_dot(pv), y_dot(pv), plot.style)
                    bottom, top = min(bottom, y_dot(pv)), max(top, y_dot(pv))
                else:  # readings further apart than a dot: a line across the dots between
                    for step in range(px + 1, x):
                        a = pv + (first - pv) * (step - 1 - px) / (x - px)
                        b = pv + (first - pv) * (step - px) / (x - px)
                        put(step, y_dot(a), y_dot(b), plot.style)
                    bottom, top = min(bottom, y_dot(first)), max(top, y_dot(first))
            put(x, bottom, top, plot.style)
            previous = (x, last)

    out: List[Line] = []
    label_rows = {0: labels[0], rows // 2: labels[1], rows - 1: labels[2]} if rows >= 3 else {0: labels[0], rows - 1: labels[2]}
    for r in range(rows):
        line: Line = [(f"{label_rows.get(r, ''):>{left - 1}} ", "dim"), ("\u2502", "dim")]
        text = "".join([chr(BRAILLE + bits) if bits else " " for bits in cells[r]])
        styles = set(owner[r]) - {None}
        if len(styles) <= 1:  # one series on this row (blank cells take any style): one segment
            line.append((text, styles.pop() if styles else None))
        else:
            begin = 0
            style = None
            for c, cell_style in enumerate(owner[r]):
                if cell_style is not None and cell_style != style:
                    if c > begin:
                        line.append((text[begin:c], style))
                    begin, style = c, cell_style
            line.append((text[begin:], style))
        out.append(line)
    axis = time_axis(start, end, left, cols)
    if cursor is not None and start <= cursor <= end:
        x = min(cols - 1, int((cursor - start) / span * cols))
        text = axis[1][0]
        axis = [axis[0], (text[:x], "dim"), ("\u25b2", "warning_bold"), (text[x + 1:], "dim")]
    out.append(axis)
    if markers:
        out.append(marker_line(markers, start, end, left, cols))
    return out


def time_axis(start: float, end: float, left: int, cols: int) -> Line:
    """└ with clock times under it: the start at the left, the end at the right, and as many
    between as fit with room to spare."""
    span = end - start
    first, last = clock_label(start, span), clock_label(end, span)
    axis = [" "] * cols
    spaced = len(last) + 4
    places = [(0, first)]
    slots = max(0, (cols - len(first) - len(last)) // spaced)
    for i in range(1, slots + 1):
        x = round(cols * i / (slots + 1))
        places.append((x, clock_label(start + span * x / cols, span)))
    places.append((cols - len(last), last))
    free = 0
    for x, text in places:
        last_place = x == cols - len(last)
        if x < free or x + len(text) > cols or (not last_place and x + len(text) + 2 > cols - len(last)):
            continue  # (the end's label is always shown: the others give way to it)
        axis[x:x + len(text)] = text
        free = x + len(text) + 2
    return [(" " * (left - 1) + " \u2514", "dim"), ("".join(axis), "dim")]


def marker_line(markers: Sequence[Marker], start: float, end: float, left: int, cols: int) -> Line:
    """The events under a chart: each one's character at its time's column."""
    span = max(end - start, 1e-9)
    line = [" "] * cols
    styles: List[Optional[str]] = [None] * cols
    for marker in markers:
        if start <= marker.t <= end:
            x = min(cols - 1, int((marker.t - start) / span * cols))
            line[x], styles[x] = marker.mark[:1] or "*", marker.style
    out: Line = [(" " * (left + 1), None)]
    for char, style in zip(line, styles):
        out.append((char, style))
    return out


def clip(line: Line, width: int) -> Line:
    """A line cut to ``width`` characters.

    >>> clip([("abc", None), ("def", "x")], 4)
    [('abc', None), ('d', 'x')]
    """
    out: Line = []
    for text, style in line:
        if width <= 0:
            break
        out.append((text[:width], style))
        width -= len(text[:width])
    return out


def legend(plots: Sequence[Plot], width: int) -> Line:
    """━ label for each series in its colour, as many as fit."""
    out: Line = []
    used = 0
    for plot in plots:
        text = f"{LEGEND_MARK} {plot.label}  "
        if used + len(text) > width:
            break
        out += [(LEGEND_MARK, plot.style), (f" {plot.label}  ", None)]
        used += len(text)
    return out
