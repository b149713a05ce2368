"""The scale benchmark's pack: W1's tool loop as a skill the offline planner runs (eight lookups,
then an answer), and a pause so an SSE reader can attach before a turn's live events."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from tether.pack import Pack, tool

PAUSE_RE = re.compile(r"\bpause=([\d.]+)")


@tool(read_only=True)
async def lookup(i: int) -> dict[str, Any]:
    """Look up record number i."""
    return {"i": i, "id": f"item-000{i}", "status": "ok", "tags": ["alpha", "beta"], "text": "lorem ipsum " * 8}


@tool(read_only=True)
async def pause(seconds: float = 0.0) -> dict[str, Any]:
    """Wait a while (the benchmark's readers attach meanwhile)."""
    await asyncio.sleep(seconds)
    return {"slept": seconds}


def extract(query: str, global_context: dict[str, Any]) -> dict[str, Any]:
    found = PAUSE_RE.search(query)
    return {"pause": float(found.group(1)) if found else 0.0}


def pack(env: Any) -> Pack:
    return Pack(
        name="scalepack", tools=[lookup, pause], skill_dirs=[Path(__file__).parent / "skills"], extractors=[extract]
    )
