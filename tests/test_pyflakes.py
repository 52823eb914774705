"""No unused import, undefined name or unused variable in proxytop (pyflakes): dead code goes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pyflakes_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "pyflakes", "proxytop", "screens", "collectors"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
