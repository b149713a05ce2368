"""A test pack for the chat page: tools that hand the user a QUESTION, a FORM_COLLECT and a
WRITE_PROPOSAL, a tool that finds the login expired, and an answer with hostile markup.

The proposal goes through tether's real op queue (``draft_op`` / ``propose_op``, confirmed and
cancelled at ``/api/ops/*``, which emits ``OP_RESULT`` and ``LINK``); only the business system is
a stand-in: ``ChatTestExecutor`` (executor ``chat-test``) carries ops out in memory. The request
text picks the scenario: ``失败`` fails the first execution (a retry succeeds), ``待处理`` makes a
manual op that waits in the "ERP" (state pending, with a link), anything else executes at once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tether.pack import Interaction, Op, OpExecutor, OpOutcome, Pack, ToolContext, draft_op, propose_op, tool

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


EXECUTOR = "chat-test"
BILL = ("qt-1-0007", "QT202611-0007")


class ChatTestExecutor(OpExecutor):
    """The stand-in business system for the test pack's ops (idempotent on the op id)."""

    name = EXECUTOR

    def __init__(self) -> None:
        self.done: dict[str, OpOutcome] = {}

    async def execute(self, op: Op, credential: str | None) -> OpOutcome:
        await asyncio.sleep(0.8)  # long enough to see 处理中
        if op.op_id in self.done:
            return self.done[op.op_id]
        if op.payload.get("scenario") == "fail" and op.attempts <= 1:
            return OpOutcome("failed", error="库存不足：物料 M-001 可用 1，需要 5")
        bill_id, bill_no = BILL
        outcome = OpOutcome("executed", bill_id, bill_no, f"/erp/form/2001?bill={bill_id}", "报价单已更新")
        self.done[op.op_id] = outcome
        return outcome

    async def validate(self, op: Op, credential: str | None) -> OpOutcome:
        return OpOutcome("confirmed", link=f"/erp/form/2001?staging={op.op_id}", message="已送到ERP待办")

    async def status(self, op: Op, credential: str | None) -> OpOutcome:
        if op.op_id in self.done:
            return self.done[op.op_id]
        return OpOutcome("confirmed", link=f"/erp/form/2001?staging={op.op_id}", message="已送到ERP待办")

    async def cancel(self, op: Op, credential: str | None) -> OpOutcome:
        return OpOutcome("cancelled")


def build_tools() -> list[Any]:
    expired_once: set[str] = set()

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
        """Propose a quotation change for the user to confirm."""
        scenario = "fail" if "失败" in request else "pending" if "待处理" in request else "ok"
        diff = {
            "fields": [
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
        }
        summary = "把报价单 QT202611-0007 的单价从 120 调到 115，并新增一行。"
        op = draft_op(
            ctx,
            executor=EXECUTOR,
            op_type="update",
            form_id="2001",
            payload={"scenario": scenario, "price": 115},
            form_name="报价单",
            target_id=BILL[0],
            diff=diff,
            summary=summary,
            auto_execute=scenario != "pending",
        )
        await propose_op(ctx, op)
        payload = {
            "opId": op.op_id,
            "formId": "2001",
            "formName": "报价单",
            "op": "update",
            "auto": op.auto_execute,
            "summary": summary,
            "diff": diff["fields"],
            "lines": diff["lines"],
            "expiresAt": op.expire_at,
        }
        return Interaction("proposal", payload, interaction_id=str(op.interaction_id))

    @tool()
    async def expire_login(ctx: ToolContext) -> Any:
        """Reads the business system, whose login expired (once per session)."""
        if ctx.session_id in expired_once:
            return {"ok": True}
        expired_once.add(ctx.session_id)
        return Interaction("login", {"message": "ERP 登录已过期，请重新登录后重新发送请求"})

    @tool()
    async def echo_text(ctx: ToolContext, text: str) -> Any:
        """Echo a text."""
        return {"text": text}

    return [ask_choice, collect_form, propose_write, expire_login, echo_text]


def pack(env: Any) -> Pack:
    return Pack(
        name="chatpack",
        tools=build_tools(),
        skill_dirs=[Path(__file__).parent / "skills"],
        op_executors=[ChatTestExecutor()],
    )
