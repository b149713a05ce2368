"""A clerk's look-up: ``tether ask "查询客户C…最近的会话"`` finds that customer's sessions and
shows them (a table of the latest rows and the total), or says plainly that none matched."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tether.packs.finance_cs.digest import one_line, summary, table
from tether.packs.finance_cs.query import parse_query

from .conftest import FinanceServer, final_answer, tool_results, wait_status

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def alice(finance_server: FinanceServer) -> Iterator[httpx.Client]:
    with finance_server.client("dev-alice") as c:
        yield c


def ask(client: httpx.Client, message: str) -> dict[str, Any]:
    r = client.post("/api/agent/sessions", json={"message": message})
    assert r.status_code == 200, r.text
    return wait_status(client, r.json()["sessionId"], "SUCCEEDED")


def busiest_customer(client: httpx.Client) -> tuple[str, int]:
    records = client.post("/api/customer-sessions/query", json={"limit": 500}).json()["records"]
    counts: dict[str, int] = {}
    for r in records:
        counts[r["customerId"]] = counts.get(r["customerId"], 0) + 1
    customer = max(counts, key=lambda c: counts[c])
    total = client.post("/api/customer-sessions/query", json={"customerId": customer, "limit": 1}).json()["total"]
    return customer, total


def test_a_named_customer_is_looked_up_and_shown(alice: httpx.Client) -> None:
    customer, total = busiest_customer(alice)
    session = ask(alice, f"查询客户{customer}最近的会话")
    (result,) = [r for r in tool_results(session) if r["tool"] == "query_customer_sessions_mysql"]
    step = session["executedSteps"][0]
    assert step["args"]["customer_id"] == customer
    assert step["args"].get("start_time") is None, "'latest' is not limited to a default period"
    assert result["data"]["total"] == total > 0
    answer = final_answer(session)
    assert f"共找到 {total} 条（客户 {customer}、不限时间）匹配的会话" in answer, answer
    assert "| 时间 | 渠道 | 客户 | 等级 | 客户问题 |" in answer
    rows = [line for line in answer.splitlines() if line.startswith("| 20")]
    assert len(rows) == min(total, 20) and all(f"| {customer} |" in row for row in rows)
    newest = result["data"]["records"][0]
    assert rows[0].startswith(f"| {newest['occurredAt'].replace('T', ' ')[:16]} | {newest['channel']} |")
    # the DSL takes the customer as a parameter: the same look-up for someone else, without the model
    dsl = alice.get(f"/api/agent/dsl/{session['lastDslId']}").json()
    assert dsl["params"]["customer_id"] == customer


def test_a_customer_that_matches_nothing_is_said_so(alice: httpx.Client) -> None:
    """The seed's id shape (C + 5 digits) is extracted too; the generated data has none of them."""
    session = ask(alice, "查询客户C10001最近的会话")
    assert session["executedSteps"][0]["args"]["customer_id"] == "C10001"
    answer = final_answer(session)
    assert answer == "没有找到客户 C10001 的任何会话记录，请核对客户编号。", answer
    assert "共找到" not in answer


def test_tether_ask_prints_the_table(finance_server: FinanceServer, alice: httpx.Client) -> None:
    customer, total = busiest_customer(alice)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    out = subprocess.run(
        [sys.executable, "-m", "tether.cli", "ask", f"查询客户{customer}最近的会话", "--url", finance_server.url],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert f"共找到 {total} 条" in out.stdout and f"| {customer} |" in out.stdout, out.stdout


# ---- the text itself ---------------------------------------------------------------------------------


def test_the_summary_reads_well_in_each_case() -> None:
    rec = {
        "occurredAt": "2026-03-13T10:00:00",
        "channel": "app",
        "customerId": "C100023",
        "customerTier": "金卡",
        "userMessage": "贵金属保证金比例\n调整后｜我的持仓 | 会不会被强平？请尽快回复，谢谢！！！！！！！！！！！！",
    }
    q = parse_query({"customerId": "C100023", "businessLine": "precious-metal", "channel": "app"})
    text = summary(q, 1, [rec], None)
    assert text.startswith("共找到 1 条（客户 C100023、贵金属、渠道 app、不限时间）匹配的会话，全部如下：")
    row = text.splitlines()[-1]
    assert row.startswith("| 2026-03-13 10:00 | app | C100023 | 金卡 | 贵金属保证金比例 调整后")
    assert row.count("|") == 6 and row.endswith("… |"), "one line, no stray cell separators, cut short"
    assert summary(q, 0, [], 5).startswith("客户 C100023 有 5 条会话，但没有符合条件")
    assert summary(parse_query({"channel": "web"}), 0, [], None) == "没有找到符合条件（渠道 web、不限时间）的会话。"
    week = parse_query({"channel": "web", "startTime": "2026-03-09", "endTime": "2026-03-15"})
    assert summary(week, 0, [], None) == "没有找到符合条件（渠道 web、2026-03-09 至 2026-03-15）的会话。"
    many = summary(parse_query({}), 4342, [rec] * 20, None)
    assert many.startswith("共找到 4342 条（不限时间）匹配的会话，以下是最新的 20 条：")
    assert len(table([rec] * 30).splitlines()) == 2 + 20
    assert one_line("a\n\tb  c") == "a b c"


def test_an_english_question_gets_its_summary_in_english() -> None:
    rec = {"occurredAt": "2026-03-13T10:00:00", "channel": "app", "customerId": "C100023", "customerTier": "钻石"}
    q = parse_query({"businessLine": "forex", "customerTier": "钻石", "keywords": ["汇率"], "startTime": "2026-03-08"})
    text = summary(q, 3, [rec] * 3, None, "en")
    assert text.startswith(
        "Found 3 conversations (forex, diamond customers, keywords 汇率, 2026-03-08 to …); all of them:"
    )
    assert "| Time | Channel | Customer | Tier |" in text
    assert summary(parse_query({"customerId": "C1"}), 0, [], 0, "en").startswith("No conversations of customer C1")
    assert (
        summary(parse_query({"channel": "web"}), 0, [], None, "en")
        == "No conversations found matching (channel web, all time)."
    )
