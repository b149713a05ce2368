"""One tool called directly, outside a turn: the one path both ``POST /tools/{tool-name}``
(``app/routes/tools.py``) and the MCP server (``interop/mcp_server.py``) take. The call runs
through the same pipeline as a turn's (identity, grants, schema, timeouts, audit) with a detached
job ticket: an async tool is served only when it declares a ``poll_url``, where the caller reads
the outcome.

The answer has one shape on both surfaces (docs/integrations.md)::

    {"toolId": name, "kind": "value" | "table" | "handle" | "interaction" | "error" | "async_job" | …,
     "data": …, "jobId"?: …, "pollUrl"?: …}

``tool`` repeats ``toolId``: the key MCP answers used to carry, kept for one release (0.2 drops it).
"""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Any

from tether.core.messages import ToolCall
from tether.core.session import Identity, new_id
from tether.core.tools import JobTicket, Tool, ToolContext

if TYPE_CHECKING:
    from tether.wiring import Services

HIDDEN = frozenset({"load_skill"})  # only a turn loads a skill


def callable_directly(tool: Tool | None) -> bool:
    """Whether a tool can be called outside a session: not ``load_skill``, and not an async tool
    without a ``poll_url`` (no session would take its callback)."""
    return tool is not None and tool.name not in HIDDEN and not (tool.is_async and tool.poll_url is None)


def tool_answer(name: str, kind: str, data: Any, **more: Any) -> dict[str, Any]:
    """The direct call's answer: ``toolId``, ``kind``, ``data`` (and ``more``), with ``tool`` as
    the old alias of ``toolId``."""
    return {"toolId": name, "tool": name, "kind": kind, "data": data, **more}


async def call_tool(services: Services, who: Identity, name: str, args: dict[str, Any], via: str) -> dict[str, Any]:
    """Run ``name`` once as ``who`` through the pipeline; ``via`` says which surface called
    (``direct`` for HTTP, ``mcp``). The caller has checked ``callable_directly``."""

    async def detached_ticket() -> JobTicket:
        return JobTicket(f"job-{secrets.token_hex(18)}", "", "")

    call = ToolCall(new_id("call"), name, json.dumps(args, ensure_ascii=False))
    context = {"_provider": who.provider, "_via": via}
    ctx = ToolContext(who.owner, "", via, call.id, context, who.grants, who.credential, issue_job=detached_ticket)
    outcome = await services.deps.pipeline.run(call, frozenset({name}), ctx, lambda *_: None)
    tool = services.registry.get(name)
    more: dict[str, Any] = {}
    if outcome.kind == "async_job" and tool is not None and tool.poll_url is not None:
        job_id = outcome.data["externalJobId"]
        more = {"jobId": job_id, "pollUrl": tool.poll_url.replace("{job_id}", job_id)}
    return tool_answer(name, outcome.kind, outcome.data, **more)
