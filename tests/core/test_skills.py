"""SKILL.md loading (agentskills.io rules) and routing with rule fallback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.core.harness import EXTRA_SKILL, TEST_SKILL, harness, tool_messages
from tether.core.skills import SkillRegistry, SkillRouter, load_skills, select_by_rules
from tether.models.scripted import ScriptedModel, calls, failure, text

GOOD = """---
name: {name}
description: {description}
allowed-tools: [add]
keywords: [sum, 加法]
plan:
  - tool: add
    args: {{a: 1, b: 2}}
---
# Body
Do it.
"""


def write(root: Path, folder: str, content: str) -> None:
    (root / folder).mkdir(parents=True)
    (root / folder / "SKILL.md").write_text(content, encoding="utf-8")


def test_valid_skill_loads_with_its_fields(tmp_path: Path) -> None:
    write(tmp_path, "adder", GOOD.format(name="adder", description="Adds numbers."))
    skills, issues = load_skills([tmp_path])
    assert issues == []
    (s,) = skills
    assert (s.name, s.allowed_tools, s.keywords, s.body) == ("adder", ("add",), ("sum", "加法"), "# Body\nDo it.")
    assert s.plan[0]["tool"] == "add"


@pytest.mark.parametrize(
    ("folder", "content", "reason"),
    [
        ("Bad_Name", GOOD.format(name="Bad_Name", description="x"), "lowercase"),
        ("a--b", GOOD.format(name="a--b", description="x"), "lowercase"),
        ("x" * 65, GOOD.format(name="x" * 65, description="x"), "at most 64"),
        ("other", GOOD.format(name="adder", description="x"), "must match its folder"),
        ("long", GOOD.format(name="long", description="d" * 1025), "limit is 1024"),
        ("nodesc", GOOD.format(name="nodesc", description="''"), "'description' is required"),
        ("nofront", "# just markdown\n", "missing YAML frontmatter"),
        ("badyaml", "---\nname: [unclosed\n---\nbody", "while parsing"),
    ],
)
def test_invalid_skills_are_reported_with_file_and_reason(
    tmp_path: Path, folder: str, content: str, reason: str
) -> None:
    write(tmp_path, "fine", GOOD.format(name="fine", description="ok"))
    write(tmp_path, folder, content)
    skills, issues = load_skills([tmp_path])
    assert [s.name for s in skills] == ["fine"]
    (issue,) = issues
    assert issue.path.endswith(f"{folder}/SKILL.md") and reason in issue.reason


def route(model: ScriptedModel | None, query: str):  # type: ignore[no-untyped-def]
    router = SkillRouter(SkillRegistry([TEST_SKILL, EXTRA_SKILL]), model, use_model=model is not None)
    return asyncio.run(router.select(query, {}))


def test_model_routing_is_used_when_its_answer_is_valid() -> None:
    model = ScriptedModel([text('{"selectedSkillIds": ["extra"], "reason": "needs hidden"}')])
    sel = route(model, "anything")
    assert (sel.skill_ids, sel.path, sel.reason) == (["extra"], "model", "needs hidden")
    assert "extra: Has the hidden tool." in model.requests[0].messages[0]["content"]


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (text(""), "returned no JSON choice"),
        (text('{"selectedSkillIds": []}'), "empty choice"),
        (text('{"selectedSkillIds": ["ghost"]}'), "unknown skill id"),
        (text("{not json}"), "invalid JSON"),
        (failure("endpoint down"), "failed (endpoint down)"),
    ],
)
def test_bad_model_routing_falls_back_to_rules_and_says_why(answer, why) -> None:  # type: ignore[no-untyped-def]
    sel = route(ScriptedModel([answer]), "please run the test")
    assert sel.skill_ids == ["test-skill"] and sel.path == "rules"
    assert why in sel.reason and "keyword match" in sel.reason


def test_rules_choose_nothing_when_no_keyword_matches() -> None:
    sel = route(None, "unrelated request")
    assert sel.skill_ids == [] and "no skill keyword" in sel.reason


YIELDING = """---
name: {name}
description: {name}.
allowed-tools: [add]
keywords: [{keywords}]
{extra}---
body
"""


def test_a_skill_yields_to_the_one_it_names_when_both_match(tmp_path: Path) -> None:
    write(tmp_path, "look-up", YIELDING.format(name="look-up", keywords="会话, 多少", extra="yields-to: [analysis]\n"))
    write(tmp_path, "analysis", YIELDING.format(name="analysis", keywords="分析", extra=""))
    skills, issues = load_skills([tmp_path])
    assert issues == [] and next(s for s in skills if s.name == "look-up").yields_to == ("analysis",)
    registry = SkillRegistry(skills)
    both = select_by_rules(registry, "分析最近30天的客服会话")
    assert both.skill_ids == ["analysis"] and "look-up yields to analysis" in both.reason
    assert select_by_rules(registry, "最近30天有多少会话").skill_ids == ["look-up"]  # alone, it is chosen


def test_yielding_to_a_skill_not_chosen_keeps_the_skill(tmp_path: Path) -> None:
    write(tmp_path, "look-up", YIELDING.format(name="look-up", keywords="会话", extra="yields-to: [analysis]\n"))
    write(tmp_path, "report", YIELDING.format(name="report", keywords="报告", extra=""))
    skills, _ = load_skills([tmp_path])
    assert select_by_rules(SkillRegistry(skills), "会话的报告").skill_ids == ["look-up", "report"]


def test_skills_restrict_tools_and_load_skill_widens_them(db_url: str) -> None:
    async def main() -> None:
        replies = [
            calls(("hidden", {}, "h1")),
            calls(("load_skill", {"name": "extra"}, "l1")),
            calls(("hidden", {}, "h2")),
            text("done"),
        ]
        async with harness(db_url, replies) as h:
            s = await h.start()
            first, loaded, second = tool_messages(s)
            assert "not allowed" in first["content"]
            assert "Hidden." in loaded["content"]
            assert '"kind": "value"' in second["content"] and h.counters.runs["hidden"] == 1
            assert s.selected_skill_ids == ["test-skill", "extra"]
            tools_seen = [t["function"]["name"] for t in h.model.requests[0].tools]
            assert "hidden" not in tools_seen and "add" in tools_seen
            event = next(e for e in await h.events(s.session_id) if e.type == "SKILLS_SELECTED")
            assert event.data["selectedSkillIds"] == ["test-skill"] and event.data["path"] == "rules"

    asyncio.run(main())


def test_selected_skill_bodies_are_in_the_system_prompt_and_others_listed(db_url: str) -> None:
    async def main() -> None:
        async with harness(db_url, [text("hi")]) as h:
            s = await h.start()
            prompt = s.transcript[0]["content"]
            assert "## Skill: test-skill\nUse the tools." in prompt
            assert "- extra: Has the hidden tool." in prompt and "Hidden." not in prompt

    asyncio.run(main())
