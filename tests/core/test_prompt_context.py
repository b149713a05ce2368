"""The system prompt takes a bounded excerpt of the global context, whatever the context holds."""

from __future__ import annotations

import json

from tether.app.limits import context_shape
from tether.core.prompt import PROMPT_CONTEXT_CHARS, PROMPT_VALUE_CHARS, prompt_context, system_prompt
from tether.core.session import AgentSession, Owner
from tether.core.skills import SkillRegistry


def test_a_small_context_is_shown_whole_without_secrets_or_hidden_keys() -> None:
    ctx = {"currency": "EUR", "nested": {"a": [1, 2]}, "token": "s3cret", "_replayOf": "dsl-1"}
    assert prompt_context(ctx) == {"currency": "EUR", "nested": {"a": [1, 2]}}


def test_a_large_context_is_cut_to_the_budget_and_says_what_it_left_out() -> None:
    ctx = {"first": "keep me", "long": "字" * 50_000, **{f"k{i}": "v" * 300 for i in range(400)}}
    shown = prompt_context(ctx)
    text = json.dumps(shown, ensure_ascii=False)
    assert len(text) < PROMPT_CONTEXT_CHARS + 1_000
    assert shown["first"] == "keep me"
    assert len(shown["long"]) == PROMPT_VALUE_CHARS and shown["long"].endswith("…")
    kept = [k for k in shown if k.startswith("k")]
    omitted = shown["_omitted"]
    assert kept == [f"k{i}" for i in range(len(kept))], "keys are kept in order until the budget ends"
    assert omitted[:20] == [f"k{i}" for i in range(len(kept), len(kept) + 20)]
    assert omitted[20] == f"… {400 - len(kept) - 20} more" and len(omitted) == 21


def test_deep_or_wide_values_are_clipped() -> None:
    deep: object = "bottom"
    for _ in range(50):
        deep = {"d": deep}
    shown = prompt_context({"deep": deep, "wide": list(range(10_000))})
    assert len(json.dumps(shown)) < PROMPT_CONTEXT_CHARS + 1_000
    assert len(shown["wide"]) == 50


def test_the_system_prompt_stays_small_with_a_huge_context() -> None:
    s = AgentSession.new(Owner("u", "t"), "hello", {"blob": "x" * 5_000_000, "more": {"y": "z" * 100_000}})
    prompt = system_prompt(s, SkillRegistry([]), [])
    assert len(prompt) < 8_000


def test_context_shape_counts_depth_and_keys_without_recursing() -> None:
    assert context_shape({}, 10) == (1, 0)
    assert context_shape({"a": 1, "b": {"c": [1, {"d": 2}]}}, 10) == (4, 4)
    deep: object = 1
    for _ in range(100_000):
        deep = [deep]
    depth, _ = context_shape({"x": deep}, 6)
    assert depth == 7  # stopped just past the limit, no RecursionError
