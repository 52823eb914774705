"""Older digest readings kept as per-digest totals (what the collector keeps for the Time/s
sparkline) give each digest's Time/s: growth, resets, digests coming and going, a jump
beyond 32 bits."""
from __future__ import annotations

import random

import pytest

from proxytop.metrics.digests import parse, totals, time_series

COLUMNS = ("digest", "sum_time", "first_seen")


def steps_of(count, seed):
    rng = random.Random(seed)
    figures = {f"0x{d}": (rng.randrange(10 ** 12), 100) for d in range(20)}
    out = []
    for n in range(count):
        figures = {d: (t + rng.choice((0, 0, 7, 10 ** 6)), f) for d, (t, f) in figures.items()}
        if n == 9:  # a reset: sum_time back to small, first_seen moved
            figures["0x3"] = (5, 200)
        if n == 15:  # a digest goes, another comes
            figures.pop("0x4")
            figures["0xNEW"] = (9, 300)
        if n == 22:  # more than 2**31 µs in one interval
            figures["0x5"] = (figures["0x5"][0] + 2 ** 40, figures["0x5"][1])
        out.append(dict(figures))
    return out


def expected_series(steps, digest):
    series = []
    for before, now in zip(steps, steps[1:]):
        if digest not in now:
            series.append(None)
        elif digest not in before:
            series.append(0.0 if now[digest][0] == 0 else None)
        elif now[digest][0] < before[digest][0] or now[digest][1] != before[digest][1]:
            series.append(None)
        else:
            series.append((now[digest][0] - before[digest][0]) / 1000.0 / 5.0)
    return series


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_totals_give_each_digests_time_per_second(seed):
    steps = steps_of(30, seed)
    kept = [(5.0 * n, totals(parse(COLUMNS, [(d, str(t), str(f)) for d, (t, f) in figures.items()], 0.0)))
            for n, figures in enumerate(steps)]
    for digest in ("0x1", "0x3", "0x4", "0x5", "0xNEW"):
        assert time_series(kept, digest) == pytest.approx(expected_series(steps, digest)), digest
    assert time_series(kept, "0x5")[21] == pytest.approx(2 ** 40 / 1000.0 / 5.0, rel=1e-3)
