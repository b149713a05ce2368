"""Seed 000 §2.4's internal ``/tools/*`` endpoints, generalised: ``POST /tools/{tool-name}`` runs a
registered tool through the same pipeline (identity, grants, schema) as a turn does."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Body

from tether.app.deps import IdentityDep, ServicesDep
from tether.core.messages import ToolCall
from tether.core.session import new_id
from tether.core.tools import ToolContext
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
    if tool.is_async:
        raise NotFound(f"/tools/{tool_path} is an async tool; call it inside a session")
    call = ToolCall(new_id("call"), name, json.dumps(args, ensure_ascii=False))
    ctx = ToolContext(who.owner, "", "direct", call.id, {}, who.grants, who.credential)
    outcome = await services.deps.pipeline.run(call, frozenset({name}), ctx, lambda *_: None)
    return {"toolId": name, "kind": outcome.kind, "data": outcome.data}
