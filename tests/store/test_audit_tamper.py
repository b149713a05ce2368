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


def _broken_at(log: SqlAuditLog) -> int | None:
    broken = log.verify()
    assert broken is not None, "the log verified intact"
    return broken.row_id


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
        assert _broken_at(log) == expected
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
        assert _broken_at(log) == _ids(log)[-1]
    finally:
        log.close()


@pytest.mark.parametrize("cut", ["last", "all", "head"])
def test_rows_deleted_from_the_end_are_seen_against_the_head(
    db_url: str, cut: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What is left after deleting the newest rows (or every row) is still a valid chain: the head,
    moved by every append, is what shows them missing."""
    log = _log(db_url)
    try:
        ids = _ids(log)
        with log.engine.begin() as conn:
            if cut == "last":
                conn.execute(audit_log.delete().where(audit_log.c.id == ids[-1]))
            elif cut == "all":
                conn.execute(audit_log.delete())
            else:
                conn.execute(sa.text("DELETE FROM audit_head"))
        broken = log.verify()
        assert broken is not None and broken.row_id is None
        assert ("is gone" if cut == "head" else "deleted from its end") in broken.reason, broken
        monkeypatch.setenv("TETHER_DATABASE_URL", db_url)
        assert cli(["audit", "verify"]) == 1
        assert "BROKEN at its end" in capsys.readouterr().out
    finally:
        log.close()


def test_a_head_noted_earlier_must_still_be_in_the_chain(
    db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forger who rewrites every row and the head keeps the chain valid; a head noted outside
    the database before that is what the rewrite cannot keep."""
    log = _log(db_url, n=3)
    try:
        monkeypatch.setenv("TETHER_DATABASE_URL", db_url)
        assert cli(["audit", "verify"]) == 0
        noted = capsys.readouterr().out.split("; head ")[1].split()[0]
        assert noted == log.rows()[-1]["hash"]
        asyncio.run(log.record_action(ALICE, "ses-2", "propose", "op9", {"form": "2001"}, "draft"))
        assert log.verify(noted) is None  # the chain grew past the noted head: still in it
        with log.engine.begin() as conn:  # the rewrite: every row replaced, the head reset to match
            conn.execute(audit_log.delete())
            conn.execute(sa.text("UPDATE audit_head SET entries = 0, hash = :g"), {"g": "0" * 64})
        for i in range(4):
            asyncio.run(log.record_action(ALICE, "ses-1", "propose", f"forged{i}", {"form": "2001"}, "draft"))
        assert log.verify() is None  # consistent by itself
        broken = log.verify(noted)
        assert broken is not None and "no longer in the chain" in broken.reason
        assert cli(["audit", "verify", "--head", noted]) == 1
        assert "no longer in the chain" in capsys.readouterr().out
    finally:
        log.close()


def test_a_log_written_before_the_head_existed_gets_one_that_matches_it(db_url: str) -> None:
    """Migration 0007 on a log that holds rows: the head starts where the chain ends."""
    from tether.store import upgrade
    from tether.store.audit import GENESIS, chain_hash

    upgrade(db_url, "0006")
    log = SqlAuditLog(db_url)
    try:
        prev = GENESIS
        with log.engine.begin() as conn:
            for i in range(3):
                row = SqlAuditLog.action_row(ALICE, "ses-1", "propose", f"op{i}", {"form": "2001"}, "draft")
                conn.execute(audit_log.insert().values(**row, prev_hash=prev, hash=chain_hash(prev, row)))
                prev = chain_hash(prev, row)
        upgrade(db_url)
        assert log.head() == (3, prev) and log.verify() is None
        last = _ids(log)[-1]
        with log.engine.begin() as conn:
            conn.execute(audit_log.delete().where(audit_log.c.id == last))
        broken = log.verify()
        assert broken is not None and broken.row_id is None
    finally:
        log.close()
