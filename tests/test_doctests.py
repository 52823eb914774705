"""The worked examples in the docstrings are tests too: every module of proxytop is searched."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import proxytop
import proxytop.collectors
import proxytop.screens


def module_names():
    # screens/ and collectors/ are installed inside proxytop but sit beside it in a checkout
    packages = (proxytop, proxytop.screens, proxytop.collectors)
    return sorted({info.name for package in packages
                   for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")})


def test_modules_are_found():
    names = module_names()
    assert "proxytop.screens.table" in names and "proxytop.collectors.innodb" in names


@pytest.mark.parametrize("name", module_names())
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
