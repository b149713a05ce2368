"""``tether mcp`` (stdio) driven by the ``mcp`` SDK's own stdio client: the example pack's tools,
run as the token's identity through the pipeline; no token, no server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env |= {
        "TETHER_PACKS": str(ROOT / "examples"),
        "TETHER_DATABASE_URL": f"sqlite:///{tmp_path / 'tether.db'}",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),  # no saved login
    }
    return env


def test_stdio_server_runs_tools_as_the_tokens_identity(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tether.cli", "mcp", "--token", "dev-alice"],
        env=_env(tmp_path),
        cwd=tmp_path,
    )

    async def main() -> tuple[list[str], types.CallToolResult, types.CallToolResult]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            ok = await s.call_tool("lookup_order", {"order_id": "A-1001"})
            bad = await s.call_tool("lookup_order", {"order": "A-1001"})
            return names, ok, bad

    names, ok, bad = asyncio.run(main())
    assert "lookup_order" in names and "convert_currency" in names
    assert "start_shipping_quote" not in names  # async, no poll_url: only inside a session
    assert not ok.is_error and ok.structured_content["kind"] == "value"
    assert "A-1001" in json.dumps(ok.structured_content)
    assert bad.is_error and "order_id" in ok.structured_content.__repr__() + json.dumps(bad.structured_content)


def test_stdio_server_refuses_to_start_without_a_known_token(tmp_path: Path) -> None:
    for extra in ([], ["--token", "nobody-knows-me"]):
        r = subprocess.run(
            [sys.executable, "-m", "tether.cli", "mcp", *extra],
            env=_env(tmp_path),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert r.returncode == 2, r.stderr
        assert "token" in r.stderr and r.stdout == ""
