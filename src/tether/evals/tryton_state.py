"""The end state of a Tryton trial, read in Tryton's own database (the trial's SQLite copy): the
rows of every table a write changed — in the trial or in the task's reference run — compared with
what the reference run left (``state.compare``). What a write makes fresh is left out: a row's id
and its create/write times, tether's op mark in a sale's comment (``[tether-op:<op id>]``), and a
many2one's value where it points at a row the write made (``<new>``; Tryton's own
``ir_model_field`` says which columns are many2ones and to which model). Every other column is
compared, so an extra write, a missing one or a different value shows as a row on one side only.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.evals.state import Row, Snapshot

FRESH = {"id", "create_date", "write_date"}
_MARK = re.compile(r"\s*\[tether-op:[^\]]*\]\s*")


def _open(sqlite: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{sqlite}?mode=ro", uri=True)


@dataclass
class TrytonState:
    """The prepared database's ids and many2ones, read once, and its rows of the tables a run changed."""

    prepared: Path
    _ids: dict[str, set[int]] = field(default_factory=dict)
    _relations: dict[str, dict[str, str]] | None = None
    _rows: dict[str, Counter[Row]] = field(default_factory=dict)

    def relations(self) -> dict[str, dict[str, str]]:
        """Table -> its many2one columns -> the table they point at."""
        if self._relations is None:
            with _open(self.prepared) as conn:
                found: dict[str, dict[str, str]] = {}
                for model, name, relation in conn.execute(
                    "SELECT model, name, relation FROM ir_model_field WHERE ttype = 'many2one' AND relation IS NOT NULL"
                ):
                    found.setdefault(str(model).replace(".", "_"), {})[str(name)] = str(relation).replace(".", "_")
            self._relations = found
        return self._relations

    def ids(self, table: str) -> set[int]:
        if table not in self._ids:
            with _open(self.prepared) as conn:
                try:
                    self._ids[table] = {int(r[0]) for r in conn.execute(f'SELECT id FROM "{table}"')}
                except sqlite3.Error:
                    self._ids[table] = set()
        return self._ids[table]

    def rows(self, sqlite: Path, table: str) -> Counter[Row]:
        relations = self.relations().get(table, {})
        out: Counter[Row] = Counter()
        with _open(sqlite) as conn:
            cur = conn.execute(f'SELECT * FROM "{table}"')
            names = [d[0] for d in cur.description]
            for raw in cur.fetchall():
                out[
                    tuple((n, self._value(n, v, relations)) for n, v in zip(names, raw, strict=True) if n not in FRESH)
                ] += 1
        return out

    def _value(self, name: str, value: Any, relations: dict[str, str]) -> Any:
        if name == "comment" and isinstance(value, str):
            return _MARK.sub(" ", value).strip() or None
        target = relations.get(name)
        if target is not None and isinstance(value, int) and value not in self.ids(target):
            return "<new>"  # a row the write made: its id is fresh
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    def prepared_rows(self, table: str) -> Counter[Row]:
        if table not in self._rows:
            self._rows[table] = self.rows(self.prepared, table)
        return self._rows[table]

    def snapshot(self, sqlite: Path, tables: set[str]) -> Snapshot:
        return Snapshot({f"tryton.{t}": self.rows(sqlite, t) for t in sorted(tables)})

    def expected(self, reference: Snapshot | None, tables: set[str]) -> Snapshot:
        """What the trial should have left in ``tables``: the reference run's rows where it wrote,
        the prepared database's elsewhere (no reference: nothing written)."""
        kept = reference.tables if reference is not None else {}
        return Snapshot(
            {
                f"tryton.{t}": kept[f"tryton.{t}"] if f"tryton.{t}" in kept else self.prepared_rows(t)
                for t in sorted(tables)
            }
        )


def changed(after: dict[str, str], before: dict[str, str]) -> set[str]:
    """The tables whose digests differ (``tryton_site.digest``)."""
    return {t for t in set(after) | set(before) if after.get(t) != before.get(t)}
