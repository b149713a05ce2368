"""Seed 000 §2.3's direct query API and §2.4's ``/tools/*`` endpoints on a live server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .conftest import SEED_ROWS, FinanceServer, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def alice(finance_server: FinanceServer) -> Iterator[httpx.Client]:
    with finance_server.client("dev-alice") as c:
        yield c


@pytest.fixture(scope="module")
def bob(finance_server: FinanceServer) -> Iterator[httpx.Client]:
    with finance_server.client("dev-bob") as c:
        yield c


def query(client: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/api/customer-sessions/query", json=body)
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()
    return found


def test_keyword_filter_matches_message_reply_or_tags(alice: httpx.Client) -> None:
    found = query(alice, {"keywords": ["保证金"], "businessLine": "precious-metal", "limit": 100})
    assert 0 < len(found["records"]) <= found["total"]
    for r in found["records"]:
        assert r["businessLine"] == "precious-metal"
        assert "保证金" in r["userMessage"] + r["agentReply"] + r["tags"]
    times = [r["occurredAt"] for r in found["records"]]
    assert times == sorted(times, reverse=True), "newest first"


def test_all_filters_are_optional_and_limit_is_capped_at_500(alice: httpx.Client) -> None:
    found = query(alice, {"limit": 1000})
    assert len(found["records"]) == 500
    assert found["total"] == SEED_ROWS
    assert len(query(alice, {})["records"]) <= 500


def test_total_counts_every_match_not_the_page(alice: httpx.Client) -> None:
    page = query(alice, {"businessLine": "forex", "limit": 5})
    whole = query(alice, {"businessLine": "forex", "limit": 500})
    assert len(page["records"]) == 5
    assert page["total"] == whole["total"] > 5
    assert [r["id"] for r in page["records"]] == [r["id"] for r in whole["records"][:5]]


def test_filters_combine(alice: httpx.Client) -> None:
    body = {
        "businessLine": "precious-metal",
        "channel": "app",
        "customerTier": "普通",
        "startTime": "2000-01-01 00:00:00",
        "endTime": "2100-01-01",
        "limit": 50,
    }
    found = query(alice, body)
    assert found["records"]
    assert {(r["businessLine"], r["channel"], r["customerTier"]) for r in found["records"]} == {
        ("precious-metal", "app", "普通")
    }
    assert query(alice, {**body, "endTime": "2000-01-02"})["total"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"startTime": "2026-03-10 00:00:00", "endTime": "2026-03-01 00:00:00"}, "endTime"),
        ({"startTime": "last tuesday"}, "startTime"),
        ({"endTime": "2026-13-45"}, "endTime"),
        ({"limit": 0}, "limit"),
        ({"limit": -5}, "limit"),
        ({"businessLine": "stock"}, "businessLine"),
    ],
)
def test_bad_input_is_422_naming_the_field(alice: httpx.Client, body: dict[str, Any], field: str) -> None:
    r = alice.post("/api/customer-sessions/query", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    assert field in r.json()["error"]


def test_a_token_is_required(finance_server: FinanceServer) -> None:
    for token in (None, "not-a-token"):
        with finance_server.client(token) as anon:
            assert anon.post("/api/customer-sessions/query", json={}).status_code == 401
            assert anon.post("/tools/query-customer-sessions-mysql", json={}).status_code == 401
            assert anon.post("/tools/query-sessions-handle", json={}).status_code == 401
            assert anon.get("/api/reports/rpt-x.html").status_code == 401


def test_tools_query_customer_sessions(alice: httpx.Client) -> None:
    r = alice.post(
        "/tools/query-customer-sessions-mysql", json={"business_line": "forex", "keywords": ["汇率"], "limit": 3}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["toolId"], body["kind"]) == ("query_customer_sessions_mysql", "value")
    data = body["data"]
    assert data["returned"] == len(data["records"]) == 3 and data["total"] >= 3
    assert all(r["businessLine"] == "forex" for r in data["records"])
    assert all(len(r["userMessage"]) <= 121 for r in data["records"]), "records shown to a model are trimmed"
    direct = query(alice, {"businessLine": "forex", "keywords": ["汇率"], "limit": 1})
    assert data["total"] == direct["total"]


def test_tools_query_sessions_handle(alice: httpx.Client) -> None:
    r = alice.post("/tools/query-sessions-handle", json={"business_line": "fund", "channel": "wechat"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["toolId"], body["kind"]) == ("query_sessions_handle", "handle")
    data = body["data"]
    assert data["handle_id"].startswith("hdl-")
    assert data["filters"] == {"businessLine": "fund", "channel": "wechat"}
    assert data["total"] == query(alice, {"businessLine": "fund", "channel": "wechat", "limit": 1})["total"] > 0
    assert "records" not in data


def test_tools_reject_bad_arguments(alice: httpx.Client) -> None:
    r = alice.post("/tools/query-sessions-handle", json={"business_line": "stock"})
    assert r.status_code == 200
    assert r.json()["kind"] == "error" and "businessLine" in str(r.json()["data"])
    r = alice.post("/tools/query-sessions-handle", json={"nonsense": 1})
    assert r.json()["kind"] == "error"


def test_tools_sample_is_reproducible(alice: httpx.Client) -> None:
    args = {"business_line": "credit-card", "size": 12, "seed": 3}
    first = alice.post("/tools/sample-sessions-by-keywords", json=args).json()
    again = alice.post("/tools/sample-sessions-by-keywords", json=args).json()
    assert first["kind"] == "value"
    ids = [r["id"] for r in first["data"]["records"]]
    assert len(ids) == 12 and ids == [r["id"] for r in again["data"]["records"]]


def poll_job(client: httpx.Client, url: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        r = client.get(url)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body if body["status"] in ("SUCCEEDED", "FAILED") else None

    return wait_until(done, timeout=60, interval=0.2, what=f"{url} to finish")


def test_the_async_tool_is_served_directly_and_polled(alice: httpx.Client, bob: httpx.Client) -> None:
    """Seed 000 §2.4's fifth endpoint: the caller gets a job id and polls GET /api/finance/jobs/{id}."""
    handle = alice.post("/tools/query-sessions-handle", json={"business_line": "precious-metal"}).json()["data"]
    r = alice.post("/tools/analyze-keywords-async", json={"handle_id": handle["handle_id"], "top_n": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["toolId"], body["kind"]) == ("analyze_keywords_async", "async_job")
    job_id = body["jobId"]
    assert job_id.startswith("job-") and body["pollUrl"] == f"/api/finance/jobs/{job_id}"
    assert body["data"]["externalJobId"] == job_id and body["pollUrl"] in body["data"]["message"]

    assert bob.get(body["pollUrl"]).status_code == 404, "another user's job does not exist for them"
    outcome = poll_job(alice, body["pollUrl"])
    assert outcome["status"] == "SUCCEEDED" and outcome["detached"] is True, outcome
    result = outcome["result"]
    assert result["documents"] == handle["total"] > 0
    assert 0 < len(result["top_keywords"]) <= 5
    # the analysis feeds the report tool, as the callback's payload does inside a session
    report = alice.post("/tools/build-keyword-report", json={"analysis_id": result["analysis_id"]}).json()
    assert report["kind"] == "value" and report["data"]["report_id"].startswith("rpt-")
    assert (
        bob.post("/tools/build-keyword-report", json={"analysis_id": result["analysis_id"]}).json()["kind"] == "error"
    )


def test_the_direct_async_tool_refuses_what_a_session_would(alice: httpx.Client, bob: httpx.Client) -> None:
    handle = alice.post("/tools/query-sessions-handle", json={"business_line": "fund"}).json()["data"]
    for who, args in ((bob, {"handle_id": handle["handle_id"]}), (alice, {"handle_id": "hdl-nope"})):
        r = who.post("/tools/analyze-keywords-async", json=args)
        assert r.status_code == 200 and r.json()["kind"] == "error" and "not found" in r.json()["data"]["error"]
        assert "jobId" not in r.json()
    r = alice.post("/tools/analyze-keywords-async", json={"handle_id": handle["handle_id"], "top_n": "many"})
    assert r.json()["kind"] == "error" and "top_n" in r.json()["data"]["error"]
    assert alice.get("/api/finance/jobs/job-nope").status_code == 404
