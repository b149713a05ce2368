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


def _erp_write(server: ErpServer, token: str, body: dict[str, Any]) -> dict[str, Any]:
    with server.erp_direct(token) as erp:
        r = erp.post("/addUpdateDelBusinessData", json=body)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out


def test_a_proposal_over_mcp_is_a_draft_op_that_executes_nothing(erp_server: ErpServer) -> None:
    token = erp_server.token("sales01")
    data = {"customer_id": facts.SALES01_CUSTOMER[0], "remark": "原备注"}
    bill = _erp_write(
        erp_server,
        token,
        {"sFormId": "2001", "handleType": "add", "data": data, "details": [{"material_id": "M0001", "qty": 5}]},
    )
    args = {"form_id": "2001", "op": "update", "record_id": bill["sId"], "payload": {"remark": "请加急发货"}}

    async def session(s: ClientSession) -> tuple[list[str], types.CallToolResult]:
        names = [t.name for t in (await s.list_tools()).tools]
        return names, await s.call_tool("propose_write", args)

    names, result = mcp_call(erp_server, token, session)
    assert "propose_write" in names and not [n for n in names if "confirm" in n]  # confirming is not a tool
    body = structured(result)
    assert not result.is_error and body["kind"] == "proposal", body
    proposal = body["data"]
    op_id = proposal["opId"]
    assert proposal["diff"] == [{"field": "remark", "label": "备注", "before": "原备注", "after": "请加急发货"}]
    assert f"/api/ops/{op_id}/confirm" in proposal["confirm"]
    assert body["status"] == "WAITING_CONFIRMATION"
    with erp_server.client(token) as c:
        op = c.get(f"/api/ops/{op_id}").json()
        assert op["status"] == "draft" and op["sessionId"] == body["sessionId"]
        with erp_server.erp_direct(token) as erp:
            record = erp.get(f"/getBusinessDataById/2001/{bill['sId']}").json()
        assert record["master"]["remark"] == "原备注"  # nothing was executed
        stored = c.get(f"/api/agent/sessions/{body['sessionId']}").json()
        assert stored["pendingInteraction"]["kind"] == "proposal"
        assert [st["toolId"] for st in stored["executedSteps"]] == ["propose_write"]
    with erp_server.client(erp_server.token("sales02")) as other:  # another user does not see it
        assert other.get(f"/api/ops/{op_id}").status_code == 404


def test_questions_and_forms_elicit_where_the_client_can_and_are_content_otherwise(erp_server: ErpServer) -> None:
    token = erp_server.token("sales01")
    seen: list[types.ElicitRequestFormParams] = []
    answers: list[dict[str, Any]] = [{"answer": "B"}, {"answer": "Z"}, {}]

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        seen.append(params)
        return types.ElicitResult(action="accept", content=answers[len(seen) - 1])

    question = {"question": "A or B?", "options": ["A", "B"], "allow_free_text": False}

    async def with_elicitation(url: str) -> list[types.CallToolResult]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            streamable_http_client(url + "/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write, elicitation_callback=elicit) as s,
        ):
            await s.initialize()
            return [
                await s.call_tool("ask_user", question),
                await s.call_tool("ask_user", question),
                await s.call_tool("collect_form", {"form_id": "2001"}),
                await s.call_tool("collect_form", {"form_id": "4001"}),  # not granted: refused, nothing asked
            ]

    picked, wrong, empty_form, ungranted = asyncio.run(with_elicitation(erp_server.url))
    assert structured(picked)["data"] == {"action": "accept", "answer": "B"}
    assert seen[0].requested_schema["properties"]["answer"]["enum"] == ["A", "B"]
    assert wrong.is_error and "option" in structured(wrong)["data"]["error"]
    assert empty_form.is_error and structured(empty_form)["data"]["problems"]  # checked on the server
    assert "customer_id" in seen[2].requested_schema["properties"]
    assert len(seen) == 3
    assert ungranted.is_error and NO_ACCESS in structured(ungranted)["data"]["error"]

    async def without(s: ClientSession) -> types.CallToolResult:  # no elicitation: the form as content
        return await s.call_tool("collect_form", {"form_id": "2001"})

    form = structured(mcp_call(erp_server, token, without))
    assert form["kind"] == "interaction" and form["data"]["kind"] == "form"
    assert "customer_id" in {f["column"] for f in form["data"]["payload"]["fields"]}


def test_the_sdks_high_level_client_on_both_protocol_eras(erp_server: ErpServer) -> None:
    """``mcp.Client`` negotiates: ``auto`` speaks the 2026-07-28 per-request protocol, ``legacy``
    the initialize handshake; the bearer token reaches tether either way."""
    from mcp.client.client import Client

    token = erp_server.token("sales01")

    async def one(mode: str) -> tuple[str, types.CallToolResult]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            Client(streamable_http_client(erp_server.url + "/mcp", http_client=http), mode=mode) as client,
        ):
            refused = await client.call_tool("read_form_data", {"form_id": "4001"})
            return client.protocol_version, refused

    versions = set()
    for mode in ("auto", "legacy"):
        version, refused = asyncio.run(one(mode))
        versions.add(version)
        assert refused.is_error and NO_ACCESS in structured(refused)["data"]["error"]
    assert len(versions) == 2, versions
