"""The agent-side authorisation layer (seed 003 §7): form-level grants from ``sAuthsId``.

The ERP stores each user's granted forms but its data endpoints do not enforce them, so tether
does — here, in one boundary every tool calls (find, kg, read, lookup, query, the write tools)
and that DSL replay passes through too, since a replay runs the same tools with the replaying
user's grants. A form the user is not granted does not exist for them: every refusal is the same
"no such form or no access" answer an unknown form gets. Form level only, no field masking
(seed §7's decision).
"""

from __future__ import annotations

import re

from tether.pack import ToolContext, ToolError
from tether.packs.erp import messages

FORM_ID = re.compile(r"^[0-9]{1,9}$")
RECORD_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def no_access(form_id: object) -> ToolError:
    shown = str(form_id)[:40]
    return ToolError(
        f"no such form or no access: {shown!r}; use find_forms to see the forms you can use",
        code=messages.NO_ACCESS,
        params={"form": shown},
    )


def granted_form(ctx: ToolContext, form_id: object) -> str:
    """The form id when the caller is granted it; the one refusal otherwise."""
    text = str(form_id).strip()
    if not FORM_ID.match(text) or text not in ctx.grants:
        raise no_access(form_id)
    return text


def record_id(value: object) -> str:
    text = str(value).strip()
    if not RECORD_ID.match(text):
        shown = text[:40] + ("…" if len(text) > 40 else "")
        raise ToolError(
            "record_id must be the record's id (letters, digits, '-', '_', '.', ':'; at most 64)",
            code=messages.BAD_RECORD_ID,
            params={"value": shown},
        )
    return text
