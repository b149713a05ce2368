"""The op service on the session store's group writer, on each real database: a proposal costs
the session two commits (its creation, and the step that shows the proposal, which carries the op
row and its audit row — nothing before); the op row is not durable before that step; 50
concurrent confirms execute once; every action is one chained audit row without the credential."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from tether.core.events import RuntimeEvent
from tether.core.messages import ModelReply, ModelRequest, ToolCall
from tether.core.runtime import Runtime
from tether.core.session import Identity, Owner, Status
from tether.core.skills import Skill, SkillRegistry
from tether.core.tools import Interaction, ToolContext, tool
from tether.errors import Conflict
from tether.factory import build_runtime
from tether.ops.executor_port import OpExecutor
from tether.ops.model import Op, OpOutcome
from tether.ops.proposal import draft_op, propose_op
from tether.ops.service import OpService
from tether.ops.store import SqlOpStore
from tether.store import SqlStore
from tether.store.audit import SqlAuditLog
from tether.store.tables import op_queue


def op_service(runtime: Runtime) -> OpService:
    assert isinstance(runtime.ops, OpService)
    return runtime.ops


SECRET = "erp-token-abcdef-123"
ALICE = Identity(Owner("alice", "t1"), credential=SECRET)


class CountingExecutor(OpExecutor):
    name = "count"

    def __init__(self) -> None:
        self.executed: list[str] = []

    async def execute(self, op: Op, credential: str | None) -> OpOutcome:
        await asyncio.sleep(0.01)  # the others pile up on the gate meanwhile
        self.executed.append(op.op_id)
        return OpOutcome("executed", bill_id="B-1", link="/erp/form/x?bill=B-1")

    async def validate(self, op: Op, credential: str | None) -> OpOutcome:
        return OpOutcome("confirmed")

    async def status(self, op: Op, credential: str | None) -> OpOutcome:
        return OpOutcome(op.status)

    async def cancel(self, op: Op, credential: str | None) -> OpOutcome:
        return OpOutcome("cancelled")


class Model:
    name = "scripted"

    async def chat(self, request: ModelRequest) -> ModelReply:
        if any(m["role"] == "tool" for m in request.messages):
            return ModelReply(content="Done.")
        return ModelReply(tool_calls=[ToolCall("call_1", "set_price", json.dumps({"item": 7, "price": 9.5}))])


def test_a_proposal_rides_its_step_and_fifty_confirms_execute_once(db_url: str) -> None:
    async def main() -> None:
        store = SqlStore(db_url)
        await store.open()
        executor = CountingExecutor()
        seen_during_tool: list[bool] = []

        @tool(audited=True, proposes=True)
        async def set_price(ctx: ToolContext, item: int, price: float) -> Any:
            """Propose a price."""
            op = draft_op(
                ctx, executor="count", op_type="update", form_id="items", payload={"item": item, "price": price}
            )
            op.auto_execute = True
            await propose_op(ctx, op)
            seen_during_tool.append(await ops.store.get(op.op_id) is not None)
            return Interaction("proposal", {"opId": op.op_id}, interaction_id=str(op.interaction_id))

        skill = Skill("prices", "Change prices.", ("set_price",), "Prices.", ("price",))
        skills = SkillRegistry([skill])
        audit = SqlAuditLog(db_url, store)
        runtime = build_runtime(
            store,
            store,
            Model(),
            [set_price],
            skills,
            audit=audit,
            ops=lambda rt: OpService(SqlOpStore(db_url, store), rt, audit, {"count": executor}),
        )
        ops = op_service(runtime)
        try:
            before = store.writer_stats.batches
            s = await runtime.start_session(ALICE, "raise the price of item 7", {})
            assert s.status is Status.WAITING_CONFIRMATION
            assert store.writer_stats.batches - before == 1  # the creation with the proposal's step
            assert seen_during_tool == [False]  # the op row waited for the step's commit
            op_id = str(s.pending_interaction["payload"]["opId"]) if s.pending_interaction else ""
            stored = await ops.store.get(op_id, ALICE.owner)
            assert stored is not None and stored.status == "draft"

            views = await asyncio.gather(*(ops.confirm(op_id, ALICE) for _ in range(50)))
            await runtime.drain()
            assert executor.executed == [op_id]
            assert {v["status"] for v in views} <= {"executing", "executed"}
            done = await ops.store.get(op_id, ALICE.owner)
            assert done is not None and done.status == "executed" and done.attempts == 1
            final = await store.load(s.session_id)
            assert final.status is Status.SUCCEEDED and final.transcript[-1]["content"] == "Done."
            types = [e.type for e in await store.events_after(s.session_id, 0)]
            assert types.count("OP_RESULT") == 1
            assert types.index("OP_RESULT") < types.index("INTERACTION_ANSWERED")

            rows = [r for r in audit.rows() if r["tool_call_id"] == op_id]
            assert [r["tool_id"] for r in rows] == ["op.propose", "op.confirm", "op.execute"]
            assert [r["tool_id"] for r in audit.rows() if r["tool_call_id"] == "call_1"] == ["set_price"]
            assert audit.verify() is None
            assert all(SECRET not in json.dumps(r, default=str) for r in audit.rows())
            with audit.engine.connect() as conn:
                assert conn.execute(sa.select(sa.func.count()).select_from(op_queue)).scalar() == 1
        finally:
            await runtime.drain()
            await store.close()
            audit.close()
            ops.store.close()

    asyncio.run(main())


class _Rig:
    """A runtime whose ``set_price`` tool proposes an auto op, on the store's group writer."""

    def __init__(self, db_url: str) -> None:
        self.db_url = db_url
        self.executor = CountingExecutor()

    async def __aenter__(self) -> _Rig:
        self.store = store = SqlStore(self.db_url)
        await store.open()
        rig = self

        @tool(proposes=True)
        async def set_price(ctx: ToolContext, item: int, price: float) -> Any:
            """Propose a price."""
            payload = {"item": item, "price": price}
            op = draft_op(ctx, executor="count", op_type="update", form_id="items", payload=payload, auto_execute=True)
            await propose_op(ctx, op)
            return Interaction("proposal", {"opId": op.op_id}, interaction_id=str(op.interaction_id))

        skills = SkillRegistry([Skill("prices", "Change prices.", ("set_price",), "Prices.", ("price",))])
        self.audit = SqlAuditLog(self.db_url, store)
        self.runtime = build_runtime(
            store,
            store,
            Model(),
            [set_price],
            skills,
            ops=lambda rt: OpService(SqlOpStore(self.db_url, store), rt, self.audit, {"count": rig.executor}),
        )
        self.ops = op_service(self.runtime)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.runtime.drain()
        await self.store.close()
        self.audit.close()
        self.ops.store.close()

    async def propose(self) -> tuple[str, str]:
        s = await self.runtime.start_session(ALICE, "raise the price of item 7", {})
        assert s.status is Status.WAITING_CONFIRMATION and s.pending_interaction is not None
        return s.session_id, str(s.pending_interaction["payload"]["opId"])


