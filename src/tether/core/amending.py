"""A pending interaction's payload changed outside the turn (an op's proposed values edited
through ``PATCH /api/ops/{opId}``): the update is merged into the interaction — the head or one
queued behind it — so ``pendingInteraction`` and a reloaded page show it. Pure: the runtime
commits it (``Runtime.amend_interaction``)."""

from __future__ import annotations

from typing import Any

from tether.core.session import AgentSession


def amend_pending(s: AgentSession, interaction_id: str | None, update: dict[str, Any]) -> bool:
    """Merge ``update`` into the payload of ``s``'s pending interaction ``interaction_id``;
    -> whether it was pending."""
    head = s.pending_interaction
    if not head or not any(e["interactionId"] == interaction_id for e in s.pending_entries()):
        return False

    def amend(entry: dict[str, Any]) -> dict[str, Any]:
        if entry.get("interactionId") != interaction_id:
            return entry
        return {**entry, "payload": {**(entry.get("payload") or {}), **update}}

    queued = [amend(e) for e in head.get("queued", [])]
    s.pending_interaction = {**amend(head), **({"queued": queued} if "queued" in head else {})}
    return True
