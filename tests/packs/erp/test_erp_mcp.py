"""The MCP server at ``/mcp`` against a live ``tether serve`` with the demo ERP, driven by the
``mcp`` SDK's own client (``ClientSession`` over ``streamable_http_client``): the ERP user's token
is the bearer token, each tool runs through the same pipeline and form gate as a turn, and a call
without a known token is refused."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.packs.erp.conftest import ErpServer, facts

pytestmark = pytest.mark.slow

NO_ACCESS = "no such form or no access"


async def _with_session(url: str, token: str | None, fn: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url + "/mcp", http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await fn(session)


def mcp_call(server: ErpServer, token: str | None, fn: Any) -> Any:
    return asyncio.run(_with_session(server.url, token, fn))


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict), result
    text = result.content[0]
    assert isinstance(text, types.TextContent) and json.loads(text.text) == result.structured_content
    return result.structured_content


def test_the_read_tools_over_mcp_with_the_callers_grants(erp_server: ErpServer) -> None:
    token = erp_server.token("sales01")  # granted 1001, 2001, 2002, 2003 — not stock (4001) or AR (5001)

    async def session(s: ClientSession) -> dict[str, Any]:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        found = await s.call_tool("find_forms", {"query": "报价 库存 应收"})
        refused = await s.call_tool("read_form_data", {"form_id": "4001", "filters": {"material_code": "M0001"}})
        ar = await s.call_tool("lookup_record", {"form_id": "5001", "record_id": "1"})
        own = await s.call_tool("read_form_data", {"form_id": "1001"})
        bad = await s.call_tool("read_form_data", {"form_id": "1001", "bUpdate": 1})
        unknown = await s.call_tool("load_skill", {"name": "x"})
        return {
            "tools": tools,
            "found": found,
            "refused": refused,
            "ar": ar,
            "own": own,
            "bad": bad,
            "unknown": unknown,
        }

    r = mcp_call(erp_server, token, session)
    tools = r["tools"]
    assert {"find_forms", "kg_search", "read_form_data", "lookup_record", "query_data"} <= set(tools)
    assert "load_skill" not in tools
    assert tools["read_form_data"].input_schema["properties"]["form_id"]
    assert tools["read_form_data"].annotations.read_only_hint is True

    forms = structured(r["found"])["data"]["forms"]
    assert {f["formId"] for f in forms} <= set(facts.SALES_FORMS)  # the caller's forms only
    for refusal in (r["refused"], r["ar"]):  # an ungranted form is refused, as in a turn
        assert refusal.is_error
        body = structured(refusal)
        assert body["kind"] == "error" and NO_ACCESS in body["data"]["error"]
        assert "6204-2RS" not in json.dumps(body, ensure_ascii=False)
    own = structured(r["own"])
    assert not r["own"].is_error and own["kind"] == "value" and own["data"]["rows"] and own["data"]["total"] > 0
    assert r["bad"].is_error and "bUpdate" in structured(r["bad"])["data"]["error"]
    assert r["unknown"].is_error

    # the same refusal through the HTTP tool endpoint: one pipeline, one gate
    with erp_server.client(token) as c:
        direct = erp_server.tool(c, "read_form_data", {"form_id": "4001", "filters": {"material_code": "M0001"}})
    assert direct["kind"] == "error" and NO_ACCESS in direct["data"]["error"]
    assert token not in erp_server.log_text()


def test_mcp_without_a_known_token_is_refused(erp_server: ErpServer) -> None:
    for token in (None, "not-a-token"):
        r = httpx.post(
            erp_server.url + "/mcp",
            headers={
                "Accept": "application/json, text/event-stream",
                **({"Authorization": f"Bearer {token}"} if token else {}),
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
        assert r.status_code == 401, r.text
        assert r.headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(BaseException) as refused:  # the SDK's client sees the 401 as an error response
        mcp_call(erp_server, None, lambda s: s.list_tools())
    assert "MCPError" in repr(refused.value)
