"""Packs add their own commands: ``tether finance …`` and ``tether worker`` come from the finance
pack, ``tether erp …`` from the demo ERP, through the ``tether.commands`` entry points; the
command line itself names no pack."""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import pytest

from tests.test_pack_surface import imported_tether_modules
from tether.cli import main, parser
from tether.pack_commands import add_pack_commands

CLI = Path(__file__).resolve().parents[2] / "src" / "tether" / "cli.py"


def test_the_command_line_imports_no_pack() -> None:
    names = [name for _, name in imported_tether_modules(CLI.read_text(encoding="utf-8"))]
    assert "tether.pack_commands" in names  # the check sees the imports inside functions
    packs = [n for n in names if n.startswith(("tether.packs", "tether.erp_demo"))]
    assert not packs, f"cli.py imports packs: {packs}"


def test_each_installed_pack_adds_its_commands() -> None:
    sub = argparse.ArgumentParser().add_subparsers(dest="command")
    assert add_pack_commands(sub) == ["erp_demo", "finance_cs"]
    assert {"finance", "worker", "erp"} <= set(sub.choices)
    args = parser().parse_args(["finance", "seed", "--rows", "5"])
    assert args.fn.__module__ == "tether.packs.finance_cs.commands" and args.rows == 5
    assert parser().parse_args(["erp", "serve"]).fn.__module__ == "tether.erp_demo.commands"


def test_finance_seed_runs_from_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "finance.db"
    monkeypatch.setenv("TETHER_FINANCE_DATABASE_URL", f"sqlite:///{db}")
    assert main(["finance", "seed", "--rows", "40", "--days", "3"]) == 0
    assert "wrote 40 conversations over 3 days" in capsys.readouterr().out
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM customer_session").fetchone() == (40,)
    assert main(["finance", "seed", "--rows", "40"]) == 1  # not empty: --append to add more
    assert "already holds 40 rows" in capsys.readouterr().err