def test_an_auto_ops_outcome_lands_in_the_commit_that_announces_it(db_url: str) -> None:
    """Approve costs two commits — the gate, then the outcome with OP_RESULT, the resumed turn's
    start and its quick answer (loop.py) — and no commit shows OP_RESULT without the executed op row."""

    async def main() -> None:
        async with _Rig(db_url) as rig:
            session_id, op_id = await rig.propose()
            seen: list[str | None] = []  # the op row's status as OP_RESULT is published (after its commit)
            sub = rig.runtime.deps.bus.subscribe(session_id)

            async def watch() -> None:
                while (e := await sub.get(5)) is not None:
                    if isinstance(e, RuntimeEvent) and e.type == "OP_RESULT":
                        op = await rig.ops.store.get(op_id)
                        seen.append(op.status if op else None)
                    if isinstance(e, RuntimeEvent) and e.type == "TURN_FINISHED":
                        return

            watcher = asyncio.get_running_loop().create_task(watch())
            before = rig.store.writer_stats.batches
            await rig.ops.confirm(op_id, ALICE)
            await rig.runtime.drain()
            await asyncio.wait_for(watcher, 5)
            assert rig.store.writer_stats.batches - before == 2
            assert seen == ["executed"]
            final = await rig.store.load(session_id)
            assert final.status is Status.SUCCEEDED and final.transcript[-1]["content"] == "Done."
            rows = [r["tool_id"] for r in rig.audit.rows() if r["tool_call_id"] == op_id]
            assert rows == ["op.propose", "op.confirm", "op.execute"]
            assert rig.audit.verify() is None

    asyncio.run(main())


