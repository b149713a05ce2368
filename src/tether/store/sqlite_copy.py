"""A consistent copy of a SQLite database file that a server may hold open in WAL mode: the
backup API folds the write-ahead log in, and the copy is one plain file (the eval workspace's
per-trial copies, the demo's scratch ERP)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def backup_sqlite(source: Path, target: Path) -> None:
    target.unlink(missing_ok=True)
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")
    finally:
        src.close()
        dst.close()
