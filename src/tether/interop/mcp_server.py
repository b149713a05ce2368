"""The MCP server: tether's installed tools over the Model Context Protocol (the official ``mcp``
SDK), at ``/mcp`` (streamable HTTP) and through ``tether mcp`` (stdio).

Every call takes the same path as a turn's: the caller's bearer token is resolved by the same
identity providers (``wiring.identity_chain``), and the tool runs through the same pipeline with the
caller's grants and credential — the ERP's form gate, schema checks, timeouts and the audit log all
apply. Over HTTP a request without a known token is refused with 401 before it reaches the MCP
session; over stdio the token comes from ``--token``, ``TETHER_TOKEN`` or the saved login, and the
server does not start without one.

Tools that only make sense inside a turn are not offered: ``load_skill`` and async tools with no
``poll_url`` (no session would take their callback). A call answers as ``POST /tools/{name}`` does
(``tether.direct_call``: ``toolId``, ``kind``, ``data``; ``tool`` is the old alias of ``toolId``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from tether import __version__
from tether.core.answer_check import accept_answer_of
from tether.core.session import Identity
from tether.core.tools import Tool
from tether.direct_call import call_tool, callable_directly, tool_answer
from tether.errors import InvalidInput, Unauthorized, Unavailable
from tether.identity import IdentityProvider
from tether.wiring import Services

log = logging.getLogger("tether.mcp")
INSTRUCTIONS = (
    "tether's governed tools. Every call runs with your identity and grants; business data is bounded "
    "to what you may see. Writes are proposals: confirming one is a person's action in tether, not a tool."
)
# tools that ask a person: elicited from the MCP client's user where it supports elicitation,
# returned as structured content (the question or form) otherwise
PERSON_TOOLS = frozenset({"ask_user", "collect_form"})
CONFIRM_HINT = "a person confirms it over HTTP: POST /api/ops/{op_id}/confirm (or cancels: …/cancel)"
UNAUTHORIZED = -32001  # a server-defined JSON-RPC error code


def bearer(headers: Any) -> str | None:
    raw = headers.get("authorization", "") if headers is not None else ""
    scheme, _, token = str(raw).partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class TetherMcp:
    """One MCP server over one runtime. ``identity`` fixes the caller (stdio); otherwise each
    request's ``Authorization`` header names it."""

    def __init__(self, services: Services, provider: IdentityProvider, identity: Identity | None = None) -> None:
        self.services = services
        self.provider = provider
        self.identity = identity
        self.server: Server[Any] = Server(
            "tether",
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # ---- identity ---------------------------------------------------------------------------------

    async def resolve(self, token: str | None) -> Identity | None:
        if not token:
            return None
        try:
            return await self.provider.identify(token)
        except Unauthorized:
            return None

    async def _caller(self, ctx: Any) -> Identity:
        if self.identity is not None:
            return self.identity
        request = getattr(ctx, "request", None)
        who = await self.resolve(bearer(getattr(request, "headers", None)))
        if who is None:
            raise MCPError(UNAUTHORIZED, "send 'Authorization: Bearer <token>' with a token tether knows")
        return who

    # ---- tools ------------------------------------------------------------------------------------

    def offered(self) -> list[Tool]:
        registry = self.services.registry
        tools = [registry.get(n) for n in registry.names()]
        return [t for t in tools if t is not None and callable_directly(t)]

    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        await self._caller(ctx)
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description,
                    input_schema=t.parameters,
                    annotations=types.ToolAnnotations(read_only_hint=t.read_only),
                )
                for t in self.offered()
            ]
        )

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        who = await self._caller(ctx)
        name = params.name
        if name not in {t.name for t in self.offered()}:
            return _error(f"no tool named {name!r}")
        args = params.arguments or {}
        tool = self.services.registry.get(name)
        assert tool is not None
        if name in PERSON_TOOLS:
            return await self._ask_person(ctx, who, tool, args)
        if not tool.read_only and not tool.is_async:
            return _result(await self.run_in_session(who, name, args))
        return _result(await self.run_tool(who, name, args))

    async def run_in_session(self, who: Identity, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """A tool with side effects (``propose_write``) runs as the only step of a tether session of
        its own, so a proposal it makes is a draft op of that session — listed at ``/api/ops`` and
        confirmed there by a person, never by an MCP tool. Nothing is executed here."""
        title = f"MCP: {name}"
        s = await self.services.runtime.start_tool_session(who, name, args, title, via="mcp")
        pending = s.pending_entries()
        base = {"toolId": name, "tool": name, "sessionId": s.session_id, "status": s.status.value}
        if pending and pending[0]["kind"] == "proposal":
            proposal = dict(pending[0]["payload"])
            op_id = str(proposal.get("opId", ""))
            data = {
                **proposal,
                "confirm": CONFIRM_HINT.replace("{op_id}", op_id),
                "interactionId": pending[0]["interactionId"],
            }
            return {**base, "kind": "proposal", "data": data}
        if pending:  # the tool asked something first (an ambiguous value): answer it in the session
            entry = pending[0]
            data = {"kind": entry["kind"], "payload": entry["payload"], "interactionId": entry["interactionId"]}
            return {**base, "kind": "interaction", "data": data}
        if s.status.value == "FAILED":
            return {**base, "kind": "error", "data": {"error": s.last_error or f"{name} failed", "retryable": False}}
        step = s.step(s.executed_steps[-1].tool_call_id) if s.executed_steps else None
        return {**base, "kind": "value", "data": step.result if step is not None else None}

    async def _ask_person(self, ctx: Any, who: Identity, tool: Tool, args: dict[str, Any]) -> types.CallToolResult:
        body = await self.run_tool(who, tool.name, args)
        if body["kind"] != "interaction":
            return _result(body)  # refused (an ungranted form, bad arguments) or a plain value
        kind, payload = body["data"]["kind"], body["data"]["payload"]
        session = getattr(ctx, "session", None)
        capabilities = getattr(session, "client_capabilities", None)
        if session is None or capabilities is None or capabilities.elicitation is None or not session.can_send_request:
            return _result(body)  # the client cannot elicit: it gets the question or form to show
        message, schema = elicitation(kind, payload)
        reply = await session.elicit_form(message, schema, related_request_id=ctx.request_id)
        if reply.action != "accept":
            return _result(tool_answer(tool.name, "value", {"action": reply.action}))
        answer: dict[str, Any] = (
            {"answer": (reply.content or {}).get("answer")} if kind == "question" else {"values": reply.content or {}}
        )
        try:  # the same server-side check as an answer over HTTP
            answer = await accept_answer_of(tool, {"kind": kind, "payload": payload}, answer, who)
        except InvalidInput as exc:
            problems = getattr(exc, "problems", None)
            data = {"error": exc.message, "problems": problems, "retryable": True}
            return _result(tool_answer(tool.name, "error", data))
        return _result(tool_answer(tool.name, "value", {"action": "accept", **answer}))

    async def run_tool(self, who: Identity, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """One call through the pipeline as the caller, exactly as ``POST /tools/{name}`` runs it."""
        return await call_tool(self.services, who, name, args, via="mcp")

    # ---- streamable HTTP ----------------------------------------------------------------------------

    def http_app(self) -> McpHttpApp:
        manager = StreamableHTTPSessionManager(app=self.server, json_response=False, stateless=False)
        return McpHttpApp(self, manager)


class McpHttpApp:
    """The ASGI app at ``/mcp``: 401 without a token the identity providers know, then the SDK's
    streamable HTTP transport. ``lifespan()`` runs the SDK's session manager with the server."""

    def __init__(self, mcp: TetherMcp, manager: StreamableHTTPSessionManager) -> None:
        self.mcp = mcp
        self.manager = manager

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            try:
                who = await self.mcp.resolve(bearer(headers))
            except Unavailable as exc:  # the identity's system is down: not a login problem
                body = {"error": exc.message, "code": "UPSTREAM_UNAVAILABLE", "retryAfter": exc.retry_after_s}
                headers_out = {"Retry-After": str(exc.retry_after_s)}
                await JSONResponse(body, status_code=503, headers=headers_out)(scope, receive, send)
                return
            if who is None:
                response = JSONResponse(
                    {"error": "send 'Authorization: Bearer <token>' with a token tether knows"},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="tether"'},
                )
                await response(scope, receive, send)
                return
        await self.manager.handle_request(scope, receive, send)


JSON_TYPES = {"number": "number", "integer": "integer", "bool": "boolean"}


def elicitation(kind: str, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A question or form as an MCP elicitation: a message and a flat schema of primitive fields
    (what elicitation allows; a form's detail lines are not elicited)."""
    if kind == "question":
        answer: dict[str, Any] = {"type": "string", "title": "answer"}
        values = [_option_value(o) for o in payload.get("options") or []]
        if values and not payload.get("allowFreeText", True):
            answer["enum"] = values
        elif values:
            answer["description"] = "e.g. " + ", ".join(values)
        return str(payload.get("question") or "?"), {
            "type": "object",
            "properties": {"answer": answer},
            "required": ["answer"],
        }
    properties: dict[str, Any] = {}
    required: list[str] = []
    prefill = payload.get("prefill") or {}
    for f in payload.get("fields") or []:
        column = str(f["column"])
        prop: dict[str, Any] = {
            "type": JSON_TYPES.get(str(f.get("type")), "string"),
            "title": str(f.get("label") or column),
        }
        options = f.get("options")
        if options and prop["type"] == "string":
            prop["enum"] = [_option_value(o) for o in options]
        if f.get("type") == "date":
            prop["format"] = "date"
        if f.get("maxLength") and prop["type"] == "string":
            prop["maxLength"] = int(f["maxLength"])
        default = prefill.get(column, f.get("default"))
        if default is not None and not isinstance(default, dict | list):
            prop["default"] = default
        properties[column] = prop
        if f.get("required"):
            required.append(column)
    name = payload.get("formName") or payload.get("formId")
    return f"Fill in {name}", {"type": "object", "properties": properties, "required": required}


def _option_value(option: Any) -> str:
    if isinstance(option, dict):
        return str(option.get("value", option))
    if isinstance(option, list | tuple) and option:
        return str(option[0])
    return str(option)


def _result(body: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(body, ensure_ascii=False, default=str)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=json.loads(text),
        is_error=body["kind"] == "error",
    )


def _error(message: str) -> types.CallToolResult:
    return _result(tool_answer("", "error", {"error": message, "retryable": False}))


async def serve_stdio(settings: Any, token: str) -> int:
    """``tether mcp``: one caller (the token's identity), MCP over stdin/stdout. Tools that reach a
    business system over HTTP (the ERP pack) need it running (``TETHER_ERP_BASE_URL``)."""
    import contextlib
    import sys

    from mcp.server.stdio import stdio_server

    from tether.wiring import build_services, identity_chain

    services = build_services(settings)
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the protocol's: nothing else may write there
        await services.start(sweep=False)
    try:
        mcp = TetherMcp(services, identity_chain(services))
        who = await mcp.resolve(token)
        if who is None:
            print("tether mcp: the token is not known to any identity provider; refusing to serve", file=sys.stderr)
            return 2
        mcp.identity = who
        async with stdio_server() as (read, write):
            await mcp.server.run(read, write, mcp.server.create_initialization_options())
        return 0
    finally:
        await services.stop()
