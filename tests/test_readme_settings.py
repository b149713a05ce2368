"""The README's configuration tables list every setting tether and the finance pack read."""

from __future__ import annotations

import re
from pathlib import Path

from tether.packs.finance_cs.settings import FinanceSettings
from tether.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _documented(prefix: str) -> set[str]:
    names: set[str] = set()
    for line in README.splitlines():
        if not line.startswith("| `" + prefix):
            continue
        cell = line.split("|")[1]
        full = re.findall(r"`(" + prefix + r"[A-Z0-9_]+)`", cell)
        names.update(full)
        for short in re.findall(r"`(_[A-Z0-9_]+)`", cell):  # `TETHER_FINANCE_SEED_ROWS` / `_SEED_DAYS`
            names.add(full[0].rsplit("_", 2)[0] + short if full else short)
    return names


def test_every_tether_setting_is_in_the_readme() -> None:
    wanted = {"TETHER_" + name.upper() for name in Settings.model_fields}
    assert wanted <= _documented("TETHER_"), sorted(wanted - _documented("TETHER_"))


def test_every_finance_setting_is_in_the_readme() -> None:
    wanted = {"TETHER_FINANCE_" + name.upper() for name in FinanceSettings.model_fields}
    missing = wanted - _documented("TETHER_FINANCE_")
    assert not missing, sorted(missing)
