"""The always-on recorder's cost: CPU per second and MB per hour of the real ``proxytop --daemon``.

    python3 -m tests.bench_daemon                  # 60 s window, the default screens
    python3 -m tests.bench_daemon --seconds 120 --screens connpool,queries

The real installed ``proxytop --daemon --record-dir`` runs at ``-d 1`` with its default screens
against the ProxySQL test double in a child process (tests.benchmark's generated data at
typical sizes: 12 backends, 40 rules, 150 sessions; its work is not counted) and one throw-away
MariaDB for the Servers screen (``--mysql``, ``--no-discover``: the double's backends are not
reached). After a settling time (the first minute's one-off work: the first readings of every
table, the first detail readings written, the start-up line with the MB per hour), the
process's CPU (utime + stime of every thread, psutil) and the bytes its directory grew by are
read at the start and the end of a window of at least 60 s. Printed: ms CPU per second (target
5) and MB per hour, beside the recorder's own estimate from its first minute.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Optional, Sequence

import psutil

from tests.benchmark import TYPICAL, DoubleProcess, MySQLFleet, machine
from tests.terminal import proxytop_command

TARGET_MS_PER_S = 5.0
SETTLE = 75.0  # past the first minute: its estimate printed, the detail readings on their pace


def directory_bytes(path: str) -> int:
    total = 0
    for name in os.listdir(path):
        if name.endswith(".rec.gz"):
            try:
                total += os.path.getsize(os.path.join(path, name))
            except OSError:
                pass
    return total


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the measured window (at least 60)")
    parser.add_argument("--screens", help="--screens for the recorder (default: its own default set)")
    args = parser.parse_args(argv)
    seconds = max(60.0, args.seconds)
    print(f"machine: {machine()}", flush=True)
    double = DoubleProcess(TYPICAL).start()
    fleet = MySQLFleet().start()
    directory = tempfile.mkdtemp(prefix="proxytop-bench-daemon-")
    command = list(proxytop_command()) + ["--daemon", "--record-dir", directory, "-P", str(double.port), "-d", "1",
                                          "--no-discover"]
    if fleet.server is not None:
        command += fleet.args(1)
    else:
        print(f"  no MariaDB for the Servers screen ({fleet.problem})", flush=True)
    if args.screens:
        command += ["--screens", args.screens]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        print(f"settling {SETTLE:g} s, then measuring {seconds:g} s ...", flush=True)
        time.sleep(SETTLE)
        watched = psutil.Process(process.pid)
        before, bytes_before, started = watched.cpu_times(), directory_bytes(directory), time.monotonic()
        time.sleep(seconds)
        after, bytes_after, elapsed = watched.cpu_times(), directory_bytes(directory), time.monotonic() - started
        used = (after.user + after.system) - (before.user + before.system)
        ms_per_s = 1000.0 * used / elapsed
        mb_per_hour = (bytes_after - bytes_before) / elapsed * 3600 / 1e6
        process.terminate()
        _, err = process.communicate(timeout=30)
        said = [line for line in err.splitlines() if "MB per hour" in line and "measured" in line]
        ok = ms_per_s <= TARGET_MS_PER_S
        print(f"recorder at -d 1 ({args.screens or 'default screens'}), {elapsed:.0f} s window:")
        print(f"  CPU {ms_per_s:.2f} ms per second (target {TARGET_MS_PER_S:g}: {'met' if ok else 'NOT met'})")
        print(f"  recorded {mb_per_hour:.2f} MB per hour; its own estimate: {said[0] if said else '(none printed)'}")
        print(f"  exit status on SIGTERM: {process.returncode}")
        return 0 if ok else 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        double.stop()
        fleet.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
