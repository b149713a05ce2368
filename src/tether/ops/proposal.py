"""How a pack's tool stages a proposal: ``draft_op(ctx, ...)`` makes the op (its id, owner,
session, tool call, interaction and expiry filled in), the tool stages it in its business system,
then ``propose_op(ctx, op)`` records the draft in the op queue of the running turn
(``ToolContext.ops``, the ``OpQueue`` port). A context without one (a direct tool call outside any session)
cannot propose: a proposal needs a session to be confirmed in."""

from __future__ import annotations

import secrets
import time
from typing import Any

from tether.core.ports import OpQueue
from tether.core.tools import ToolContext
from tether.errors import ToolError
from tether.ops.model import Op, new_op_id
from tether.ops.taint import mark_tainted


def _service(ctx: ToolContext) -> OpQueue:
    service = ctx.ops
    if service is None or not ctx.session_id:
        raise ToolError("a write can only be proposed inside a session, where a person confirms it")
    return service


def draft_op(
    ctx: ToolContext, *, executor: str, op_type: str, form_id: str, payload: dict[str, Any], **fields: Any
) -> Op:
    """The draft op of a proposal. Each value of ``diff`` the model copied from free text of a tool
    result in this session is marked there, in place, with where it came from (``tainted``): the
    proposal the tool shows, built from the same diff entries, carries the marks too."""
    service = _service(ctx)
    if isinstance(fields.get("diff"), dict):
        mark_tainted(fields["diff"], ctx.transcript)
    now = time.time()
    return Op(
        op_id=new_op_id(),
        owner_user=ctx.owner.user_id,
        owner_tenant=ctx.owner.tenant,
        executor=executor,
        op_type=op_type,
        form_id=form_id,
        payload=payload,
        expire_at=now + float(service.ttl_s),
        created_at=now,
        updated_at=now,
        session_id=ctx.session_id,
        tool_call_id=ctx.tool_call_id,
        interaction_id=f"int-{secrets.token_hex(8)}",
        **fields,
    )


async def propose_op(ctx: ToolContext, op: Op) -> Op:
    proposed: Op = await _service(ctx).propose(op)
    return proposed
