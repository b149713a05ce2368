"""Seed 000 §2.4's internal ``/tools/*`` endpoints, generalised: ``POST /tools/{tool-name}`` runs a
registered tool through the same pipeline (identity, grants, schema, audit) as a turn does.

An async tool is served only when it declares a ``poll_url``: it starts with a detached job
ticket (no session waits for a callback), and the answer carries ``jobId`` and ``pollUrl``, where
the caller reads the outcome. Other async tools run inside a session only (404 here).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from fastapi import APIRouter, Body

from tether.app.deps import IdentityDep, ServicesDep
from tether.core.messages import ToolCall
from tether.core.session import new_id
from tether.core.tools import JobTicket, ToolContext
from tether.errors import NotFound

router = APIRouter(prefix="/tools", tags=["tools"])


@router.post("/{tool_path}", summary="Run one tool directly (identity and grants enforced)")
async def run_tool(
    tool_path: str, services: ServicesDep, who: IdentityDep, args: dict[str, Any] = Body(default_factory=dict)
) -> dict[str, Any]:
    name = tool_path.replace("-", "_")
    tool = services.registry.get(name)
    if tool is None or name == "load_skill":
        raise NotFound(f"no tool at /tools/{tool_path}")
    if tool.is_async and tool.poll_url is None:
        raise NotFound(f"/tools/{tool_path} is an async tool; call it inside a session")

    async def detached_ticket() -> JobTicket:
        return JobTicket(f"job-{secrets.token_hex(18)}", "", "")

    call = ToolCall(new_id("call"), name, json.dumps(args, ensure_ascii=False))
    ctx = ToolContext(who.owner, "", "direct", call.id, {}, who.grants, who.credential, issue_job=detached_ticket)
    outcome = await services.deps.pipeline.run(call, frozenset({name}), ctx, lambda *_: None)
    body: dict[str, Any] = {"toolId": name, "kind": outcome.kind, "data": outcome.data}
    if outcome.kind == "async_job" and tool.poll_url is not None:
        job_id = outcome.data["externalJobId"]
        body |= {"jobId": job_id, "pollUrl": tool.poll_url.replace("{job_id}", job_id)}
    return body
