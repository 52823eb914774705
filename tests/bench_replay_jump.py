"""Benchmark of a replay's jump on ConnPool: ``python -m tests.bench_replay_jump``.

After a jump the status log is folded from the recorded pool readings (forward: those in
between; back: from the start of the run), so the first frame after the jump pays for them.
Prints, beside its target, the wall time of that fold (on the UI thread, once per jump):
- across the whole demo recording (t end from the start);
- across a one-hour recording of a pool read every second (3,600 readings), of 12 backends
  (typical) and of 500 (at scale), a backend shunned and back every 5 minutes: t end from the
  start, then t 50% (a jump back: the log starts again from the run's start);
- a frame without a jump (the log already folded), for comparison.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Tuple

from proxytop.collectors.proxysql import ConnectionPool
from proxytop.core import Snapshot, Table
from proxytop.recordings.recording import RecordingWriter
from proxytop.recordings.replay import DEMO_FILE, ReplayEngine
from proxytop.screens.base import DataView
from proxytop.screens.connpool import ConnPoolScreen
from tests.bench_health import POOL_COLUMNS
from tests.benchmark import machine

TARGET_JUMP_S = 0.5  # a jump across an hour: the frame after it may come this late
TARGET_FRAME_MS = 1.0  # a frame without a jump
HOUR = 3600
FLIP_EVERY = 300  # seconds between a backend's shun and its return


def hour_recording(path: str, backends: int, seconds: int = HOUR) -> None:
    """A recording of ``seconds`` pool readings, one a second, on a fake clock."""
    clock = [1000.0]
    writer = RecordingWriter(path, clock=lambda: clock[0], wall=lambda: 1.8e9, target="127.0.0.1:6032")
    try:
        for second in range(seconds):
            at = 1000.0 + second
            clock[0] = at
            shunned = (second // FLIP_EVERY) % 2 == 1
            rows = tuple(tuple(str(v) for v in (10 + n // 100, f"10.0.{n // 250}.{n % 250}", 3306,
                                                "SHUNNED" if shunned and n == 3 else "ONLINE", 5, 3, 100 + second,
                                                0, 9, 100000 + 500 * second, 0, 10**6, 10**7, 350))
                         for n in range(backends))
            writer.snapshot(Snapshot(ConnectionPool.name, Table(POOL_COLUMNS, rows), at, 0.001,
                                     wall_time=1.8e9 + at - 1000.0))
    finally:
        writer.close()


def jump(engine: ReplayEngine, screen: ConnPoolScreen, view: DataView, to: float) -> float:
    """Seconds of the fold the first frame after a jump to ``to`` does."""
    engine.seek(to)
    started = time.perf_counter()
    screen.observe(view)
    return time.perf_counter() - started


def measure(path: str) -> Tuple[float, float, float, int]:
    """(t end from the start, then t 50%, then a frame without a jump) in seconds, and the
    number of changes the log holds at the end."""
    engine = ReplayEngine.open(path)
    engine.pause()
    screen, view = ConnPoolScreen(), DataView(engine)
    jump(engine, screen, view, engine.index.start)
    forward = jump(engine, screen, view, engine.index.end)
    changes = len(screen.status_log.changes)
    back = jump(engine, screen, view, engine.index.start + (engine.index.end - engine.index.start) / 2)
    frame = jump(engine, screen, view, engine.now())
    return forward, back, frame, changes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=HOUR, help="length of the generated recordings")
    args = parser.parse_args()
    print(machine())
    forward, back, frame, changes = measure(DEMO_FILE)
    print(f"demo ({changes} changes): t end {forward * 1000:.1f} ms, t 50% {back * 1000:.1f} ms, "
          f"a frame {frame * 1000:.3f} ms (target {TARGET_JUMP_S * 1000:.0f} ms / {TARGET_FRAME_MS} ms)")
    with tempfile.TemporaryDirectory() as folder:
        for backends in (12, 500):
            path = os.path.join(folder, f"pool-{backends}.rec.gz")
            hour_recording(path, backends, args.seconds)
            forward, back, frame, changes = measure(path)
            met = "yes" if max(forward, back) <= TARGET_JUMP_S and frame * 1000 <= TARGET_FRAME_MS else "no"
            print(f"{args.seconds} s, {backends} backends ({changes} changes): t end {forward:.3f} s, "
                  f"t 50% {back:.3f} s, a frame {frame * 1000:.3f} ms "
                  f"(target {TARGET_JUMP_S} s / {TARGET_FRAME_MS} ms): {met}")


if __name__ == "__main__":
    main()
