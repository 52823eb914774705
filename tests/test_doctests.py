"""The worked examples in the pure modules' docstrings are tests too."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "proxytop.rates",
    "proxytop.units",
    "proxytop.engine",
    "proxytop.playback",
    "proxytop.connection",
    "proxytop.options",
    "proxytop.textrows",
    "proxytop.columns",
    "proxytop.collectors.proxysql_stats",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
