"""The core's modules import each other without a cycle — counting imports made only for type
checking too, so each module can be read after the ones it names — and the core imports no
adapter, pack or web framework of tether's (``tether.errors`` aside)."""

from __future__ import annotations

import ast
from pathlib import Path

import tether.core

CORE = Path(tether.core.__file__).parent


def imports_of(path: Path) -> set[str]:
    """The ``tether.*`` modules ``path`` imports, wherever in the file (``if TYPE_CHECKING`` too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "tether.core":  # ``from tether.core import window``
                names.update(f"tether.core.{a.name}" for a in node.names)
            else:
                names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return {n for n in names if n == "tether" or n.startswith("tether.")}


def core_graph() -> dict[str, set[str]]:
    modules = {f"tether.core.{p.stem}": p for p in CORE.glob("*.py") if p.stem != "__init__"}
    return {name: imports_of(path) & modules.keys() for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the path that closes it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_core_has_no_import_cycle() -> None:
    graph = core_graph()
    assert graph.get("tether.core.runtime"), "the graph was read"
    assert find_cycle(graph) is None


def test_core_imports_nothing_of_tether_outside_itself_but_errors() -> None:
    outside = {
        f"{p.name}: {name}"
        for p in CORE.glob("*.py")
        for name in imports_of(p)
        if not name.startswith("tether.core") and name != "tether.errors"
    }
    assert outside == set()


def test_every_core_module_is_under_400_lines() -> None:
    long = {p.name: n for p in CORE.glob("*.py") if (n := len(p.read_text(encoding="utf-8").splitlines())) >= 400}
    assert long == {}
