"""Benchmark of IOstat's space view and the disk set-up: ``python -m tests.bench_space``.

Prints each figure beside its target:
- one ``host.space`` reading (mountinfo, the mount of each path, psutil.disk_usage and statvfs
  of each filesystem) for a server writing to 7 directories on 2 filesystems of this host, as
  the header's alarm takes it every 10 s on every screen: CPU per reading;
- the queue settings of every block device of this host (``/sys/block/*/queue``), read by the
  disk collector once a minute: CPU per round;
- the header's space alarm and the space view's rows, per frame.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

from proxytop.collectors.filesystems import MAP_EVERY, Filesystems
from proxytop.polling.devices import BlockDevices
from proxytop.screens.space import space_alarm, space_rows
from tests.benchmark import machine, ms

TARGET_READING_MS = 2.0  # every 10 s: a hundredth of a percent of a core
TARGET_QUEUES_MS = 5.0  # every minute
TARGET_FRAME_MS = 0.1  # the alarm is worked out for every frame drawn


def cpu_per(call, rounds: int) -> float:
    started = time.process_time()
    for _ in range(rounds):
        call()
    return (time.process_time() - started) / rounds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args(argv)
    print(machine())
    base = tempfile.mkdtemp(prefix="proxytop-bench-space-")
    paths = {"data": [base], "redo": [base], "binlog": [base], "relay": [base], "undo": [base],
             "tmp": ["/tmp", "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"]}
    clock = [0.0]
    collector = Filesystems(paths=lambda: {"127.0.0.1:3306": paths}, clock=lambda: clock[0])

    def reading():
        clock[0] += 10.0  # the alarm's pace: the mounts are found again every MAP_EVERY s
        return collector.collect()

    snapshot = reading()
    per_reading = cpu_per(reading, args.rounds)
    print(f"host.space reading, {len(snapshot.filesystems)} filesystems, paths mapped every {MAP_EVERY:g} s: "
          f"{ms(per_reading):.3f} ms CPU (target {TARGET_READING_MS} ms)")

    devices = BlockDevices()
    names = sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []
    per_round = cpu_per(lambda: [devices.queue_settings(n) for n in names], max(1, args.rounds // 10))
    print(f"queue settings of {len(names)} block devices: {ms(per_round):.3f} ms CPU per round (target {TARGET_QUEUES_MS} ms)")

    per_frame = cpu_per(lambda: (space_alarm(snapshot, 90.0, 60.0), space_rows(snapshot, {})), args.rounds)
    print(f"space alarm and rows per frame: {ms(per_frame):.4f} ms CPU (target {TARGET_FRAME_MS} ms)")
    os.rmdir(base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