def test_an_outcome_another_writer_recorded_first_is_not_announced_again(db_url: str) -> None:
    """Two runners drive one op (a stranded op taken over): the ERP answers both alike, but only the
    runner whose UPDATE recorded the outcome resumes the session; the other's commit — outcome,
    OP_RESULT, resumed turn — is refused whole, and it answers the op as stored."""

    async def main() -> None:
        async with _Rig(db_url) as rig:
            session_id, op_id = await rig.propose()
            view = await rig.ops.confirm(op_id, ALICE)
            await rig.runtime.drain()
            assert view["status"] == "executing"
            done = await rig.ops.store.get(op_id)
            assert done is not None and done.status == "executed"
            answered = await rig.store.load(session_id)
            # a second runner that executed the op too, now recording what it saw
            stale = replace(done, status="executing", result_bill_id=None, link=None)
            outcome = OpOutcome("executed", bill_id="B-2")
            result = await rig.ops._record(stale, outcome, ALICE, ("executing",), announce=True)
            await rig.runtime.drain()
            assert result.status == "executed" and result.result_bill_id == "B-1"  # the stored truth
            after = await rig.store.load(session_id)
            assert after.version == answered.version and len(after.transcript) == len(answered.transcript)
            types = [e.type for e in await rig.store.events_after(session_id, 0)]
            assert types.count("OP_RESULT") == 1
            rows = [r["tool_id"] for r in rig.audit.rows() if r["tool_call_id"] == op_id]
            assert rows == ["op.propose", "op.confirm", "op.execute"]

    asyncio.run(main())


def test_an_outcome_whose_delivery_fails_is_still_recorded(db_url: str) -> None:
    """The session cannot take the outcome's commit (it moved on under every retry): the outcome is
    recorded on the op row alone, with its audit row — never lost with the failed delivery."""

    async def main() -> None:
        async with _Rig(db_url) as rig:
            session_id, op_id = await rig.propose()

            async def moved_on(*args: Any, **kwargs: Any) -> Any:
                raise Conflict("another process moved the session on")

            rig.runtime.deliver_outcome = moved_on  # type: ignore[method-assign]
            view = await rig.ops.confirm(op_id, ALICE)
            await rig.runtime.drain()
            assert view["status"] == "executing"
            done = await rig.ops.store.get(op_id)
            assert done is not None and done.status == "executed" and done.result_bill_id == "B-1"
            rows = [r["tool_id"] for r in rig.audit.rows() if r["tool_call_id"] == op_id]
            assert rows == ["op.propose", "op.confirm", "op.execute"]
            assert (await rig.store.load(session_id)).status is Status.WAITING_CONFIRMATION

    asyncio.run(main())


def test_an_outcome_recorded_inside_a_request_does_not_wait_for_the_sessions_turn(db_url: str) -> None:
    """A stranded op driven again or a manual op reconciled from ``GET /api/ops/{id}``: the
    outcome is written at once and the request answers, while the session is busy (its lock held,
    as by a running turn); the announcement follows when the session is free."""

    async def main() -> None:
        async with _Rig(db_url) as rig:
            session_id, op_id = await rig.propose()
            assert await rig.ops.store.move(op_id, ("draft",), {"status": "executing"})
            executing = await rig.ops.store.get(op_id)
            assert executing is not None
            lock = rig.runtime.drivers.lock(session_id)
            await lock.acquire()
            try:
                outcome = OpOutcome("executed", bill_id="B-9")
                done = await asyncio.wait_for(rig.ops._record(executing, outcome, ALICE, ("executing",)), 5)
                assert done.status == "executed"
                stored = await rig.ops.store.get(op_id)
                assert stored is not None and stored.status == "executed" and stored.result_bill_id == "B-9"
            finally:
                lock.release()
            await rig.runtime.drain()
            final = await rig.store.load(session_id)
            assert final.status is Status.SUCCEEDED and final.transcript[-1]["content"] == "Done."

    asyncio.run(main())


def test_cancelling_a_session_through_the_runtime_cancels_its_drafts(db_url: str) -> None:
    """The policy lives in the runtime's op queue, not in the HTTP route: any caller of
    ``Runtime.cancel`` (here the Python API, with the owner only) cancels the session's drafts."""

    async def main() -> None:
        async with _Rig(db_url) as rig:
            session_id, op_id = await rig.propose()
            s = await rig.runtime.cancel(session_id, ALICE.owner)
            assert s.status is Status.CANCELLED
            op = await rig.ops.store.get(op_id)
            assert op is not None and op.status == "cancelled"
            assert rig.executor.executed == []

    asyncio.run(main())
