"""The README tells a user what the program does: every option of `proxytop --help` and every
key of the key table is in it, and it stays short enough to read (450 lines)."""
from __future__ import annotations

from pathlib import Path

from proxytop import options
from proxytop.screens import keys

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_every_option_of_the_help_is_in_the_readme():
    missing = [option for action in options.build_parser().actions for option in action.option_strings
               if option.startswith("--") and f"`{option}" not in README]
    assert missing == []


def test_every_global_key_is_in_the_readme():
    shown = {"KEY_UP": "↑", "KEY_DOWN": "↓", "KEY_PPAGE": "PgUp", "KEY_NPAGE": "PgDn", "KEY_HOME": "Home",
             "KEY_END": "End", "TAB": "Tab", "KEY_BTAB": "Shift-Tab", "ENTER": "Enter", "ESC": "Esc",
             "^L": "Ctrl-L", "^C": "Ctrl-C", " ": "Space"}
    missing = [name for binding in keys.GLOBAL_BINDINGS for name in binding.keys
               if name not in "1234567890" and shown.get(name, f"`{name}`") not in README]
    assert missing == []


def test_the_readme_is_short():
    assert len(README.splitlines()) <= 450
