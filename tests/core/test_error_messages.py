"""The core's message table: every code the core raises has words in Chinese and English, each
template is filled by the params its raiser gives, and the renderer refuses half a sentence."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from tether.core import error_messages as said
from tether.core.messages import ToolCall
from tether.core.pipeline import ToolPipeline
from tether.core.questions import ask_user_tool
from tether.core.session import Owner
from tether.core.tools import ToolContext, ToolRegistry, tool
from tether.errors import Unavailable

SRC = Path(said.__file__).resolve().parents[1]
# the params each core code is raised with (core/pipeline.py, abuse/budget.py, resumption, prompt, questions)
RAISED_WITH = {
    said.UNKNOWN_TOOL: {"tool": "nope"},
    said.NOT_ALLOWED: {"tool": "x"},
    said.NOT_AUTHORISED: {"tool": "x", "grants": "erp.read"},
    said.BAD_ARGUMENTS: {"tool": "x"},
    said.INVALID_ARGUMENTS: {"tool": "x"},
    said.BUDGET: {"limit": 2, "seconds": 41},
    said.TIMEOUT: {"tool": "x", "seconds": "0.2"},
    said.UNAVAILABLE: {"system": "ERP", "seconds": 5},
    said.FAILED: {"tool": "x"},
    said.EMPTY_QUESTION: {},
    said.UNKNOWN_SKILL: {"skill": "none"},
    said.JOB_FAILED: {"tool": "x", "reason": "503"},
    said.TURN_TIMEOUT: {"seconds": "0.3"},  # core/loop.py
    said.TURN_ROUNDS: {"rounds": 3},
    said.TURN_TOOL_CALLS: {"calls": 40},
    said.MODEL_FAILED: {},
    # the abuse limits' 429 bodies (abuse/refusal.py): resetAt in UTC, shown by the page as local time
    said.DAILY_TOKENS: {"limit": 1000, "resetAt": "2026-12-06T00:00:00Z", "seconds": 60},
    said.DAILY_MODEL_CALLS: {"limit": 5, "resetAt": "2026-12-06T00:00:00Z", "seconds": 60},
    said.LOGIN_LOCKED_USER: {"resetAt": "2026-12-06T00:00:00Z", "seconds": 60},
    said.LOGIN_LOCKED_ADDRESS: {"resetAt": "2026-12-06T00:00:00Z", "seconds": 60},
    said.LOGIN_BUSY_USER: {"seconds": 5},
    said.LOGIN_BUSY_ADDRESS: {"seconds": 5},
}


def test_every_code_the_core_uses_has_chinese_and_english_filled_by_its_params() -> None:
    constants = {v for k, v in vars(said).items() if k.isupper() and isinstance(v, str)}
    assert constants == set(said.MESSAGES) == set(RAISED_WITH)
    for code, params in RAISED_WITH.items():
        zh, en = (said.say(said.MESSAGES, code, params, lang) for lang in ("zh", "en"))
        assert zh and en, code
        assert not re.search(r"[A-Za-z]{4,}", re.sub(r"ERP|nope|erp\.read|none|token", "", zh)), zh  # no English words
        assert re.search(r"[\u4e00-\u9fff]", zh) and not re.search(r"[\u4e00-\u9fff]", en), code
        assert "{" not in zh + en


def test_every_code_raised_in_the_core_path_is_one_the_table_knows() -> None:
    used = set()
    for path in [*(SRC / "core").glob("*.py"), SRC / "abuse" / "budget.py"]:
        used |= set(re.findall(r"(?:said|error_messages)\.([A-Z_]+)\b", path.read_text(encoding="utf-8")))
    used -= {"MESSAGES"}
    assert used and {getattr(said, name) for name in used} <= set(said.MESSAGES)


def test_params_render_and_a_template_they_do_not_fill_says_nothing() -> None:
    table = said.MESSAGES
    assert said.say(table, said.BUDGET, {"limit": 2, "seconds": 41}, "zh") == (
        "您每分钟最多可调用 2 次工具，本分钟的额度已用完，请 41 秒后再试。"
    )
    assert said.say(table, said.BUDGET, {"limit": 2}, "zh") is None  # half a sentence is no sentence
    assert said.say(table, "no.such.code", {}, "zh") is None
    assert said.say(table, said.FAILED, {"tool": "x"}, "fr") is None
    nested = {"outer": {"zh": "外：{items}"}, "inner": {"zh": "内{n}"}}
    items = [{"code": "inner", "params": {"n": 1}}, {"code": "inner", "params": {"n": 2}}]
    assert said.say(nested, "outer", {"items": items}, "zh") == "外：内1；内2"
    assert said.say(nested, "outer", {"items": [*items, {"code": "unknown", "params": {}}]}, "zh") is None


def test_the_pipeline_codes_an_outage_a_missing_grant_and_an_empty_question() -> None:
    """The failures the loop tests do not reach: an upstream outage mid-turn (retryable, not the
    tool's bug), a tool the caller has no grant for, an empty ``ask_user`` question."""

    @tool(name="erp_read")
    async def erp_read(ctx: ToolContext) -> Any:
        raise Unavailable("connection refused", retry_after_s=7, upstream="erp")

    @tool(name="secret", required_grants={"hr.read"})
    async def secret(ctx: ToolContext) -> Any:
        return {"ok": True}

    pipeline = ToolPipeline(ToolRegistry([erp_read, secret, ask_user_tool()]))
    allowed = frozenset({"erp_read", "secret", "ask_user"})

    async def data(name: str, args: dict[str, Any]) -> dict[str, Any]:
        ctx = ToolContext(Owner("alice", "t1"), "ses-1", "turn-1", "c1", {})
        outcome = await pipeline.run(ToolCall("c1", name, json.dumps(args)), allowed, ctx, lambda *_: None)
        assert outcome.kind == "error"
        result: dict[str, Any] = outcome.data
        return result

    down = asyncio.run(data("erp_read", {}))
    assert down["retryable"] and "connection refused" in down["error"]
    assert (down["code"], down["params"]) == (said.UNAVAILABLE, {"system": "ERP", "seconds": 7})
    assert said.say(said.MESSAGES, down["code"], down["params"], "zh") == "ERP 暂时无法访问，请 7 秒后再试。"
    barred = asyncio.run(data("secret", {}))
    assert (barred["code"], barred["params"]) == (said.NOT_AUTHORISED, {"tool": "secret", "grants": "hr.read"})
    empty = asyncio.run(data("ask_user", {"question": "  "}))
    assert empty["code"] == said.EMPTY_QUESTION and empty["error"] == "question must not be empty"
