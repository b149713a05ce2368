"""A pack imports nothing of tether's but ``tether.pack`` (and its own package), so the core can
change behind it. Every module under ``src/tether/packs/``, ``src/tether/erp_demo/`` (the demo
ERP, loaded as a pack) and ``examples/`` is parsed: a new pack (``src/tether/packs/erp/``, say) is
held to this the moment its files exist."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKS = ROOT / "src" / "tether" / "packs"
ERP_DEMO = ROOT / "src" / "tether" / "erp_demo"
EXAMPLES = ROOT / "examples"
SURFACE = "tether.pack"


def _modules() -> list[Path]:
    return sorted([*PACKS.rglob("*.py"), *ERP_DEMO.rglob("*.py"), *EXAMPLES.rglob("*.py")])


def own_package(path: Path) -> str | None:
    """``tether.packs.<name>`` for a module of that pack; ``tether.packs`` for the folder's own
    ``__init__``; ``tether.erp_demo`` for the demo ERP's; ``None`` for the examples (no tether package)."""
    if path.is_relative_to(ERP_DEMO):
        return "tether.erp_demo"
    if not path.is_relative_to(PACKS):
        return None
    parts = path.relative_to(PACKS).parts
    return "tether.packs" if len(parts) == 1 else f"tether.packs.{parts[0]}"


def _allowed(name: str, own: str | None) -> bool:
    if name != "tether" and not name.startswith("tether."):
        return True  # not tether's
    if name == SURFACE:
        return True
    return own is not None and (name == own or name.startswith(own + "."))


def imported_tether_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) for every import that names a module: ``import x``, ``from x import y``
    (``from tether import pack`` names ``tether.pack``), and ``importlib.import_module("x")`` /
    ``__import__("x")`` with a literal name. Relative imports stay inside the package."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "tether":
                found += [(node.lineno, f"tether.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def forbidden(source: str, own: str | None) -> list[tuple[int, str]]:
    return [(line, name) for line, name in imported_tether_modules(source) if not _allowed(name, own)]


def test_there_are_packs_to_check() -> None:
    modules = [p.relative_to(ROOT).parts for p in _modules()]
    assert any(parts[:4] == ("src", "tether", "packs", "finance_cs") for parts in modules)
    assert any(parts[:3] == ("src", "tether", "erp_demo") for parts in modules)
    assert any(parts[0] == "examples" for parts in modules)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_pack_imports_only_the_pack_surface(path: Path) -> None:
    bad = forbidden(path.read_text(encoding="utf-8"), own_package(path))
    where = path.relative_to(ROOT)
    assert not bad, "a pack may import only tether.pack of tether's modules:\n" + "\n".join(
        f"{where}:{line}: {name}" for line, name in bad
    )


def test_the_check_sees_every_kind_of_import() -> None:
    assert own_package(PACKS / "erp" / "tools" / "forms.py") == "tether.packs.erp"
    assert own_package(EXAMPLES / "pack.py") is None
    assert own_package(ERP_DEMO / "db.py") == "tether.erp_demo"
    source = (
        "import tether.core.tools\n"
        "from tether.store.database import normalize_url\n"
        "from tether import errors, pack\n"
        "from tether.pack import tool\n"
        "from tether.packs.erp.forms import F\n"
        "from tether.packs.finance_cs import data\n"
        "from . import sibling\n"
        "import importlib, sqlalchemy\n"
        "importlib.import_module('tether.app.auth')\n"
        "def later():\n"
        "    from tether.models.planner import render\n"
    )
    names = [name for _, name in forbidden(source, "tether.packs.erp")]
    assert names == [
        "tether.core.tools",
        "tether.store.database",
        "tether.errors",
        "tether.packs.finance_cs",
        "tether.app.auth",
        "tether.models.planner",
    ]


def test_importing_the_pack_surface_does_not_load_the_web_framework() -> None:
    """A pack's tools and CLI commands import ``tether.pack`` without FastAPI; ``IdentityDep``
    (a FastAPI dependency) loads it on first use, for a pack's routes."""
    probe = (
        "import sys, tether.pack\n"
        "print(sorted(m for m in ('fastapi', 'starlette') if m in sys.modules))\n"
        "tether.pack.IdentityDep\n"
        "print('fastapi' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True"]
