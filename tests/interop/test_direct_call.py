"""One tool-execution path for HTTP and MCP (``tether.direct_call``): ``POST /tools/{name}`` and
an MCP ``tools/call`` of the same tool answer the same shape — ``toolId``, ``kind``, ``data`` —
with ``tool`` kept as the old key's alias for one release."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from fastapi.testclient import TestClient

from tether.app.main import create_app
from tether.interop.mcp_server import TetherMcp
from tether.settings import create_settings
from tether.wiring import identity_chain

ROOT = Path(__file__).resolve().parents[2]
ALICE = {"Authorization": "Bearer dev-alice"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = create_settings(database_url=f"sqlite:///{tmp_path / 'tether.db'}", packs=str(ROOT / "examples"))
    with TestClient(create_app(settings)) as c:
        yield c


def mcp_call(client: TestClient, name: str, args: dict[str, Any]) -> types.CallToolResult:
    services = client.app.state.services  # type: ignore[attr-defined]
    mcp = TetherMcp(services, identity_chain(services))

    async def call() -> types.CallToolResult:
        who = await mcp.resolve("dev-alice")
        assert who is not None
        mcp.identity = who  # the caller, as over stdio
        return await mcp._call_tool(None, types.CallToolRequestParams(name=name, arguments=args))

    return client.portal.call(call) if client.portal else asyncio.run(call())


def test_http_and_mcp_answer_one_shape(client: TestClient) -> None:
    http = client.post("/tools/lookup-order", json={"order_id": "A-1001"}, headers=ALICE).json()
    over_mcp = mcp_call(client, "lookup_order", {"order_id": "A-1001"}).structured_content
    assert over_mcp is not None
    for body in (http, over_mcp):
        assert body["toolId"] == body["tool"] == "lookup_order"
        assert body["kind"] == "value" and body["data"]["order_id"] == "A-1001"
    assert set(http) == set(over_mcp) == {"toolId", "tool", "kind", "data"}
    assert http["data"] == over_mcp["data"]


def test_a_refused_call_answers_the_same_error_on_both(client: TestClient) -> None:
    http = client.post("/tools/lookup-order", json={"order": "A-1001"}, headers=ALICE).json()
    result = mcp_call(client, "lookup_order", {"order": "A-1001"})
    assert result.is_error and result.structured_content is not None
    assert http["kind"] == result.structured_content["kind"] == "error"
    assert http["toolId"] == result.structured_content["toolId"] == "lookup_order"
    assert "order_id" in str(http["data"]) and "order_id" in str(result.structured_content["data"])


def test_what_runs_only_in_a_turn_is_refused_on_both(client: TestClient) -> None:
    assert client.post("/tools/load-skill", json={"name": "x"}, headers=ALICE).status_code == 404
    refused = client.post("/tools/start-shipping-quote", json={"order_id": "A-1001"}, headers=ALICE)
    assert refused.status_code == 404 and "inside a session" in refused.json()["error"]
    for name in ("load_skill", "start_shipping_quote"):
        result = mcp_call(client, name, {})
        assert result.is_error and result.structured_content is not None
        assert result.structured_content["kind"] == "error" and "no tool named" in str(result.structured_content)
