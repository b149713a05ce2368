"""``tether audit verify``'s second check, beside the hash chain: every op the business system
executed ran the values that were confirmed and approved. An ``op.execute`` row with outcome
``executed`` records the fingerprint of what the business system says it executed
(``executedFingerprint``); the op's last ``op.confirm`` row before it (the requester's confirm, or
the last approval passing the gate) records the fingerprint of what was confirmed and approved
(``stagedFingerprint``). A difference — or an executed op with no confirm before it — is a break.
Rows written before the binding existed carry neither field and are not judged."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tether.store.audit import AuditBreak


def _args(row: dict[str, Any]) -> dict[str, Any]:
    try:
        args = json.loads(row.get("args") or "{}")
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}


def binding_break(rows: Iterable[dict[str, Any]]) -> AuditBreak | None:
    """The first executed op whose recorded fingerprint differs from its approved one, or None."""
    approved: dict[str, str | None] = {}
    for row in rows:
        tool, op_id = str(row.get("tool_id") or ""), str(row.get("tool_call_id") or "")
        if tool == "op.confirm":
            approved[op_id] = _args(row).get("stagedFingerprint")
        elif tool == "op.execute" and row.get("outcome") == "executed":
            ran = _args(row).get("executedFingerprint")
            if ran is None:
                continue
            if op_id not in approved:
                return AuditBreak(int(row["id"]), f"op {op_id} was executed with no confirm recorded before it")
            if approved[op_id] is not None and approved[op_id] != ran:
                return AuditBreak(
                    int(row["id"]),
                    f"op {op_id} executed fingerprint {str(ran)[:16]}, but {str(approved[op_id])[:16]} was "
                    "confirmed and approved: what ran is not what was approved",
                )
    return None
