"""Declarative HTTP tools (seed 000 ToolsApiToolExecutor): an endpoint plus a JSON schema.

``base_url="local://tools"`` dispatches in-process to a registered handler (no socket); any
other base URL is called over HTTP with the caller's identity in headers. Async HTTP tools get a
job ticket (id, callback URL, callback token) in the request body under ``_job`` and return at
once; the remote side calls back later.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from tether.core.tools import AsyncJobStarted, Tool, ToolContext
from tether.errors import InvalidInput, ToolError

LocalHandler = Callable[[dict[str, Any], ToolContext], Awaitable[Any]]
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def schema_validator(schema: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A small validator for flat object schemas: types, required, enum, defaults; unknown keys are
    rejected unless ``additionalProperties`` is true."""
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    extra_ok = schema.get("additionalProperties", False) is True

    def validate(args: dict[str, Any]) -> dict[str, Any]:
        problems = [f"{k}: unknown argument" for k in args if k not in props and not extra_ok]
        problems += [f"{k}: required" for k in sorted(required - set(args))]
        out: dict[str, Any] = {}
        for key, spec in props.items():
            if key not in args:
                if "default" in spec:
                    out[key] = spec["default"]
                continue
            value = args[key]
            kinds = _TYPES.get(spec.get("type", ""), (object,))
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                problems.append(f"{key}: expected {spec.get('type')}")
            elif "enum" in spec and value not in spec["enum"]:
                problems.append(f"{key}: must be one of {spec['enum']}")
            out[key] = value
        if problems:
            raise InvalidInput("invalid arguments: " + "; ".join(problems))
        return out | ({k: v for k, v in args.items() if k not in props} if extra_ok else {})

    return validate


def http_tool(
    name: str,
    description: str,
    parameters: dict[str, Any],
    endpoint: str,
    *,
    base_url: str,
    local: dict[str, LocalHandler] | None = None,
    is_async: bool = False,
    timeout_s: float = 30.0,
    client: httpx.AsyncClient | None = None,
) -> Tool:
    schema = {"type": "object", "additionalProperties": False, **parameters}

    async def run(args: dict[str, Any], ctx: ToolContext) -> Any:
        body = dict(args)
        ticket = await ctx.async_job() if is_async else None
        if ticket is not None:
            body["_job"] = {
                "externalJobId": ticket.job_id,
                "callbackUrl": ticket.callback_url,
                "callbackToken": ticket.token,
            }
        if base_url.startswith("local://"):
            handler = (local or {}).get(endpoint)
            if handler is None:
                raise ToolError(f"no local handler for {endpoint} (base URL {base_url})")
            result = await handler(body, ctx)
        else:
            result = await _post(client, base_url.rstrip("/") + endpoint, body, ctx, timeout_s)
        return AsyncJobStarted(ticket) if ticket is not None else result

    return Tool(name, description, schema, run, schema_validator(schema), timeout_s=timeout_s + 1, is_async=is_async)


async def _post(
    client: httpx.AsyncClient | None, url: str, body: dict[str, Any], ctx: ToolContext, timeout_s: float
) -> Any:
    headers = {
        "X-Tether-User": ctx.owner.user_id,
        "X-Tether-Tenant": ctx.owner.tenant,
        "X-Tether-Session": ctx.session_id,
    }
    if ctx.credential:
        headers["Authorization"] = f"Bearer {ctx.credential}"
    owned = client is None
    http = client or httpx.AsyncClient(timeout=timeout_s)
    try:
        response = await http.post(url, json=body, headers=headers)
    except httpx.HTTPError as exc:
        raise ToolError(f"HTTP tool endpoint unreachable: {type(exc).__name__}", retryable=True) from None
    finally:
        if owned:
            await http.aclose()
    if response.status_code >= 400:
        raise ToolError(
            f"HTTP tool endpoint answered {response.status_code}: {response.text[:200]}",
            retryable=response.status_code >= 500,
        )
    try:
        return response.json()
    except ValueError:
        return response.text
