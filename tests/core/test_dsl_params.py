"""DSL replay checks every override against its parameter's type before any step runs."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from tests.core.harness import ALICE, harness
from tether.core.skills import Skill
from tether.core.tools import Tool, ToolContext, tool
from tether.errors import InvalidInput
from tether.http_tools import http_tool
from tether.models.scripted import calls, text


class Box(BaseModel):
    width: int
    label: str = ""


RUNS: list[str] = []


@tool()
async def everything(
    ctx: ToolContext,
    name: str,
    count: int,
    ratio: float,
    flag: bool,
    tags: list[str],
    note: str | None = None,
    unit: Literal["kg", "lb"] = "kg",
    weights: dict[str, int] | None = None,
    box: Box | None = None,
    anything: Any = None,
) -> Any:
    """Takes one argument of each kind the compiler can make a parameter of."""
    RUNS.append("everything")
    return {"ok": True}


async def _convert(body: dict[str, Any], ctx: ToolContext) -> Any:
    RUNS.append("convert")
    return {"converted": body["amount"]}


convert = http_tool(
    "convert",
    "Convert an amount.",
    {
        "properties": {"amount": {"type": "number"}, "to": {"type": "string", "enum": ["EUR", "USD"]}},
        "required": ["amount", "to"],
    },
    "/convert",
    base_url="local://tools",
    local={"/convert": _convert},
)
SKILL = Skill(name="all", description="all", allowed_tools=("everything", "convert"), body="", keywords=("test",))
ARGS: dict[str, Any] = {
    "name": "Ada",
    "count": 3,
    "ratio": 0.5,
    "flag": True,
    "tags": ["x", "y"],
    "note": "n1",
    "unit": "lb",
    "weights": {"a": 1},
    "box": {"width": 2, "label": "b"},
    "anything": "free",
}
DEFAULTS = {**ARGS, "amount": 12.5, "to": "EUR"}

# (parameter, a value that must be refused, words the message must hold)
BAD: list[tuple[str, Any, str]] = [
    ("name", 5, "expected string, got integer 5"),
    ("count", "many", 'expected integer, got string "many"'),
    ("count", 2.5, "expected integer"),
    ("count", True, "expected integer, got boolean"),
    ("ratio", "0.5", "expected number, got string"),
    ("flag", "yes", "expected boolean, got string"),
    ("flag", 1, "expected boolean, got integer"),
    ("tags", "x", "expected array of string, got string"),
    ("tags", ["x", 2], "item 1: expected string, got integer 2"),
    ("note", 7, "expected string or null"),
    ("unit", "stone", 'expected one of "kg", "lb"'),
    ("weights", ["a"], "expected object or null"),
    ("weights", {"a": "heavy"}, "key 'a': expected integer"),
    ("box", {"label": "no width"}, "missing key 'width'"),
    ("box", 3, "object or null"),
    ("amount", "lots", "expected number, got string"),
    ("to", "GBP", 'expected one of "EUR", "USD"'),
]
GOOD: list[tuple[str, Any]] = [
    ("name", "Grace"),
    ("count", 7),
    ("count", 7.0),  # JSON has one number type: 7.0 is the integer 7
    ("ratio", 2),  # an integer is a number
    ("flag", False),
    ("tags", []),
    ("note", None),
    ("unit", "kg"),
    ("weights", None),
    ("box", {"width": 9}),
    ("anything", [1, {"a": None}]),  # no declared type: any JSON value
    ("amount", 3),
    ("to", "USD"),
]


def _replies() -> list[Any]:
    return [calls(("everything", ARGS)), calls(("convert", {"amount": 12.5, "to": "EUR"})), text("done")]


async def _compiled(h: Any) -> str:
    message = "run the test: " + " ".join(str(v) for v in DEFAULTS.values())
    s = await h.runtime.start_session(ALICE, message, {})
    assert s.last_dsl_id, s.last_error
    dsl = await h.store.get_dsl(s.last_dsl_id, ALICE)
    assert set(dsl.params) == set(DEFAULTS), dsl.params
    return s.last_dsl_id


def _tools() -> list[Tool]:
    return [everything, convert]


def test_every_parameter_type_refuses_a_value_of_another_type_before_anything_runs(sqlite_url: str) -> None:
    async def main() -> None:
        async with harness(sqlite_url, _replies(), skills=[SKILL], tools=_tools()) as h:
            dsl_id = await _compiled(h)
            RUNS.clear()
            sessions = len(await h.store.list_sessions(ALICE, 200, 0))
            for name, value, words in BAD:
                with pytest.raises(InvalidInput) as info:
                    await h.replayer.execute(dsl_id, ALICE, {name: value})
                assert info.value.field == name, (name, value)
                assert f"parameter {name!r}" in info.value.message and words in info.value.message, (
                    name,
                    value,
                    info.value.message,
                )
            assert RUNS == [], "a refused override ran a step"
            assert await h.store.executions(dsl_id) == []
            assert len(await h.store.list_sessions(ALICE, 200, 0)) == sessions, "a refused replay made a session"

    asyncio.run(main())


def test_values_of_the_parameter_type_replay(sqlite_url: str) -> None:
    async def main() -> None:
        async with harness(sqlite_url, _replies(), skills=[SKILL], tools=_tools()) as h:
            dsl_id = await _compiled(h)
            for name, value in GOOD:
                result = await h.replayer.execute(dsl_id, ALICE, {name: value})
                assert result["status"] == "SUCCEEDED", (name, value, result["error"])
                assert result["params"][name] == value

    asyncio.run(main())


def test_unknown_parameter_names_are_refused(sqlite_url: str) -> None:
    async def main() -> None:
        async with harness(sqlite_url, _replies(), skills=[SKILL], tools=_tools()) as h:
            dsl_id = await _compiled(h)
            with pytest.raises(InvalidInput, match="unknown DSL parameter") as info:
                await h.replayer.execute(dsl_id, ALICE, {"count": 1, "colour": "red"})
            assert info.value.field == "colour"

    asyncio.run(main())
