"""The package's import arrows go one way: no module of sessionstore imports, however indirectly,
a module that imports it back.

The graph is read from the source with `ast`: every `import` and `from … import` naming a module
of sessionstore, at module level, inside functions, and under `if TYPE_CHECKING:` alike (a
function-level import hides a circle from the interpreter, not from the design). Importing
`a.b.c` runs `a/b/__init__.py` first, so it is an arrow to the package `a.b` as well, unless that
package encloses the importer (it is then already being imported). A few type-only arrows that
close a circle are allowed below, each with its reason; nothing else may.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (importer, imported): why the arrow stays. Each must exist and be under `if TYPE_CHECKING:`.
ALLOWED: Mapping[tuple[str, str], str] = {
    ("sessionstore.projection.render", "sessionstore.projection.context"):
        "type only: render_openai(view: ContextView) is what ContextView.to_openai() calls",
    ("sessionstore.projection.calibration", "sessionstore.projection.context"):
        "type only: the calibration functions read a ContextView, whose calibrations property calls them",
}


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


def _typing_only_nodes(tree: ast.Module) -> set[int]:
    """ids of the statements under `if TYPE_CHECKING:` (not its `else:`)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                guarded.update(id(child) for statement in node.body for child in ast.walk(statement))
    return guarded


def arrows(package_dir: Path) -> Iterator[Arrow]:
    """Every import of one of the package's modules by another, with its implied package arrows."""
    known = modules(package_dir)
    for name, (path, is_package) in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        guarded = _typing_only_nodes(tree)
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[: len(here) - node.level + 1]) if node.level else ""
                source = ".".join(part for part in (base, node.module or "") if part)
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                           for alias in node.names]
            else:
                continue
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
                        yield Arrow(name, imported, node.lineno, id(node) in guarded)


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


def graph(found: Iterator[Arrow], allowed: Mapping[tuple[str, str], str] = ALLOWED) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for arrow in found:
        if (arrow.importer, arrow.imported) not in allowed:
            edges.setdefault(arrow.importer, set()).add(arrow.imported)
    return edges


@functools.cache
def sessionstore_arrows() -> tuple[Arrow, ...]:
    return tuple(arrows(ROOT / "sessionstore"))


def test_sessionstore_has_no_import_cycles() -> None:
    found = sessionstore_arrows()
    assert len(found) > 300  # the walk sees the package's imports
    circles = cycles(graph(iter(found)))
    lines = [f"{a.importer}:{a.line} -> {a.imported}" for a in found
             for circle in circles if a.importer in circle and a.imported in circle]
    assert not circles, "import cycles:\n" + "\n".join(lines)


def test_allowed_arrows_exist_and_are_type_only() -> None:
    found = sessionstore_arrows()
    for pair, reason in ALLOWED.items():
        matching = [a for a in found if (a.importer, a.imported) == pair]
        assert matching, f"{pair} is allowed ({reason}) but no longer imported: drop it from ALLOWED"
        assert all(a.typing_only for a in matching), f"{pair} must stay under `if TYPE_CHECKING:`"


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
    }
    for name, text in files.items():
        (package / name).write_text(text)
    found = list(arrows(package))
    assert [a.typing_only for a in found if (a.importer, a.imported) == ("pkg.c", "pkg.d")] == [True]
    assert ("pkg.sub.leaf", "pkg.sub.helper") in {(a.importer, a.imported) for a in found}
    assert ("pkg.sub.leaf", "pkg.sub") not in {(a.importer, a.imported) for a in found}  # its own package
    assert sorted(cycles(graph(iter(found), {}))) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"], ["pkg.e", "pkg.sub"]]
    assert sorted(cycles(graph(iter(found), {("pkg.c", "pkg.d"): "type only"}))) == [["pkg.a", "pkg.b"],
                                                                                     ["pkg.e", "pkg.sub"]]


def test_every_package_ships_in_the_wheel() -> None:
    """setuptools lists packages explicitly: a new package directory must be added to pyproject.toml."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {name for name, (_, is_package) in modules(ROOT / "sessionstore").items() if is_package}
    assert on_disk - listed == set()
