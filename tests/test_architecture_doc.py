"""docs/architecture.md's tables match the tree: the folder table lists every package under
``src/tether`` and nothing that does not exist, and the pack-surface table lists exactly what
``tether.pack`` exports."""

from __future__ import annotations

import re
from pathlib import Path

import tether.pack

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "tether"
DOC = ROOT / "docs" / "architecture.md"


def table_after(header: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with ``header``."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_folder_table_lists_every_package_and_only_what_exists() -> None:
    listed = [re.fullmatch(r"`([^`]+)`", row[0]) for row in table_after("| folder (`src/tether/`)")]
    names = [m.group(1) for m in listed if m]
    assert len(names) == len(listed), "every row names one folder or file in backticks"
    packages = {p.parent.name + "/" for p in SRC.glob("*/__init__.py")}
    assert {n for n in names if n.endswith("/")} == packages
    missing = [n for n in names if not (SRC / n.rstrip("/")).exists()]
    assert not missing, f"the folder table lists what is not in src/tether: {missing}"


def test_the_pack_surface_table_lists_exactly_what_tether_pack_exports() -> None:
    cells = " ".join(row[1] for row in table_after("| for | names |"))
    documented = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", cells))
    exported = set(tether.pack.__all__)
    assert exported - documented == set(), "exported by tether.pack but not in the table"
    assert documented - exported == set(), "in the table but not exported by tether.pack"
