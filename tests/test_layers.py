"""The layers of the code hold: import-linter checks the contracts in .importlinter, and no
import hides inside a function unless it says why.

screens/ and collectors/ install as proxytop.screens and proxytop.collectors, but in the
checkout they sit beside proxytop/; import-linter reads a package from one directory, so the
check runs on a tree of links that has them where they install.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("proxytop", "screens", "collectors")
# A function-local import is allowed only with this mark on its line, followed by why (start-up
# time, an optional dependency): an import moved into a function to dodge a cycle is the cycle
# still there, hidden.
LAZY = "# lazy:"


def package_tree(where: Path) -> Path:
    """``where``/proxytop: links to proxytop/'s entries, plus screens and collectors."""
    package = where / "proxytop"
    package.mkdir()
    for entry in (ROOT / "proxytop").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "screens").symlink_to(ROOT / "screens")
    (package / "collectors").symlink_to(ROOT / "collectors")
    return where


def test_import_contracts_are_kept(tmp_path):
    pytest.importorskip("importlinter", reason="import-linter installs on Python 3.11 and newer")
    tree = package_tree(tmp_path)
    lint = Path(sys.executable).with_name("lint-imports")
    env = dict(os.environ, PYTHONPATH=str(tree))
    result = subprocess.run([str(lint), "--no-cache", str(ROOT / ".importlinter")],
                            cwd=tree, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def function_local_imports():
    for directory in SOURCES:
        for path in sorted((ROOT / directory).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines()
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for inner in ast.walk(node):
                        if isinstance(inner, (ast.Import, ast.ImportFrom)) and LAZY not in lines[inner.lineno - 1]:
                            yield f"{path.relative_to(ROOT)}:{inner.lineno}: {lines[inner.lineno - 1].strip()}"


def test_imports_are_at_the_top_unless_they_say_why():
    found = sorted(set(function_local_imports()))
    assert not found, f"imports inside functions without '{LAZY} <why>':\n" + "\n".join(found)
