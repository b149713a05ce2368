"""The project documents itself: no file points outside the repository, and every relative link
in the Markdown pages reaches a file that is in it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\.\./shared|\bshared/(?:DESIGN|bench|seeds)|\bseeds/\d|/work/|\bDESIGN §")  # no DESIGN file here
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [ROOT / line for line in out.splitlines() if line and (ROOT / line).is_file()]


def test_no_file_points_outside_the_repository() -> None:
    bad = []
    for path in _tracked():
        if path.suffix not in (".py", ".md", ".txt", ".toml", ".sh", ".yml", ".yaml", ".mako", "") or path == Path(
            __file__
        ):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                bad.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not bad, "files point outside the repository:\n" + "\n".join(bad)


def test_relative_links_in_markdown_resolve_inside_the_repository() -> None:
    bad = []
    for page in [p for p in _tracked() if p.suffix == ".md"]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            resolved = (page.parent / target.split("#", 1)[0]).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                bad.append(f"{page.relative_to(ROOT)}: {target}")
    assert not bad, "links that leave the repository or reach nothing:\n" + "\n".join(bad)


def test_the_readme_links_the_architecture() -> None:
    assert "](docs/architecture.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
