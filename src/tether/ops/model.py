"""An op: one proposed change to business data, from its draft to its outcome.

Statuses: ``draft → confirmed → executing → executed | failed``; ``draft → cancelled``;
``draft → expired``; ``failed → confirmed`` (a retry). An op an approval policy matches goes
``draft → awaiting`` on its requester's confirm, then ``awaiting → confirmed`` with its last
approval, or ``→ rejected`` / ``→ expired`` (``tether.ops.approvals``). A manual op stays ``confirmed`` (待处理:
the user finishes it in the business system's own form) until reconciliation sees it executed.
``state`` is what a client shows: processing | pending | done | failed | cancelled | expired | draft.
This module holds plain data only; it never talks to a database or a business system.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

OP_TYPES = ("create", "update", "delete", "examine", "generate")
STATUSES = ("draft", "awaiting", "confirmed", "executing", "executed", "failed", "cancelled", "expired", "rejected")
CONFIRMABLE = ("draft", "failed")
CLOSED = ("cancelled", "expired", "rejected")


def new_op_id() -> str:
    """Unguessable (192 bits): it is also the deep link's token and the business system's staging id."""
    return "op" + secrets.token_urlsafe(24).replace("-", "x").replace("_", "y")


@dataclass(slots=True)
class Op:
    op_id: str
    owner_user: str
    owner_tenant: str
    executor: str
    op_type: str
    form_id: str
    payload: dict[str, Any]
    expire_at: float
    created_at: float
    form_name: str | None = None
    brand: str | None = None
    subsidiary: str | None = None
    session_id: str | None = None
    tool_call_id: str | None = None
    interaction_id: str | None = None
    module: str | None = None
    target_table: str | None = None
    target_id: str | None = None
    source_ref: dict[str, Any] | None = None
    diff: dict[str, Any] = field(default_factory=dict)  # {"fields": [...], "lines": [...]}
    summary: str | None = None
    base_version: str | None = None
    auto_execute: bool = False
    status: str = "draft"
    result_bill_id: str | None = None
    result_bill_no: str | None = None
    link: str | None = None
    message: str | None = None
    error: str | None = None
    attempts: int = 0
    lease_until: float | None = None
    confirmed_at: float | None = None
    executed_at: float | None = None
    updated_at: float = 0.0

    @property
    def state(self) -> str:
        if self.status == "executing" or (self.status == "confirmed" and self.auto_execute):
            return "processing"
        if self.status == "confirmed":
            return "pending"
        if self.status == "executed":
            return "done"
        if self.status == "awaiting":
            return "awaiting_approval"
        return self.status

    @property
    def retryable(self) -> bool:
        """A failed op a confirm may run again: not one that says to propose again (its record
        changed, or it expired) and not past its proposal's expiry."""
        return self.state == "failed" and "propose again" not in (self.error or "") and self.expire_at > time.time()

    def text(self) -> str:
        """One line for people (and the model's round after the outcome)."""
        what = self.message or self.summary or f"{self.op_type} {self.form_name or self.form_id}"
        bill = f" {self.result_bill_no}" if self.result_bill_no and self.result_bill_no not in what else ""
        return {
            "done": f"✅ {what}{bill}",
            "pending": f"待处理：{self.summary or what}，请打开链接在 ERP 中确认保存 {self.link or ''}".strip(),
            "processing": f"处理中：{self.summary or what}",
            "failed": f"❌ 失败：{self.error or 'unknown error'}"
            + ("（可重试）" if self.retryable else "（请重新提议）"),
            "cancelled": f"已取消：{self.summary or what}",
            "expired": f"已过期：{self.summary or what}",
            "awaiting_approval": f"等待审批：{self.summary or what}",
            "rejected": f"❌ {self.error or '审批未通过'}：{self.summary or what}",
            "draft": f"待确认：{self.summary or what}",
        }[self.state]

    def view(self) -> dict[str, Any]:
        """The shape clients code against (the chat page's op card)."""
        return {
            "opId": self.op_id,
            "status": self.status,
            "state": self.state,
            "retryable": self.retryable,
            "link": self.link,
            "billId": self.result_bill_id,
            "billNo": self.result_bill_no,
            "message": self.message,
            "error": self.error,
            "text": self.text(),
            "op": self.op_type,
            "auto": self.auto_execute,
            "formId": self.form_id,
            "formName": self.form_name,
            "targetId": self.target_id,
            "summary": self.summary,
            "diff": self.diff.get("fields", []),
            "lines": self.diff.get("lines", []),
            "sessionId": self.session_id,
            "interactionId": self.interaction_id,
            "attempts": self.attempts,
            "createdAt": self.created_at,
            "confirmedAt": self.confirmed_at,
            "executedAt": self.executed_at,
            "expiresAt": self.expire_at,
        }


@dataclass(slots=True)
class OpOutcome:
    """What the business system answered for an op: its status there and the result."""

    status: str  # executed | failed | confirmed | draft | cancelled | expired
    bill_id: str | None = None
    bill_no: str | None = None
    link: str | None = None
    message: str | None = None
    error: str | None = None
    fingerprint: str | None = None  # of what the business system executed (``executor_port``); audit only

    def values(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "result_bill_id": self.bill_id,
            "result_bill_no": self.bill_no,
            "link": self.link,
            "message": self.message,
            "error": self.error,
        }
