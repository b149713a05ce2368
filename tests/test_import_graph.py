"""The import graph, beside the pack-surface test (which holds packs to ``tether.pack``): tether
itself names no pack, and ``core/`` has no import cycle. Every module under ``src/tether`` is
parsed; imports inside functions count for the first rule (a lazy import is still a dependency)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_pack_surface import imported_tether_modules

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "tether"
PACKAGES = ("tether.packs", "tether.erp_demo")
# tether eval and tether demo drive the demo ERP and check its known facts (users, customers,
# forms): they are its clients, shipped with it, not part of the runtime
CLIENTS_OF_THE_DEMO = ("evals", "demo.py")


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_pack(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in PACKAGES)


def test_tether_imports_no_pack() -> None:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        first = path.relative_to(SRC).parts[0]
        if first in ("packs", "erp_demo", *CLIENTS_OF_THE_DEMO):
            continue
        for line, name in imported_tether_modules(path.read_text(encoding="utf-8")):
            if _is_pack(name):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not bad, "only packs import packs (tether loads them by name from settings):\n" + "\n".join(bad)


def _module_level_imports(source: str) -> list[str]:
    """Imports that run when the module loads: top level, not under ``if TYPE_CHECKING``."""
    found: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.extend(f"{node.module}.{a.name}" for a in node.names)
                found.append(node.module)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)

    visit(ast.parse(source).body)
    return found


def core_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in (SRC / "core").rglob("*.py")}
    return {
        name: {m for m in _module_level_imports(path.read_text(encoding="utf-8")) if m in modules and m != name}
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle as a path (first node repeated at the end), or [] when the graph has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state and (cycle := walk(node)):
            return cycle
    return []


def test_core_has_no_import_cycle() -> None:
    graph = core_graph()
    assert "tether.core.loop" in graph
    cycle = find_cycle(graph)
    assert not cycle, "an import cycle in core/: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []
    source = "import tether.core.x\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tether.core.y\n"
    assert "tether.core.x" in _module_level_imports(source)
    assert "tether.core.y" not in _module_level_imports(source)
