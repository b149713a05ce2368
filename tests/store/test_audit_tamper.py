"""Op actions in the hash-chained audit log, and ``tether audit verify`` catching a row edited,
deleted or moved directly in the table (on each real database)."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from tether.cli import main as cli
from tether.core.session import Owner
from tether.store import SqlStore
from tether.store.audit import SqlAuditLog
from tether.store.tables import audit_log

ALICE = Owner("alice", "erp-1-1")


def _log(db_url: str, n: int = 5) -> SqlAuditLog:
    async def main() -> SqlAuditLog:
        store = SqlStore(db_url)
        await store.open()
        await store.close()
        log = SqlAuditLog(db_url)
        for i, action in enumerate(["propose", "confirm", "execute", "propose", "cancel"][:n]):
            details = {"brand": "1", "form": "2001", "payload": {"remark": f"r{i}"}, "diff": {"fields": []}}
            await log.record_action(ALICE, "ses-1", action, f"op{i // 3}", details, "draft")
        return log

    return asyncio.run(main())


def _ids(log: SqlAuditLog) -> list[int]:
    return [int(r["id"]) for r in log.rows()]


def test_op_actions_chain_and_verify(
    db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log(db_url)
    try:
        rows = log.rows()
        assert [r["tool_id"] for r in rows] == ["op.propose", "op.confirm", "op.execute", "op.propose", "op.cancel"]
        assert rows[0]["tool_call_id"] == "op0" and '"form": "2001"' in rows[0]["args"]
        assert log.verify() is None
        monkeypatch.setenv("TETHER_DATABASE_URL", db_url)
        assert cli(["audit", "verify"]) == 0
        assert "intact: 5 row(s)" in capsys.readouterr().out
    finally:
        log.close()


@pytest.mark.parametrize("tamper", ["edit", "delete", "reorder"])
def test_tampering_is_named_by_the_first_broken_row(
    db_url: str, tamper: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log(db_url)
    try:
        ids = _ids(log)
        rows = {r["id"]: r for r in log.rows()}
        with log.engine.begin() as conn:
            if tamper == "edit":
                conn.execute(audit_log.update().where(audit_log.c.id == ids[2]).values(outcome="executed"))
                expected = ids[2]
            elif tamper == "delete":
                conn.execute(audit_log.delete().where(audit_log.c.id == ids[1]))
                expected = ids[2]
            else:  # swap the contents of two rows, hashes and all (prev_hash is unique: via a placeholder)
                a, b = rows[ids[1]], rows[ids[3]]
                for target, source in ((ids[1], {**b, "prev_hash": "-" * 64}), (ids[3], a), (ids[1], b)):
                    values = {k: v for k, v in source.items() if k != "id"}
                    conn.execute(audit_log.update().where(audit_log.c.id == target).values(**values))
                expected = ids[1]
        assert log.verify() == expected
        monkeypatch.setenv("TETHER_DATABASE_URL", db_url)
        assert cli(["audit", "verify"]) == 1
        assert f"BROKEN at row id {expected}" in capsys.readouterr().out
    finally:
        log.close()


def test_no_row_is_left_unchecked(sqlite_url: str) -> None:
    log = _log(sqlite_url)
    try:
        with log.engine.begin() as conn:
            conn.execute(sa.text("UPDATE audit_log SET args = '{}' WHERE id = (SELECT MAX(id) FROM audit_log)"))
        assert log.verify() == _ids(log)[-1]
    finally:
        log.close()
