"""``tether erp seed`` prepares and seeds the ERP database and prints the counts; a second run seeds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.cli import main


def test_erp_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TETHER_ERP_DATABASE_URL", f"sqlite:///{tmp_path / 'erp.db'}")
    monkeypatch.setenv("TETHER_ERP_SEED_SCALE", "0.1")
    assert main(["erp", "seed"]) == 0
    out = capsys.readouterr().out
    assert "quotation" in out and "seeded the demo ERP" in out
    assert main(["erp", "seed"]) == 0
    assert "already seeded" in capsys.readouterr().out
