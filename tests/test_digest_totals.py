"""Older digest readings kept compactly (32-bit differences from a keyframe) give the same
figures and Time/s series as full ones: growth, resets, digests coming and going, a jump
beyond 32 bits."""
from __future__ import annotations

import random
from array import array

import pytest

from proxytop.metrics.digests import KEYFRAME_EVERY, DigestTotals, shared_with, time_series


def readings(steps):
    """Full DigestTotals of each step ({digest: (sum_time, first_seen)}), the position shared
    while the digest set is unchanged, as the collector keeps them."""
    full, position = [], None
    for n, figures in enumerate(steps):
        names = list(figures)
        if position is None or list(position) != names:
            position = {d: i for i, d in enumerate(names)}
        full.append(DigestTotals(position, array("q", (figures[d][0] for d in names)),
                                 array("q", (figures[d][1] for d in names)), float(n)))
    return full


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


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compact_readings_give_the_full_figures(seed):
    full = readings(steps_of(40, seed))
    kept, before = [], None
    for reading in full:
        before = shared_with(reading, before)
        kept.append(before)
    assert any(k.keyframe is not None for k in kept)  # most are differences ...
    assert all(k.since_keyframe < KEYFRAME_EVERY for k in kept)  # ... from a recent keyframe
    for compact, whole in zip(kept, full):
        for digest in list(whole.position) + ["0xABSENT"]:
            assert compact.get(digest) == whole.get(digest)
    for digest in ("0x1", "0x3", "0x4", "0x5", "0xNEW"):
        series = [(float(n), k) for n, k in enumerate(kept)]
        assert time_series(series, digest) == time_series([(float(n), k) for n, k in enumerate(full)], digest)


def test_a_changed_digest_set_starts_a_new_keyframe():
    one, two = {"0x1": 0}, {"0x1": 0, "0x2": 1}
    a = DigestTotals(one, array("q", [10]), array("q", [1]), 0.0)
    b = shared_with(DigestTotals(one, array("q", [20]), array("q", [1]), 1.0), a)
    c = shared_with(DigestTotals(two, array("q", [30, 5]), array("q", [1, 2]), 2.0), b)
    assert b.keyframe is a and c.keyframe is None and c.get("0x1") == (30, 1)
    assert shared_with(DigestTotals(two, array("q", [31, 6]), array("q", [1, 2]), 3.0), c).keyframe is c
