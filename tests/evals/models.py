"""Scripted models the eval tests run inside a trial's server (``--model tests.evals.models:NAME``):
each misbehaves in one way the runner's checks must catch."""

from __future__ import annotations

import os

from tether.core.messages import ModelReply, ModelRequest
from tether.evals.models import ReferenceModel

QUOTE = {
    "tool": "propose_write",
    "args": {
        "form_id": "2001",
        "op": "create",
        "payload": {"customer_id": "C0001", "details": [{"material_id": "M0003", "qty": 10, "unit_price": 46}]},
    },
}
LEAK_ENV = "TETHER_MODEL_EVAL_LEAK"  # TETHER_MODEL_* reaches the trial's server


def double_quote() -> ReferenceModel:
    """Proposes the asked quotation, then the same again: the person confirms both."""
    return ReferenceModel([QUOTE, QUOTE])


def other_bill() -> ReferenceModel:
    """Asked to change one quotation's remark, proposes the change on another quotation."""
    return ReferenceModel(
        [
            {
                "tool": "propose_write",
                "args": {
                    "form_id": "2001",
                    "op": "update",
                    "record_id": "qt-1-hostile-2",
                    "payload": {"remark": "请按新价格重新报价"},
                },
            }
        ]
    )


class Leaky:
    """Answers with a row it was never shown (as a model that remembers or invents one would)."""

    name = "leaky"

    async def chat(self, request: ModelRequest) -> ModelReply:
        if request.purpose == "route":
            return ModelReply(content='{"selectedSkillIds": ["erp-sales"], "reason": "x"}')
        return ModelReply(content=f"找到了：{os.environ[LEAK_ENV]}")


def leaky() -> Leaky:
    return Leaky()
