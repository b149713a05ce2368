"""An edited op reaches its requester's session (edit before approve, docs/approvals.md): the
pending proposal takes the new diff — what ``pendingInteraction`` and a reloaded chat page show —
and an ``OP_RESULT`` with ``edited: true`` and the op's new view lets an open page re-render the
card; ``editedBy`` names the approver who edited it (None for the requester's own edit). Called
once the op row and its ``op.edit`` audit row committed: the row is the truth, this is its
announcement, so a failure here is logged, never the edit's failure."""

from __future__ import annotations

import logging
from typing import Any

from tether.core.events import EventType
from tether.core.session import Identity, Owner
from tether.errors import Conflict, NotFound
from tether.ops.model import Op
from tether.ops.service import OpService

log = logging.getLogger(__name__)


def proposal_update(op: Op, editor: str | None = None) -> dict[str, Any]:
    """The keys of a proposal's payload (``propose_write``'s) that an edit changes: the diff, the
    values as staged (what the card's edit form sends back the next time), and ``editedBy``: the
    approver who edited it, None when its requester did (their own edit)."""
    return {
        "diff": op.diff.get("fields", []),
        "lines": op.diff.get("lines", []),
        "values": op.payload,
        "edited": True,
        "editedBy": editor if editor and editor != op.owner_user else None,
    }


async def show_edit(ops: OpService, op: Op, who: Identity) -> None:
    """``who`` edited ``op``; the session it is shown in is the requester's, looked up as theirs —
    an approver's edit (``approvers_may_edit``) reaches the requester's card the same way."""
    if not op.session_id:
        return
    requester = Owner(op.owner_user, op.owner_tenant)
    update = proposal_update(op, who.owner.user_id)
    event = {"interactionId": op.interaction_id, **op.view(), **update}
    try:
        await ops.runtime.amend_interaction(
            op.session_id, op.interaction_id, update, [(EventType.OP_RESULT, event)], requester
        )
    except (NotFound, Conflict) as exc:  # the session is gone, or kept moving: the op row stands
        log.warning("op %s: its edit was not shown in session %s: %s", op.op_id, op.session_id, exc)
