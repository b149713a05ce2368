"""The end state of the business data (τ²-bench's method): the ERP's business tables and op
queues after a trial, compared with what the task's reference action list leaves on a fresh copy
of the same data. What a write makes fresh — ids, timestamps, bill numbers, the op's own id — is
left out; every other column is compared, so an extra write, a missing one or a different value
shows as a row on one side only.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# bookkeeping, not business data: logins and the numbering counters
SKIPPED_TABLES = {"erp_token", "bill_seq", "erp_alembic_version", "ai_op_queue"}
# an op that carries a write: confirmed (a manual one waits in the ERP), being carried out, done;
# a draft, a cancelled or expired proposal and a failed op wrote nothing
WRITING = ("confirmed", "executing", "executed")
FRESH_COLUMNS = {
    "id",
    "bill_no",
    "created_at",
    "updated_at",
    "examined_at",
    "confirmed_at",
    "executed_at",
    "expire_at",
    "revised_at",
    "session_id",
    "result_bill_id",
    "result_msg",
    "lease_until",
    "attempts",
    "link",
    "message",
    "interaction_id",
    "tool_call_id",
    "op_id",
    "result_bill_no",
    "diff",
    "summary",
}
Row = tuple[tuple[str, Any], ...]


@dataclass(slots=True)
class Snapshot:
    tables: dict[str, Counter[Row]] = field(default_factory=dict)


def _norm(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _rows(conn: sqlite3.Connection, table: str, known_ids: set[str] | None, where: str = "1=1") -> Counter[Row]:
    cur = conn.execute(f'SELECT * FROM "{table}" WHERE {where}')
    names = [d[0] for d in cur.description]
    out: Counter[Row] = Counter()
    for raw in cur.fetchall():
        row = []
        for name, value in zip(names, raw, strict=True):
            if name in FRESH_COLUMNS:
                continue
            if known_ids is not None and name.endswith("_id") and isinstance(value, str) and value not in known_ids:
                value = "<new>"  # a reference to a row the write made: its id is fresh
            if name in ("payload", "source_ref") and isinstance(value, str):
                value = _scrub_json(value, known_ids)
            row.append((name, _norm(value)))
        out[tuple(row)] += 1
    return out


def _scrub_json(text: str, known_ids: set[str] | None) -> Any:
    try:
        data = json.loads(text)
    except ValueError:
        return text

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {
                k: walk(x) for k, x in sorted(v.items()) if k not in FRESH_COLUMNS and k not in ("sId", "sessionId")
            }
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return json.dumps(walk(data), ensure_ascii=False, sort_keys=True)


def known_ids(erp_db: Path) -> set[str]:
    """Every id of the template's rows: a ``*_id`` value outside this set was made by a write."""
    ids: set[str] = set()
    with sqlite3.connect(f"file:{erp_db}?mode=ro", uri=True) as conn:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            if "id" in cols:
                ids.update(str(r[0]) for r in conn.execute(f'SELECT id FROM "{table}"'))
    return ids


def snapshot(erp_db: Path, tether_db: Path, ids: set[str]) -> Snapshot:
    snap = Snapshot()
    with sqlite3.connect(f"file:{erp_db}?mode=ro", uri=True) as conn:
        tables = [
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")
        ]
        for table in sorted(set(tables) - SKIPPED_TABLES):
            snap.tables[f"erp.{table}"] = _rows(conn, table, ids)
        snap.tables["erp.ai_op_queue"] = _rows(conn, "ai_op_queue", ids, "status IN ('confirmed', 'executed')")
    with sqlite3.connect(f"file:{tether_db}?mode=ro", uri=True) as conn:
        cur = conn.execute(
            "SELECT owner_user, executor, op_type, form_id, target_id, payload, source_ref, base_version, "
            "auto_execute, status FROM op_queue WHERE status IN ('confirmed', 'executing', 'executed')"
        )
        names = [d[0] for d in cur.description]
        snap.tables["tether.op_queue"] = Counter(
            tuple(
                (n, _scrub_json(v, ids) if n in ("payload", "source_ref") and isinstance(v, str) else v)
                for n, v in zip(names, r, strict=True)
            )
            for r in cur.fetchall()
        )
    return snap


@dataclass(frozen=True, slots=True)
class StateDiff:
    extra: dict[str, list[dict[str, Any]]]  # rows the trial left that the reference did not
    missing: dict[str, list[dict[str, Any]]]  # rows the reference left that the trial did not

    @property
    def empty(self) -> bool:
        return not self.extra and not self.missing

    def summary(self) -> str:
        parts = [f"{t}: {len(rows)} extra" for t, rows in self.extra.items()]
        parts += [f"{t}: {len(rows)} missing" for t, rows in self.missing.items()]
        return "; ".join(parts)

    def to_json(self, cap: int = 10) -> dict[str, Any]:
        return {
            "extra": {t: rows[:cap] for t, rows in self.extra.items()},
            "missing": {t: rows[:cap] for t, rows in self.missing.items()},
        }


def compare(actual: Snapshot, expected: Snapshot) -> StateDiff:
    extra: dict[str, list[dict[str, Any]]] = {}
    missing: dict[str, list[dict[str, Any]]] = {}
    for table in sorted(set(actual.tables) | set(expected.tables)):
        a, e = actual.tables.get(table, Counter()), expected.tables.get(table, Counter())
        if a == e:
            continue
        more = [dict(r) for r, n in (a - e).items() for _ in range(n)]
        less = [dict(r) for r, n in (e - a).items() for _ in range(n)]
        if more:
            extra[table] = more
        if less:
            missing[table] = less
    return StateDiff(extra, missing)
