"""Seed 000's three examples, end to end, on the offline planner against a live ``tether serve``
(finance pack, in-process analysis worker calling back over HTTP, a small seeded data set):

1. "请分析最近30天贵金属规则调整相关的客服问题并生成报告" → skills, handle, async analysis,
   callback, report, an answer naming the planted surge, DSL compiled.
2. The follow-up "只分析高净值客户，并按渠道拆分" in the same session → a refined analysis and report.
3. Replays of the compiled DSL for precious metals (top 20) and forex → new reports, no model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import (
    FOLLOW_UP,
    MAIN_QUESTION,
    FinanceServer,
    final_answer,
    get_session,
    runtime_events,
    tool_results,
    wait_status,
)

pytestmark = pytest.mark.slow

EXPECTED_STEPS = ["query_sessions_handle", "analyze_keywords_async", "build_keyword_report"]


@pytest.fixture(scope="module")
def alice(finance_server: FinanceServer) -> Iterator[httpx.Client]:
    with finance_server.client("dev-alice") as c:
        yield c


@pytest.fixture(scope="module")
def bob(finance_server: FinanceServer) -> Iterator[httpx.Client]:
    with finance_server.client("dev-bob") as c:
        yield c


@pytest.fixture(scope="module")
def example1(alice: httpx.Client) -> dict[str, Any]:
    r = alice.post("/api/agent/sessions", json={"message": MAIN_QUESTION})
    assert r.status_code == 200, r.text
    first = r.json()
    session = wait_status(alice, first["sessionId"], {"SUCCEEDED", "FAILED"}, timeout=60)
    return {"first": first, "session": session, "events": runtime_events(alice, session["sessionId"])}


@pytest.fixture(scope="module")
def example2(alice: httpx.Client, example1: dict[str, Any]) -> dict[str, Any]:
    session_id = example1["session"]["sessionId"]
    r = alice.post(f"/api/agent/sessions/{session_id}/messages", json={"message": FOLLOW_UP})
    assert r.status_code == 200, r.text
    session = wait_status(alice, session_id, {"SUCCEEDED", "FAILED"}, timeout=60)
    return {"session": session, "events": runtime_events(alice, session_id)}


def report_step(session: dict[str, Any], index: int = -1) -> dict[str, Any]:
    steps = [s for s in session["executedSteps"] if s["toolId"] == "build_keyword_report"]
    result: dict[str, Any] = steps[index]["result"]
    return result


def assert_standalone_html(html: str) -> None:
    assert html.lstrip().lower().startswith("<!doctype html")
    assert len(re.findall(r"<svg\b", html)) >= 3, "charts of keywords, trend and channels expected inline"
    assert not re.search(r"<script\b[^>]*\bsrc\s*=", html, re.I), "no external script"
    assert not re.search(r"<link\b[^>]*\bhref\s*=\s*[\"']?(https?:)?//", html, re.I), "no external stylesheet"
    assert not re.search(r"\b(src|href)\s*=\s*[\"']?(https?:)?//", html, re.I), "no external asset"


# ---- example 1 ------------------------------------------------------------------------------------


def test_example1_runs_the_whole_plan(example1: dict[str, Any]) -> None:
    session, evs = example1["session"], example1["events"]
    assert example1["first"]["status"] == "WAITING_ASYNC_CALLBACK", "the analysis must run asynchronously"
    assert session["status"] == "SUCCEEDED", session.get("lastError")
    assert {"finance-semantic-analysis", "finance-reporting"} <= set(session["selectedSkillIds"])
    [selected] = [e for e in evs if e["type"] == "SKILLS_SELECTED"]
    assert {"finance-semantic-analysis", "finance-reporting"} <= set(selected["data"]["selectedSkillIds"])
    assert [s["toolId"] for s in session["executedSteps"]] == EXPECTED_STEPS
    assert all(s["status"] == "SUCCEEDED" for s in session["executedSteps"])

    handle_step = session["executedSteps"][0]
    assert handle_step["args"]["business_line"] == "precious-metal"
    assert handle_step["args"]["keywords"] == ["规则调整"]
    handle = handle_step["result"]
    assert handle["handle_id"].startswith("hdl-") and handle["total"] > 20
    assert handle["filters"]["businessLine"] == "precious-metal"
    assert "records" not in handle, "the rows stay server-side"

    types = [e["type"] for e in evs]
    order = [
        "SKILLS_SELECTED",
        "WAITING_ASYNC_CALLBACK",
        "TOOL_CALLBACK_RECEIVED",
        "ASSISTANT_MESSAGE",
        "DSL_COMPILED",
    ]
    positions = [types.index(t) for t in order]
    assert positions == sorted(positions), types
    [compiled] = [e for e in evs if e["type"] == "DSL_COMPILED"]
    assert compiled["data"]["dslId"] == session["lastDslId"]


def test_example1_callback_came_over_http(finance_server: FinanceServer, example1: dict[str, Any]) -> None:
    assert re.search(r'"POST /api/agent/tool-callback HTTP/1.1" 200', finance_server.log_text())
    [received] = [e for e in example1["events"] if e["type"] == "TOOL_CALLBACK_RECEIVED"]
    [job] = [j for j in finance_server.jobs() if j["id"] == received["data"]["externalJobId"]]
    assert job["status"] == "done" and job["attempts"] == 1
    assert job["callback_url"] == f"{finance_server.url}/api/agent/tool-callback"


def test_example1_answer_names_the_surge_and_links_the_report(
    finance_server: FinanceServer, example1: dict[str, Any]
) -> None:
    session = example1["session"]
    analysis = tool_results(session)[1]
    assert analysis["kind"] == "value"
    top = analysis["data"]["top_keywords"]
    assert "保证金" in top[:3] and "规则调整" not in top and "app" not in top, top
    assert analysis["data"]["excluded_keywords"][:2] == ["规则调整", "app"], "the query's keyword and a channel"
    assert analysis["data"]["distinctive_keywords"][0] == "保证金"
    answer = final_answer(session)
    report = report_step(session)
    assert "突出问题" in answer and "保证金" in answer
    assert "主要来自 app 渠道" in answer, "the planted surge is concentrated on the app channel"
    previous = analysis["data"]["previous_period"]
    assert analysis["data"]["documents"] > 3 * previous["documents"], "the surge against the 30 days before"
    assert previous["finding"] in answer and "与上一周期" in answer
    assert report["url"] == f"{finance_server.url}/api/reports/{report['report_id']}.html"
    assert report["url"] in answer
    path = Path(report["path"])
    assert path == (finance_server.workdir / "var" / "reports" / f"{report['report_id']}.html").resolve()
    assert path.exists() and path.with_suffix(".md").exists()


def test_example1_report_is_served_to_its_owner_only(
    alice: httpx.Client, bob: httpx.Client, example1: dict[str, Any]
) -> None:
    report_id = report_step(example1["session"])["report_id"]
    html = alice.get(f"/api/reports/{report_id}.html")
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert_standalone_html(html.text)
    assert "规则调整" in html.text

    md = alice.get(f"/api/reports/{report_id}.md")
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert md.text.startswith("# ") and "## 主要发现" in md.text and "| 关键词 |" in md.text
    assert "<svg" not in md.text

    meta = alice.get(f"/api/reports/{report_id}").json()
    assert meta["reportId"] == report_id and meta["html"] == f"/api/reports/{report_id}.html"

    for suffix in (".html", ".md", ""):
        r = bob.get(f"/api/reports/{report_id}{suffix}")
        assert r.status_code == 404, (suffix, r.status_code, r.text)
    assert alice.get("/api/reports/rpt-nope.html").status_code == 404
    assert alice.get(f"/api/reports/{report_id}.pdf").status_code == 404
    assert httpx.get(str(alice.base_url) + f"/api/reports/{report_id}.html").status_code == 401


# ---- example 2 ------------------------------------------------------------------------------------


def test_example2_refines_the_analysis(example1: dict[str, Any], example2: dict[str, Any]) -> None:
    session = example2["session"]
    assert session["status"] == "SUCCEEDED", session.get("lastError")
    assert [s["toolId"] for s in session["executedSteps"]] == EXPECTED_STEPS * 2
    before, after = session["executedSteps"][0], session["executedSteps"][3]
    filters = after["result"]["filters"]
    assert filters["customerTier"] == "高净值"
    assert filters["businessLine"] == "precious-metal" and filters["keywords"] == ["规则调整"]
    assert 0 < after["result"]["total"] < before["result"]["total"]
    analysis = session["executedSteps"][4]
    assert analysis["args"]["split_by"] == ["channel"]
    assert analysis["args"]["handle_id"] == after["result"]["handle_id"] != before["result"]["handle_id"]
    by_channel = analysis["result"]["byChannel"]
    assert sum(by_channel.values()) == analysis["result"]["documents"] == after["result"]["total"]
    answer = final_answer(session)
    assert "渠道分布" in answer and report_step(session)["url"] in answer
    assert session["lastDslId"] != example1["session"]["lastDslId"]


def test_example2_report_is_new_and_split_by_channel(alice: httpx.Client, example2: dict[str, Any]) -> None:
    first, second = report_step(example2["session"], 0), report_step(example2["session"], 1)
    assert first["report_id"] != second["report_id"]
    md = alice.get(f"/api/reports/{second['report_id']}.md").text
    assert "高净值" in md and "- **拆分维度**：渠道" in md
    assert "## 渠道分布" in md
    html = alice.get(f"/api/reports/{second['report_id']}.html").text
    assert_standalone_html(html)
    assert "渠道分布" in html


# ---- example 3 ------------------------------------------------------------------------------------


def replay(client: httpx.Client, dsl_id: str, overrides: dict[str, Any]) -> dict[str, Any]:
    r = client.post(f"/api/agent/dsl/{dsl_id}/execute", json=overrides)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["status"] == "SUCCEEDED", body
    assert [s["toolId"] for s in body["steps"]] == EXPECTED_STEPS
    return body


def test_example3_replays_without_the_model(
    alice: httpx.Client, bob: httpx.Client, example1: dict[str, Any], example2: dict[str, Any]
) -> None:
    dsl_id = example1["session"]["lastDslId"]
    session_id = example1["session"]["sessionId"]
    transcript = get_session(alice, session_id)["transcript"]
    known = {report_step(example2["session"], i)["report_id"] for i in (0, 1)}

    metals = replay(alice, dsl_id, {"top_n": 20, "business_line": "precious-metal"})
    forex = replay(alice, dsl_id, {"business_line": "forex"})
    assert metals["params"]["top_n"] == 20
    assert metals["steps"][0]["output"]["filters"]["businessLine"] == "precious-metal"
    assert forex["steps"][0]["output"]["filters"]["businessLine"] == "forex"
    assert forex["steps"][0]["output"]["filters"]["keywords"] == ["规则调整"]
    assert metals["steps"][1]["args"]["top_n"] == 20
    reports = [body["steps"][2]["output"] for body in (metals, forex)]
    assert len({r["report_id"] for r in reports} | known) == 4, "each replay builds a new report"
    for report in reports:
        assert alice.get(f"/api/reports/{report['report_id']}.html").status_code == 200

    # no model involved: the source session gained nothing; the replay sessions hold no model turn
    assert get_session(alice, session_id)["transcript"] == transcript
    for body in (metals, forex):
        replayed = get_session(alice, body["executionId"])
        assert not [m for m in replayed["transcript"] if m["role"] == "assistant" and m.get("content")]
        assert "MODEL_DECISION" not in {e["type"] for e in runtime_events(alice, body["executionId"])}

    logged = alice.get(f"/api/agent/dsl/{dsl_id}/executions")
    assert logged.status_code == 200
    items = {i["executionId"]: i for i in logged.json()["items"]}
    assert {metals["executionId"], forex["executionId"]} <= set(items)
    assert items[forex["executionId"]]["params"]["business_line"] == "forex"
    assert items[metals["executionId"]]["status"] == "SUCCEEDED"
    assert bob.get(f"/api/agent/dsl/{dsl_id}/executions").status_code == 404


def test_example3_refuses_an_override_of_the_wrong_type_before_anything_runs(
    alice: httpx.Client, example1: dict[str, Any]
) -> None:
    dsl_id = example1["session"]["lastDslId"]
    before = alice.get(f"/api/agent/dsl/{dsl_id}/executions").json()["items"]
    r = alice.post(f"/api/agent/dsl/{dsl_id}/execute", json={"top_n": "many"})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "top_n" and "expected integer" in r.json()["error"]
    r = alice.post(f"/api/agent/dsl/{dsl_id}/execute", json={"business_line": 7})
    assert r.status_code == 422 and r.json()["field"] == "business_line"
    assert "expected string or null" in r.json()["error"]
    assert alice.get(f"/api/agent/dsl/{dsl_id}/executions").json()["items"] == before, "nothing ran"


# ---- a polite question instead of a guess ---------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "lead"),
    [
        ("请分析最近30天规则调整相关的客服问题", "无法确定"),
        ("请分析最近30天股票相关的客服问题", "“股票”不是支持的业务线"),
    ],
)
def test_an_unclear_business_line_gets_a_question(alice: httpx.Client, question: str, lead: str) -> None:
    r = alice.post("/api/agent/sessions", json={"message": question})
    assert r.status_code == 200, r.text
    session = wait_status(alice, r.json()["sessionId"], timeout=30)
    assert session["executedSteps"] == [], "nothing runs on a guess"
    answer = final_answer(session)
    assert lead in answer and "贵金属（precious-metal）" in answer and "外汇（forex）" in answer
