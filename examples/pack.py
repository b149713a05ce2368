"""An example pack: how to write a decorator tool, an HTTP tool, an async tool and a skill.

Load it with ``TETHER_PACKS=examples`` (the default when run from the repository root). The async
tool plays an external system with a file outbox: each job's ticket (id, callback URL and token)
is written to ``var/example-outbox/<job id>.json``, and whoever holds it answers through
``POST /api/agent/tool-callback``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tether.pack import AsyncJobStarted, ErrorResult, Pack, PlannerQuestion, ToolContext, http_tool, tool

ORDERS = {
    "A-1001": {"order_id": "A-1001", "customer": "华东精密", "total": 1280.0, "currency": "CNY", "items": 3},
    "A-1002": {"order_id": "A-1002", "customer": "Northwind", "total": 455.5, "currency": "CNY", "items": 1},
}
RATES = {"CNY": 1.0, "USD": 0.14, "EUR": 0.13}
OUTBOX = Path("var/example-outbox")


@tool(timeout_s=5, read_only=True)
async def lookup_order(ctx: ToolContext, order_id: str) -> Any:
    """Look up an order by id (e.g. A-1001): customer, total, currency, item count."""
    order = ORDERS.get(order_id.upper())
    if order is None:
        return ErrorResult(f"no order {order_id!r}; known orders: {', '.join(ORDERS)}")
    return order


async def convert_handler(body: dict[str, Any], ctx: ToolContext) -> Any:
    rate = RATES[body["to"]]
    return {"amount": body["amount"], "to": body["to"], "converted": round(body["amount"] * rate, 2)}


convert_currency = http_tool(
    "convert_currency",
    "Convert an amount in CNY to another currency (USD, EUR, CNY).",
    {
        "properties": {"amount": {"type": "number"}, "to": {"type": "string", "enum": sorted(RATES)}},
        "required": ["amount", "to"],
    },
    "/convert",
    base_url="local://tools",
    local={"/convert": convert_handler},
)


@tool(is_async=True)
async def start_shipping_quote(ctx: ToolContext, order_id: str) -> Any:
    """Ask the carrier for a shipping quote; the answer arrives later by callback."""
    ticket = await ctx.async_job()
    OUTBOX.mkdir(parents=True, exist_ok=True)
    job = {
        "externalJobId": ticket.job_id,
        "callbackUrl": ticket.callback_url,
        "callbackToken": ticket.token,
        "orderId": order_id,
    }
    (OUTBOX / f"{ticket.job_id}.json").write_text(json.dumps(job, indent=2))
    return AsyncJobStarted(ticket, "quote requested from the carrier")


ORDER_RE = re.compile(r"\b([A-Za-z]-\d{4})\b")


def extract(query: str, global_context: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    match = ORDER_RE.search(query)
    if match:
        found["order_id"] = match.group(1).upper()
    elif "order" in query.lower() or "订单" in query:
        raise PlannerQuestion(f"Which order do you mean? Known orders: {', '.join(ORDERS)}.")
    currency = next((c for c in RATES if c in query.upper()), None)
    found["currency"] = currency or global_context.get("currency", "USD")
    return found


def pack(env: Any) -> Pack:
    return Pack(
        name="examples",
        tools=[lookup_order, convert_currency, start_shipping_quote],
        skill_dirs=[Path(__file__).parent / "skills"],
        extractors=[extract],
    )
