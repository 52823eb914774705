"""How soon the first full screen is up: the real program started in a pseudo-terminal against
the ProxySQL test double (in a child process), timed from the launch until ConnPool shows its
backends' rows (and, for the record, until the frame first appears).

    python3 -m tests.bench_first_screen [--runs 9] [--original "PYTHON PATH/proxytop"]

``--original`` times the original proxytop the same way, in runs taken in turn with ours
(see docs/performance.md for how to install it). Target: rows within 0.3 s of launch.
"""
from __future__ import annotations

import argparse
import shlex
import statistics
import tempfile
import time
from typing import List, Optional, Sequence

from tests.benchmark import TYPICAL, DoubleProcess
from tests.terminal import Terminal

TARGET_S = 0.3
ROWS = "ONLINE"  # a backend's status: the pool's rows are on the screen
FRAME = "ConnPool"  # our tab bar (the original shows its own title)


def time_one(argv: Sequence[str], command: Optional[Sequence[str]], frame: str) -> tuple:
    """(seconds to the first frame, seconds to the rows) of one launch."""
    with tempfile.TemporaryDirectory(prefix="proxytop-bench-state-") as state:
        started = time.monotonic()
        term = Terminal(argv, cols=160, rows=45, env={"XDG_STATE_HOME": state}, command=command)
        try:
            framed = rows = None
            deadline = started + 20
            while rows is None and time.monotonic() < deadline:
                text = term.text()
                now = time.monotonic() - started
                if framed is None and frame in text:
                    framed = now
                if ROWS in text:
                    rows = now
                    framed = framed if framed is not None else now
                time.sleep(0.005)
            return framed, rows
        finally:
            term.close()


def median(values: List[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--original", help="command that runs the original proxytop script")
    args = parser.parse_args()
    double = DoubleProcess(TYPICAL).start()
    try:
        ours = ["-P", str(double.port), "--no-discover", "--screen", "connpool", "-d", "1"]
        programs = [("proxytop", ours, None, FRAME)]
        if args.original:
            programs.append(("original", ["-P", str(double.port)], shlex.split(args.original), "Conns"))
        results = {name: ([], []) for name, *_ in programs}
        for _ in range(args.runs):
            for name, argv, command, frame in programs:
                framed, rows = time_one(argv, command, frame)
                results[name][0].append(framed)
                results[name][1].append(rows)
        for name, (frames, rows) in results.items():
            first, full = median(frames), median(rows)
            spread = [r for r in rows if r is not None]
            verdict = "" if name != "proxytop" else ("  met" if full is not None and full <= TARGET_S else "  MISSED")
            print(f"{name:<9} frame {first if first is None else f'{first:.2f} s'}  rows "
                  f"{full if full is None else f'{full:.2f} s'} (median of {len(rows)}, "
                  f"{min(spread, default=0):.2f}-{max(spread, default=0):.2f})  target {TARGET_S} s{verdict}")
    finally:
        double.stop()


if __name__ == "__main__":
    main()
