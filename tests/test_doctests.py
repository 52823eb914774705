"""The worked examples in the pure modules' docstrings are tests too."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "proxytop.metrics.rates",
    "proxytop.metrics.units",
    "proxytop.polling.engine",
    "proxytop.recordings.playback",
    "proxytop.polling.connection",
    "proxytop.config.options",
    "proxytop.polling.textrows",
    "proxytop.polling.columns",
    "proxytop.collectors.proxysql_stats",
    "proxytop.collectors.folded",
    "proxytop.collectors.base",
    "proxytop.collectors.baseline_file",
    # the drawing path and the InnoDB fleet: cell texts kept by value, segments joined into
    # runs, INNODB_METRICS' select list, the fleet's pace
    "proxytop.screens.table",
    "proxytop.ui.app",
    "proxytop.collectors.innodb",
    "proxytop.collectors.innodb_fleet",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
