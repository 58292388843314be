"""The package's import arrows go one way: no module of sessionstore imports, however indirectly,
a module that imports it back (docs/design.md draws the layers this guards).

The graph is read from the source with `ast`: every `import` and `from … import` naming a module
of sessionstore, at module level, inside functions, and under `if TYPE_CHECKING:` alike (a
function-level or type-only import hides a circle from the interpreter, not from the design).
Relative imports are resolved against the importer's package. Importing `a.b.c` runs
`a/b/__init__.py` first, so it is an arrow to the package `a.b` as well, unless that package
encloses the importer (it is then already being imported). No arrow is exempt: a step that needs
the type of a module above it reads it through a small protocol of its own.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Arrow:
    importer: str
    imported: str
    line: int
    typing_only: bool


def modules(package_dir: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted name → (file, is a package) for every module under `package_dir`."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


# The fields that hold statements: an import is a statement, so the walk never enters an expression.
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _imports(statements: Iterable[ast.AST],
             typing_only: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement among `statements` and in the blocks they hold (functions, classes,
    `if`, `try`, `with`, loops, `match`), with whether it is under `if TYPE_CHECKING:` (not its
    `else:`)."""
    for node in statements:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, typing_only
        elif isinstance(node, ast.If) and _names_type_checking(node.test):
            yield from _imports(node.body, True)
            yield from _imports(node.orelse, typing_only)
        else:
            for field in _BODIES:
                block = getattr(node, field, None)
                if block:
                    yield from _imports(block, typing_only)


def _names_type_checking(test: ast.expr) -> bool:
    name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
    return name == "TYPE_CHECKING"


def arrows(package_dir: Path) -> Iterator[Arrow]:
    """Every import of one of the package's modules by another, with its implied package arrows."""
    known = modules(package_dir)
    for name, (path, is_package) in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node, typing_only in _imports(tree.body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = ".".join(here[: len(here) - node.level + 1]) if node.level else ""
                source = ".".join(part for part in (base, node.module or "") if part)
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                           for alias in node.names]
            for target in targets:
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target not in known:
                    continue  # outside the package
                parts = target.split(".")
                for depth in range(1, len(parts) + 1):
                    imported = ".".join(parts[:depth])
                    encloses = name == imported or name.startswith(imported + ".")
                    if imported in known and (depth == len(parts) or not encloses) and imported != name:
                        yield Arrow(name, imported, node.lineno, typing_only)


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def graph(found: Iterable[Arrow]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for arrow in found:
        edges.setdefault(arrow.importer, set()).add(arrow.imported)
    return edges


def circle(found: Sequence[Arrow], component: Sequence[str]) -> list[Arrow]:
    """One shortest circle through `component`'s first module, as the arrows that close it (each
    with its line): what a reader has to cut."""
    members = set(component)
    by_importer: dict[str, list[Arrow]] = {}
    for arrow in found:
        if arrow.importer in members and arrow.imported in members:
            by_importer.setdefault(arrow.importer, []).append(arrow)
    start = component[0]
    came: dict[str, Arrow] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for arrow in sorted(by_importer.get(module, ()), key=lambda a: (a.imported, a.line)):
                if arrow.imported == start:
                    path = [arrow]
                    while path[0].importer != start:
                        path.insert(0, came[path[0].importer])
                    return path
                if arrow.imported not in came:
                    came[arrow.imported] = arrow
                    following.append(arrow.imported)
        frontier = following
    raise AssertionError(f"{component} is no circle")  # a strongly connected component always has one


def describe(found: Sequence[Arrow], components: Iterable[Sequence[str]]) -> str:
    lines = []
    for component in components:
        path = circle(found, component)
        lines.append(" -> ".join(f"{a.importer}:{a.line}{' (TYPE_CHECKING)' if a.typing_only else ''}"
                                 for a in path) + f" -> {path[0].importer}")
        lines.append(f"    (each of {', '.join(component)} imports the others, however indirectly)")
    return "\n".join(lines)


@functools.cache
def sessionstore_arrows() -> tuple[Arrow, ...]:
    return tuple(arrows(ROOT / "sessionstore"))


def test_sessionstore_has_no_import_cycles() -> None:
    found = sessionstore_arrows()
    assert len(found) > 300  # the walk sees the package's imports
    circles = cycles(graph(found))
    assert not circles, "import cycles (cut one arrow of each):\n" + describe(found, circles)


def test_the_walk_finds_hidden_and_package_cycles(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "def f():\n    from .b import g  # a function-level import still counts\n",
        "b.py": "from .a import f\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n",
        "d.py": "from . import c\n",
        "e.py": "from .sub.leaf import x  # runs sub/__init__.py, which imports e\n",
        "sub/__init__.py": "from ..e import y\n",
        "sub/leaf.py": "from . import helper\n",
        "sub/helper.py": "",
        "x.py": "import pkg.y\n",
        "y.py": "import json\n\nfrom pkg import z\n",
        "z.py": "from .x import *\nfrom .a import f  # a way out, not back\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    found = list(arrows(package))
    assert [a.typing_only for a in found if (a.importer, a.imported) == ("pkg.c", "pkg.d")] == [True]
    assert ("pkg.sub.leaf", "pkg.sub.helper") in {(a.importer, a.imported) for a in found}
    assert ("pkg.sub.leaf", "pkg.sub") not in {(a.importer, a.imported) for a in found}  # its own package
    assert ("pkg.x", "pkg.y") in {(a.importer, a.imported) for a in found}  # absolute, by its full name
    circles = sorted(cycles(graph(found)))
    assert circles == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"], ["pkg.e", "pkg.sub"], ["pkg.x", "pkg.y", "pkg.z"]]
    assert describe(found, circles[1:2] + circles[3:]).splitlines() == [
        "pkg.c:3 (TYPE_CHECKING) -> pkg.d:1 -> pkg.c",
        "    (each of pkg.c, pkg.d imports the others, however indirectly)",
        "pkg.x:1 -> pkg.y:3 -> pkg.z:1 -> pkg.x",
        "    (each of pkg.x, pkg.y, pkg.z imports the others, however indirectly)",
    ]


def test_every_package_ships_in_the_wheel() -> None:
    """setuptools lists packages explicitly: a new package directory must be added to pyproject.toml."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {name for name, (_, is_package) in modules(ROOT / "sessionstore").items() if is_package}
    assert on_disk - listed == set()
