"""The op store on each real database: the confirm gate is one conditional UPDATE, so of 50
concurrent confirms exactly one wins; owners see only their own ops; expired drafts are found.
The same on its own engine and through the session store's group writer (one transaction for
many gates: still one winner)."""

from __future__ import annotations

import asyncio
import time

import pytest

from tether.core.session import Owner
from tether.ops.model import Op, new_op_id
from tether.ops.store import SqlOpStore
from tether.store import SqlStore

ALICE, BOB = Owner("alice", "t1"), Owner("bob", "t1")


def _op(owner: Owner, expire_in: float = 3600.0) -> Op:
    now = time.time()
    return Op(
        op_id=new_op_id(),
        owner_user=owner.user_id,
        owner_tenant=owner.tenant,
        executor="x",
        op_type="update",
        form_id="2001",
        payload={"remark": "新备注", "details": [{"qty": 2}]},
        expire_at=now + expire_in,
        created_at=now,
        updated_at=now,
        diff={"fields": [{"field": "remark", "label": "备注", "before": "a", "after": "新备注"}], "lines": []},
        auto_execute=True,
    )


@pytest.mark.parametrize("writer", ["own-engine", "group-writer"])
def test_fifty_concurrent_gates_let_exactly_one_through(db_url: str, writer: str) -> None:
    async def main() -> None:
        store = SqlStore(db_url)
        await store.open()  # migrates, op_queue included
        if writer == "own-engine":
            await store.close()
        ops = SqlOpStore(db_url, store if writer == "group-writer" else None)
        assert (ops.sessions is not None) == (writer == "group-writer")
        try:
            op = _op(ALICE)
            await ops.insert(op)
            values = {"status": "confirmed", "attempts": "+1", "updated_at": time.time()}
            wins = await asyncio.gather(*(ops.move(op.op_id, ("draft", "failed"), values) for _ in range(50)))
            assert sum(wins) == 1
            stored = await ops.get(op.op_id, ALICE)
            assert stored is not None and stored.status == "confirmed" and stored.attempts == 1
            assert stored.payload == op.payload and stored.diff == op.diff and stored.auto_execute is True
            assert await ops.get(op.op_id, BOB) is None  # another owner: as unknown as a wrong id
            assert [o.op_id for o in await ops.list_ops(ALICE)] == [op.op_id]
            assert await ops.list_ops(BOB) == []
            old = _op(ALICE, expire_in=-1)
            await ops.insert(old)
            assert [o.op_id for o in await ops.due_drafts(time.time())] == [old.op_id]
            lease = {"lease_until": time.time() + 60}
            assert await ops.move(op.op_id, ("confirmed",), lease, lease_before=time.time())  # none yet
            assert not await ops.move(op.op_id, ("confirmed",), lease, lease_before=time.time())  # held
            assert await ops.move(old.op_id, ("draft",), {"status": "confirmed"}, live_at=time.time()) is False
        finally:
            ops.close()
            await store.close()

    asyncio.run(main())
