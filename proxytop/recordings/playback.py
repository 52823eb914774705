"""The playback position of a replay: a point on a recording's timeline that moves with the
real clock times the speed, and stops at the end (or wraps round when looping).

The position is kept as an anchor (a position, and the real-clock time it was taken) so that
pausing, seeking and changing speed never accumulate rounding from frame to frame. Nothing
here reads the recording: only its first and last times.
"""
from __future__ import annotations

import time
from typing import Callable, Optional


class PlaybackClock:
    """``clock`` is the real monotonic clock (injected in tests); ``now()`` is the position
    between ``begin`` and ``end``. It starts paused at ``at`` (``begin`` when None).

    >>> real = [100.0]
    >>> playback = PlaybackClock(0.0, 10.0, clock=lambda: real[0])
    >>> playback.resume(); real[0] += 4; playback.now()
    4.0
    >>> playback.set_speed(2.0); real[0] += 2; playback.now()
    8.0
    >>> real[0] += 5; playback.now(), playback.at_end, playback.paused
    (10.0, True, True)
    >>> playback.resume(); playback.now()  # from the end, it plays again from the beginning
    0.0
    >>> demo = PlaybackClock(0.0, 10.0, clock=lambda: real[0], loop=True)
    >>> demo.resume(); real[0] += 25; demo.now()  # a loop wraps round
    5.0
    """

    def __init__(self, begin: float, end: float, clock: Callable[[], float] = time.monotonic,
                 speed: float = 1.0, loop: bool = False, at: Optional[float] = None):
        self.begin = begin
        self.end = end
        self.loop = loop
        self.speed = speed
        self._clock = clock
        self._playing = False
        self._anchor_pos = begin if at is None else self.clamp(at)
        self._anchor_clock = clock()

    def clamp(self, at: float) -> float:
        return min(max(at, self.begin), self.end)

    def now(self) -> float:
        if not self._playing:
            return self._anchor_pos
        position = self._anchor_pos + (self._clock() - self._anchor_clock) * self.speed
        if position >= self.end:
            span = self.end - self.begin
            if self.loop and span > 0:
                position = self.begin + (position - self.begin) % span
                self._anchor_pos, self._anchor_clock = position, self._clock()
            else:
                self._anchor_pos, self._anchor_clock, self._playing = self.end, self._clock(), False
                return self.end
        return position

    def pause(self) -> None:
        self._anchor_pos = self.now()
        self._anchor_clock = self._clock()
        self._playing = False

    def resume(self) -> None:
        if self.at_end:
            self._anchor_pos = self.begin  # play again from the beginning
        self._anchor_clock = self._clock()
        self._playing = True

    @property
    def paused(self) -> bool:
        self.now()
        return not self._playing

    @property
    def at_end(self) -> bool:
        return not self.loop and self.now() >= self.end - 1e-6  # a time typed in wall-clock seconds: see replay.AT_TOLERANCE

    def seek(self, at: float) -> float:
        self._anchor_pos = self.clamp(at)
        self._anchor_clock = self._clock()
        return self._anchor_pos

    def set_speed(self, speed: float) -> None:
        self._anchor_pos = self.now()
        self._anchor_clock = self._clock()
        self.speed = speed
