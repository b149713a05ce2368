"""The core's message table: every code the core raises has words in Chinese and English, each
template is filled by the params its raiser gives, and the renderer refuses half a sentence."""

from __future__ import annotations

import re
from pathlib import Path

from tether.core import error_messages as said

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
    said.JOB_FAILED: {"tool": "x"},
}


def test_every_code_the_core_uses_has_chinese_and_english_filled_by_its_params() -> None:
    constants = {v for k, v in vars(said).items() if k.isupper() and isinstance(v, str)}
    assert constants == set(said.MESSAGES) == set(RAISED_WITH)
    for code, params in RAISED_WITH.items():
        zh, en = (said.say(said.MESSAGES, code, params, lang) for lang in ("zh", "en"))
        assert zh and en, code
        assert not re.search(r"[A-Za-z]{4,}", re.sub(r"ERP|nope|erp\.read|none", "", zh)), zh  # no English words
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
