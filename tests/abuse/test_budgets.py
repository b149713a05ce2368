"""Per-user budgets from the user's side: a user over the daily token or model-call budget gets
429 naming the budget and when it resets, another user does not; a tool call over the per-minute
budget is the call's error, which the model sees, and the turn goes on; replicas sharing Redis
share the budget; ``/metrics`` counts the refusals by kind."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tether.app.main import create_app
from tether.core.error_messages import MESSAGES, say
from tether.core.messages import Usage
from tether.models.scripted import ScriptedModel, calls, text
from tether.settings import create_settings

ALICE = {"Authorization": "Bearer dev-alice"}
BOB = {"Authorization": "Bearer dev-bob"}


@contextmanager
def app(tmp_path: Path, model: ScriptedModel, name: str = "tether", **settings: Any) -> Iterator[TestClient]:
    url = f"sqlite:///{tmp_path / f'{name}.db'}"
    with TestClient(create_app(create_settings(database_url=url, packs="", **settings), model=model)) as client:
        yield client


def ask(client: TestClient, who: dict[str, str], message: str = "hello") -> Any:
    return client.post("/api/agent/sessions", json={"message": message}, headers=who)


def agui_input(text: str) -> dict[str, Any]:
    return {
        "threadId": f"thread-{uuid.uuid4().hex[:8]}",
        "runId": "run-1",
        "messages": [{"id": "m1", "role": "user", "content": text}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def refusals(client: TestClient, kind: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f'tether_limit_refusals_total{{kind="{kind}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_a_user_over_the_token_budget_gets_429_and_another_user_does_not(tmp_path: Path) -> None:
    model = ScriptedModel([text("one", usage=Usage(60, 50)), text("two", usage=Usage(10, 10))])
    with app(tmp_path, model, user_daily_tokens=100) as client:
        first = ask(client, ALICE)
        assert first.status_code == 200 and first.json()["status"] == "SUCCEEDED", first.text  # 110 tokens spent
        again = ask(client, ALICE)
        assert again.status_code == 429, again.text
        error = again.json()["error"]
        assert "daily budget of model tokens of 100 (TETHER_USER_DAILY_TOKENS) is spent" in error, error
        assert "resets at" in error
        assert 86_000 < int(again.headers["Retry-After"]) <= 86_400
        # the same as a code of the core's table and its params: the page says it in the person's language
        body = again.json()
        assert body["code"] == "limit.daily_tokens" and body["retryAfter"] == int(again.headers["Retry-After"])
        assert body["params"]["limit"] == 100 and body["params"]["seconds"] == body["retryAfter"], body
        reset = datetime.strptime(body["params"]["resetAt"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert abs((reset - datetime.now(UTC)).total_seconds() - body["retryAfter"]) < 5, body
        assert say(MESSAGES, body["code"], body["params"], "zh") == (
            f"您今天的模型用量额度（100 个 token）已用完，将于 {body['params']['resetAt']} 恢复。"
        )
        more = client.post(
            f"/api/agent/sessions/{first.json()['sessionId']}/messages", json={"message": "and?"}, headers=ALICE
        )
        assert more.status_code == 429, more.text
        agui = client.post("/api/agui", json=agui_input("and through AG-UI?"), headers=ALICE)
        assert agui.status_code == 429 and "TETHER_USER_DAILY_TOKENS" in agui.json()["error"], agui.text
        assert more.json()["code"] == agui.json()["code"] == "limit.daily_tokens"
        other = ask(client, BOB)
        assert other.status_code == 200 and other.json()["status"] == "SUCCEEDED", other.text
        assert refusals(client, "daily_tokens") == 3
    model.assert_consumed()  # the refused requests never reached the model


def test_the_model_call_budget_lets_a_started_turn_finish_then_refuses_the_next(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("load_skill", {"name": "none"})), text("done")])
    with app(tmp_path, model, user_daily_model_calls=1) as client:
        first = ask(client, ALICE)
        assert first.json()["status"] == "SUCCEEDED", first.text  # two model calls: admitted, it ran to its end
        again = ask(client, ALICE)
        assert again.status_code == 429
        assert "daily budget of model calls of 1 (TETHER_USER_DAILY_MODEL_CALLS)" in again.json()["error"]
        assert again.json()["code"] == "limit.daily_model_calls" and again.json()["params"]["limit"] == 1
        assert refusals(client, "daily_model_calls") == 1


def test_a_tool_call_over_the_per_minute_budget_is_the_calls_error_and_the_turn_goes_on(tmp_path: Path) -> None:
    three = [("load_skill", {"name": f"none-{i}"}, f"call_{i}") for i in range(3)]
    model = ScriptedModel([calls(*three), text("done")])
    with app(tmp_path, model, user_tool_calls_per_minute=2) as client:
        r = ask(client, ALICE)
        assert r.status_code == 200, r.text
        s = r.json()
        assert s["status"] == "SUCCEEDED"
        results = {m["tool_call_id"]: json.loads(m["content"]) for m in s["transcript"] if m.get("role") == "tool"}
        over = "tool calls per minute (TETHER_USER_TOOL_CALLS_PER_MINUTE) is spent"
        assert [over in str(results[f"call_{i}"]["data"]) for i in range(3)] == [False, False, True]
        assert "next call is allowed at" in results["call_2"]["data"]["error"]
        seen = model.requests[-1].messages  # the model saw the refusal as that call's result
        assert any(over in str(m.get("content")) for m in seen if m.get("role") == "tool")
        assert refusals(client, "tool_calls_per_minute") == 1


def test_replicas_sharing_redis_share_a_users_budget(tmp_path: Path) -> None:
    shared = {
        "user_daily_tokens": 100,
        "redis_url": "redis://127.0.0.1:6379/0",
        "limits_namespace": f"test-{uuid.uuid4().hex}",
    }
    with (
        app(tmp_path, ScriptedModel([text("one", usage=Usage(100, 5))]), "a", **shared) as a,
        app(tmp_path, ScriptedModel([]), "b", **shared) as b,
    ):
        assert ask(a, ALICE).json()["status"] == "SUCCEEDED"
        r = ask(b, ALICE)  # the other replica knows what alice spent
        assert r.status_code == 429 and "TETHER_USER_DAILY_TOKENS" in r.json()["error"], r.text


def test_with_redis_down_the_budgets_are_not_applied_and_the_log_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An outage of the counter store must not refuse every user: the turns run, loudly."""
    model = ScriptedModel([text("one", usage=Usage(500, 5)), text("two")])
    settings: dict[str, Any] = {"user_daily_tokens": 100, "redis_url": "redis://127.0.0.1:1/0"}  # nothing listens there
    with caplog.at_level(logging.WARNING, logger="tether.abuse"), app(tmp_path, model, **settings) as client:
        assert ask(client, ALICE).json()["status"] == "SUCCEEDED"
        assert ask(client, ALICE).json()["status"] == "SUCCEEDED"
    assert any("abuse limits are not applied" in r.getMessage() for r in caplog.records)
