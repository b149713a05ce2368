"""Seed 000 §2.4's internal ``/tools/*`` endpoints, generalised: ``POST /tools/{tool-name}`` runs a
registered tool through the same pipeline (identity, grants, schema, audit) as a turn does — the
path the MCP server takes too (``tether.direct_call``), with the same answer.

An async tool is served only when it declares a ``poll_url``: it starts with a detached job
ticket (no session waits for a callback), and the answer carries ``jobId`` and ``pollUrl``, where
the caller reads the outcome. Other async tools run inside a session only (404 here).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body

from tether.app.deps import IdentityDep, ServicesDep
from tether.direct_call import HIDDEN, call_tool, callable_directly
from tether.errors import NotFound

router = APIRouter(prefix="/tools", tags=["tools"])


@router.post("/{tool_path}", summary="Run one tool directly (identity and grants enforced)")
async def run_tool(
    tool_path: str, services: ServicesDep, who: IdentityDep, args: dict[str, Any] = Body(default_factory=dict)
) -> dict[str, Any]:
    name = tool_path.replace("-", "_")
    tool = services.registry.get(name)
    if tool is None or tool.name in HIDDEN:
        raise NotFound(f"no tool at /tools/{tool_path}")
    if not callable_directly(tool):
        raise NotFound(f"/tools/{tool_path} is an async tool; call it inside a session")
    return await call_tool(services, who, name, args, via="direct")
