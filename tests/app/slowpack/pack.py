"""A test pack for the HTTP and restart tests: one slow, counted tool and a skill that plans it.

``slow_step`` appends ``start`` to ``var/test-counter/<label>.log`` (relative to the server's
working directory) before it sleeps and ``end`` after, so a test can tell how often a call ran,
and whether it was cut off, across server processes. The planner picks the skill on the keyword
``slowly``; the request says ``label=<name>`` and ``sleep=<s1>,<s2>,<s3>`` (seconds per step).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from tether.pack import Pack, ToolContext, tool

COUNTER = Path("var/test-counter")
LABEL_RE = re.compile(r"\blabel=([\w-]+)")
SLEEP_RE = re.compile(r"\bsleep=([\d.,]+)")


def _mark(label: str, what: str) -> int:
    COUNTER.mkdir(parents=True, exist_ok=True)
    path = COUNTER / f"{label}.log"
    with path.open("a") as f:
        f.write(what + "\n")
    return path.read_text().split().count("start")


@tool(timeout_s=60)
async def slow_step(ctx: ToolContext, label: str, seconds: float = 0.0) -> Any:
    """Sleep for a while and count the call (a test tool)."""
    run = _mark(label, "start")
    await asyncio.sleep(seconds)
    _mark(label, "end")
    return {"label": label, "run": run, "slept": seconds}


def extract(query: str, global_context: dict[str, Any]) -> dict[str, Any]:
    label = LABEL_RE.search(query)
    sleeps = SLEEP_RE.search(query)
    seconds = [float(s) for s in sleeps.group(1).split(",") if s] if sleeps else []
    seconds = [*seconds, 0.0, 0.0, 0.0][:3]
    return {"label": label.group(1) if label else "x", "sleeps": seconds}


def pack(env: Any) -> Pack:
    return Pack(
        name="slowpack",
        tools=[slow_step],
        skill_dirs=[Path(__file__).parent / "skills"],
        extractors=[extract],
    )
