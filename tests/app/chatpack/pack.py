"""A test pack for the chat page: tools that hand the user a QUESTION, a FORM_COLLECT and a
WRITE_PROPOSAL, a tool that finds the login expired, and an answer with hostile markup.

**The ``/api/ops/*`` routes here are a test double of the ops API that lands with the
governed-writes issue**, for this pack's own op ids only (``op-test-*``): confirm / cancel / get
an op, with the contract's answer ``{opId, status, state, link, billId, billNo, message, error}``.
Like the real one it emits ``OP_RESULT`` (and a ``LINK``) into the session and delivers the
outcome to the waiting session (``complete_interaction``). The double writes those events
through tether's store directly, which only a test may do. The request text picks the op's
scenario: ``失败`` fails the first confirm (a retry succeeds), ``待处理`` leaves the op pending in
the ERP, anything else succeeds.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter

from tether.core.events import RuntimeEvent
from tether.core.ports import Commit
from tether.pack import IdentityDep, Interaction, NotFound, Pack, ToolContext, tool

FIELDS: list[dict[str, Any]] = [
    {"column": "customer_id", "label": "客户", "type": "ref", "required": True, "maxLength": 16},
    {"column": "bill_date", "label": "单据日期", "type": "date", "required": True},
    {
        "column": "currency",
        "label": "币种",
        "type": "select",
        "required": True,
        "options": [{"value": "CNY", "label": "人民币"}, {"value": "USD", "label": "美元"}],
    },
    {"column": "valid_days", "label": "有效天数", "type": "integer", "default": 30},
    {"column": "urgent", "label": "加急", "type": "bool"},
    {"column": "status", "label": "状态", "type": "text", "readOnly": True, "default": "draft"},
    {"column": "remark", "label": "备注", "type": "textarea", "maxLength": 40},
]
DETAIL: list[dict[str, Any]] = [
    {"column": "material_id", "label": "物料", "type": "ref", "required": True},
    {"column": "qty", "label": "数量", "type": "number", "required": True},
]


class Ops:
    """The test double's op table (in memory: a restart forgets it) and tether's services."""

    def __init__(self) -> None:
        self.ops: dict[str, dict[str, Any]] = {}
        self.services: Any = None
        self.expired_once: set[str] = set()


def view(op: dict[str, Any]) -> dict[str, Any]:
    keys = ("opId", "status", "state", "link", "billId", "billNo", "message", "error")
    return {k: op.get(k) for k in keys}


async def emit(services: Any, session_id: str, type_: str, data: dict[str, Any]) -> None:
    """Append one event to an idle session, as the ops API will (test double only)."""
    async with services.runtime._lock(session_id):
        s = await services.store.load(session_id)
        s.last_seq += 1
        event = RuntimeEvent(s.last_seq, session_id, s.current_turn_id, type_, time.time(), data)
        await services.store.commit(Commit(s, [event]))
        services.bus.publish(event)


def build_tools(state: Ops) -> list[Any]:
    @tool()
    async def ask_choice(ctx: ToolContext, question: str) -> Any:
        """Ask the user to pick a month."""
        return Interaction("question", {"question": question, "options": ["本月", "上月"], "allowFreeText": True})

    @tool()
    async def collect_form(ctx: ToolContext) -> Any:
        """Ask the user to fill in a quotation."""
        payload = {
            "formId": "2001",
            "formName": "报价单",
            "fields": FIELDS,
            "detail": {"fields": DETAIL},
            "prefill": {"currency": "CNY", "details": [{"material_id": "M-001", "qty": 2}]},
        }
        return Interaction("form", payload)

    @tool()
    async def propose_write(ctx: ToolContext, request: str) -> Any:
        """Propose a quotation for the user to confirm."""
        op_id = f"op-test-{secrets.token_hex(6)}"
        iid = f"int-{secrets.token_hex(6)}"
        scenario = "fail" if "失败" in request else "pending" if "待处理" in request else "ok"
        state.ops[op_id] = {
            "opId": op_id,
            "status": "draft",
            "state": None,
            "owner": (ctx.owner.user_id, ctx.owner.tenant),
            "sessionId": ctx.session_id,
            "interactionId": iid,
            "scenario": scenario,
            "confirms": 0,
        }
        payload = {
            "opId": op_id,
            "formId": "2001",
            "formName": "报价单",
            "op": "update",
            "auto": True,
            "summary": "把报价单 QT202611-0007 的单价从 120 调到 115，并新增一行。",
            "diff": [
                {"field": "price", "label": "单价", "before": 120, "after": 115},
                {"field": "remark", "label": "备注", "before": "", "after": "<b>客户要求</b>"},
                {"field": "customer_id", "label": "客户", "before": "常州力拓", "after": "常州力拓"},
            ],
            "lines": [
                {
                    "lineNo": 2,
                    "change": "add",
                    "fields": [{"field": "qty", "label": "数量", "before": None, "after": 5}],
                }
            ],
            "expiresAt": "2026-12-31T12:00:00Z",
        }
        return Interaction("proposal", payload, interaction_id=iid)

    @tool()
    async def expire_login(ctx: ToolContext) -> Any:
        """Reads the business system, whose login expired (once per session)."""
        if ctx.session_id in state.expired_once:
            return {"ok": True}
        state.expired_once.add(ctx.session_id)
        return Interaction("login", {"message": "ERP 登录已过期，请重新登录后重新发送请求"})

    @tool()
    async def echo_text(ctx: ToolContext, text: str) -> Any:
        """Echo a text."""
        return {"text": text}

    return [ask_choice, collect_form, propose_write, expire_login, echo_text]


def build_router(state: Ops) -> APIRouter:
    router = APIRouter(prefix="/api/ops", tags=["ops (test double)"])

    def own(op_id: str, who: Any) -> dict[str, Any]:
        op = state.ops.get(op_id)
        if op is None or op["owner"] != (who.owner.user_id, who.owner.tenant):
            raise NotFound(f"op {op_id} not found")
        return op

    async def run(op: dict[str, Any]) -> None:
        services = state.services
        await asyncio.sleep(0.8)
        fail = op["scenario"] == "fail" and op["confirms"] == 1
        if fail:
            op.update(status="failed", state="failed", error="库存不足：物料 M-001 可用 1，需要 5", message=None)
        elif op["scenario"] == "pending":
            op.update(
                status="confirmed",
                state="pending",
                link=f"/erp/form/2001?staging={op['opId']}",
                message="已送到ERP待办",
            )
        else:
            op.update(status="executed", state="done", billId="qt-1-0007", billNo="QT202611-0007", error=None)
            op.update(link="/erp/form/2001?bill=qt-1-0007", message="报价单已更新")
        await emit(services, op["sessionId"], "OP_RESULT", view(op))
        if op["state"] == "done":
            await emit(services, op["sessionId"], "LINK", {"url": op["link"], "label": f"查看 {op['billNo']}"})
            await services.runtime.complete_interaction(op["sessionId"], None, op["interactionId"], view(op))

    @router.get("/{op_id}")
    async def get_op(op_id: str, who: IdentityDep) -> dict[str, Any]:
        return view(own(op_id, who))

    @router.post("/{op_id}/confirm")
    async def confirm(op_id: str, who: IdentityDep) -> dict[str, Any]:
        op = own(op_id, who)
        if op["status"] in ("draft", "failed"):
            op["confirms"] += 1
            op.update(status="executing", state="processing", error=None, message=None)
            await emit(state.services, op["sessionId"], "OP_RESULT", view(op))
            state.services.runtime.spawn(run(op))
        return view(op)

    @router.post("/{op_id}/cancel")
    async def cancel(op_id: str, who: IdentityDep) -> dict[str, Any]:
        op = own(op_id, who)
        if op["status"] == "draft":
            op.update(status="cancelled", state=None, message="已取消，未写入ERP")
            await emit(state.services, op["sessionId"], "OP_RESULT", view(op))
            await state.services.runtime.complete_interaction(op["sessionId"], None, op["interactionId"], view(op))
        return view(op)

    return router


def pack(env: Any) -> Pack:
    state = Ops()

    async def startup(services: Any) -> None:
        state.services = services

    return Pack(
        name="chatpack",
        tools=build_tools(state),
        skill_dirs=[Path(__file__).parent / "skills"],
        startup=startup,
        routers=[build_router(state)],
    )
