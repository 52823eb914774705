"""proxytop uses only the public API of its dependencies.

A release of PyMySQL or npyscreen may rename anything whose name starts with an underscore; code
that reads, writes or overrides such a name breaks on every user's machine at once. This scans
proxytop's source (proxytop/, screens/, collectors/) for:

- an import of a dependency's private module (``pymysql._auth``) or private name;
- an attribute of a dependency's module that starts with an underscore (``npyscreen._x``);
- any ``obj._name`` on an object that is not ``self`` or ``cls`` where ``_name`` is one of the
  private names the dependencies define (``conn._sock``, ``parser._actions``, ``app._max_physical``);
- a class that derives from a dependency's class and defines or calls a private name on
  ``self`` that the dependency has (an overridden ``_create_ssl_ctx``, ``self._max_physical()``).
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("proxytop", "screens", "collectors")
# Third-party packages proxytop imports, and the standard library modules whose classes it extends.
DEPENDENCIES = ("pymysql", "npyscreen", "psutil", "rich", "myloginpath", "curses", "argparse")
PRIVATE = re.compile(r"^_[A-Za-z0-9]\w*$")  # _name, not __dunder__ (those are the language's)


def source_files() -> List[Path]:
    return sorted(p for d in SOURCES for p in (ROOT / d).rglob("*.py"))


def dependency_files(name: str) -> List[Path]:
    module = importlib.import_module(name)
    path = Path(module.__file__)
    return sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]


def private_names(name: str) -> Set[str]:
    """Every private name a dependency defines: its functions, methods, classes and the
    attributes it sets on ``self``."""
    names: Set[str] = set()
    for path in dependency_files(name):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                candidate = node.name
            elif isinstance(node, ast.Attribute):
                candidate = node.attr
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                candidate = node.id
            else:
                continue
            if PRIVATE.match(candidate):
                names.add(candidate)
    return names


def _root(name: str) -> str:
    return name.split(".")[0]


class Finder(ast.NodeVisitor):
    def __init__(self, path: Path, private: Dict[str, Set[str]]):
        self.path = path
        self.private = private
        self.all_private = set().union(*private.values())
        self.modules: Dict[str, str] = {}  # local name -> dependency module it stands for
        self.dependency_classes: Set[str] = set()  # local names bound to a dependency's attribute
        self.found: List[str] = []
        self.class_stack: List[str] = []  # dependency a class derives from, "" if none

    def report(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{self.path.relative_to(ROOT)}:{node.lineno}: {what}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _root(alias.name) in DEPENDENCIES:
                if any(PRIVATE.match(part) for part in alias.name.split(".")):
                    self.report(node, f"imports private module {alias.name}")
                local = alias.asname or _root(alias.name)
                self.modules[local] = alias.name if alias.asname else _root(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0 and _root(module) in DEPENDENCIES:
            if any(PRIVATE.match(part) for part in module.split(".")):
                self.report(node, f"imports from private module {module}")
            for alias in node.names:
                if PRIVATE.match(alias.name):
                    self.report(node, f"imports private name {alias.name} from {module}")
                self.dependency_classes.add(alias.asname or alias.name)
                self.modules.setdefault(alias.asname or alias.name, f"{module}.{alias.name}")

    def _dependency_of(self, expr: ast.AST) -> str:
        """The dependency an expression names (``npyscreen.FormBaseNew`` -> npyscreen), or ''."""
        while isinstance(expr, ast.Attribute):
            expr = expr.value
        if isinstance(expr, ast.Name) and expr.id in self.modules:
            return _root(self.modules[expr.id])
        return ""

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = [self._dependency_of(base) for base in node.bases]
        self.class_stack.append(next((b for b in bases if b), ""))
        self.generic_visit(node)
        self.class_stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        dependency = self.class_stack[-1] if self.class_stack else ""
        if dependency and PRIVATE.match(node.name) and node.name in self.private.get(dependency, ()):
            self.report(node, f"overrides {dependency}'s private method {node.name}")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if PRIVATE.match(node.attr):
            owner = node.value
            dependency = self._dependency_of(owner)
            if dependency:
                self.report(node, f"uses {dependency}'s private name {node.attr}")
            elif isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                inherited = self.class_stack[-1] if self.class_stack else ""
                if inherited and node.attr in self.private.get(inherited, ()):
                    self.report(node, f"uses {inherited}'s private name {node.attr} on self")
            elif node.attr in self.all_private:
                self.report(node, f"reaches into another object's private name {node.attr}")
        self.generic_visit(node)


def violations() -> Iterator[str]:
    private = {name: private_names(name) for name in DEPENDENCIES}
    for path in source_files():
        finder = Finder(path, private)
        finder.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        yield from finder.found


def test_no_private_name_of_a_dependency_is_used():
    found = list(violations())
    assert not found, "private names of dependencies used:\n" + "\n".join(found)


@pytest.mark.parametrize("snippet, expected", [
    ("import pymysql\npymysql._auth.x()", "uses pymysql's private name _auth"),
    ("from pymysql import _auth", "imports private name _auth"),
    ("import pymysql.connections\nclass C(pymysql.connections.Connection):\n"
     "    def _create_ssl_ctx(self, p): pass", "overrides pymysql's private method _create_ssl_ctx"),
    ("def f(conn):\n    return conn._sock", "reaches into another object's private name _sock"),
    ("import npyscreen\nclass F(npyscreen.FormBaseNew):\n    def f(self):\n        self._max_physical()",
     "uses npyscreen's private name _max_physical on self"),
    ("def f(parser):\n    return parser._actions", "reaches into another object's private name _actions"),
])
def test_the_scan_finds_each_kind_of_use(snippet, expected):
    path = ROOT / "proxytop" / "example.py"  # named as a source file; parsed from the snippet
    finder = Finder(path, {name: private_names(name) for name in ("pymysql", "npyscreen", "argparse")})
    finder.visit(ast.parse(snippet))
    assert any(expected in line for line in finder.found), finder.found


def test_our_own_private_names_on_self_are_fine():
    finder = Finder(ROOT / "proxytop" / "example.py", {"pymysql": private_names("pymysql")})
    finder.visit(ast.parse("class Mine:\n    def f(self):\n        self._sock = 1\n        return self._sock"))
    assert finder.found == []

