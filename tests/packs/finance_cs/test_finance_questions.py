"""Questions a customer-support analyst types, read by the offline planner's finance rules against
a fixed clock: which skill answers, and the filters, period, language and row count it reads.

``now`` is Saturday 2026-12-05 06:44 (this week began on Monday 2026-11-30), as in the eval runs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tether.core.skills import SkillRegistry, load_skills, select_by_rules
from tether.models.planner import PlannerQuestion
from tether.packs.finance_cs.pack import SKILLS
from tether.packs.finance_cs.planner_rules import date_range, extract, language

NOW = datetime(2026, 12, 5, 6, 44, 0)


def ex(query: str, *previous: str) -> dict[str, Any]:
    return extract(query, {"_previous": list(previous)}, now=NOW)


def route(query: str) -> list[str]:
    skills, issues = load_skills([SKILLS])
    assert not issues
    return select_by_rules(SkillRegistry(skills), query, "dev").skill_ids


# ---- customer ids, however the analyst writes them ------------------------------------------------


@pytest.mark.parametrize(
    ("question", "customer"),
    [
        ("看一下客户C100005的会话", "C100005"),
        ("C100005最近聊了什么", "C100005"),
        ("客户c100005上周的会话有几条", "C100005"),
        ("客户号100005的会话", "C100005"),
        ("客户编号：100005 最近的会话", "C100005"),
        ("how many conversations has customer C100012 had?", "C100012"),
        ("show me customer #100012's chats", "C100012"),
        ("最近7天外汇业务的会话有多少条", None),  # 7 is a number of days, not a customer
        ("查询 CS202612010001 这条会话", None),  # a session code
    ],
)
def test_customer_ids_in_any_phrasing(question: str, customer: str | None) -> None:
    assert ex(question)["customer_id"] == customer
    assert route(question) == ["finance-session-query"]


# ---- business lines, channels and tiers by Chinese and English names ----------------------------


@pytest.mark.parametrize(
    ("question", "line"),
    [
        ("外汇业务上周有多少会话", "forex"),
        ("结售汇相关的会话多少条", "forex"),
        ("how many FX conversations today?", "forex"),
        ("foreign exchange sessions this week", "forex"),
        ("黄金的会话有几条", "precious-metal"),
        ("precious metals conversations last month", "precious-metal"),
        ("基金的会话数", "fund"),
        ("mutual fund sessions in November", "fund"),
        ("信用卡的会话有多少", "credit-card"),
        ("credit card conversations about annual fees", "credit-card"),
        ("理财最近三天的会话", "wealth"),
        ("wealth management chats this month", "wealth"),
        ("gold card customers' sessions", None),  # a tier, not the gold business
    ],
)
def test_business_lines_by_name(question: str, line: str | None) -> None:
    assert ex(question)["business_line"] == line


@pytest.mark.parametrize(
    ("question", "channel"),
    [
        ("手机银行渠道上周有多少会话", "app"),
        ("App上的会话有几条", "app"),
        ("mobile conversations this week", "app"),
        ("网上银行今天的会话", "web"),
        ("网银的会话多少条", "web"),
        ("online banking sessions yesterday", "web"),
        ("热线电话的会话", "phone"),
        ("hotline conversations last week", "phone"),
        ("微信渠道今天的会话有多少", "wechat"),
        ("WeChat chats this month", "wechat"),
        ("外汇的会话有几条", None),
    ],
)
def test_channels_by_name(question: str, channel: str | None) -> None:
    assert ex(question)["channel"] == channel


@pytest.mark.parametrize(
    ("question", "tier"),
    [
        ("钻石客户最近30天的会话数", "钻石"),
        ("高净值客户的贵金属会话有多少", "高净值"),
        ("白金卡客户信用卡的会话多少条", "白金"),
        ("金卡客户的会话", "金卡"),
        ("普通客户上周的会话", "普通"),
        ("how many diamond customers' conversations this week?", "钻石"),
        ("high-net-worth clients' forex sessions", "高净值"),
        ("HNW conversations about margin", "高净值"),
        ("platinum customers' credit card chats", "白金"),
        ("gold card customers conversations", "金卡"),
        ("forex conversations", None),
    ],
)
def test_tiers_by_name(question: str, tier: str | None) -> None:
    assert ex(question)["customer_tier"] == tier


# ---- date phrases against the fixed clock ---------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "start", "end"),
    [
        ("今天", "2026-12-05 00:00:00", "2026-12-05 06:44:00"),
        ("today", "2026-12-05 00:00:00", "2026-12-05 06:44:00"),
        ("昨天", "2026-12-04 00:00:00", "2026-12-04 23:59:59"),
        ("前天", "2026-12-03 00:00:00", "2026-12-03 23:59:59"),
        ("本周", "2026-11-30 00:00:00", "2026-12-05 06:44:00"),
        ("上周", "2026-11-23 00:00:00", "2026-11-29 23:59:59"),
        ("本月", "2026-12-01 00:00:00", "2026-12-05 06:44:00"),
        ("上个月", "2026-11-01 00:00:00", "2026-11-30 23:59:59"),
        ("最近7天", "2026-11-28 06:44:00", "2026-12-05 06:44:00"),
        ("最近十五天", "2026-11-20 06:44:00", "2026-12-05 06:44:00"),
        ("近两周", "2026-11-21 06:44:00", "2026-12-05 06:44:00"),
        ("最近一周", "2026-11-28 06:44:00", "2026-12-05 06:44:00"),
        ("past 30 days", "2026-11-05 06:44:00", "2026-12-05 06:44:00"),
        ("2026年11月", "2026-11-01 00:00:00", "2026-11-30 23:59:59"),
        ("11月", "2026-11-01 00:00:00", "2026-11-30 23:59:59"),
        ("十一月份", "2026-11-01 00:00:00", "2026-11-30 23:59:59"),
        ("今年3月", "2026-03-01 00:00:00", "2026-03-31 23:59:59"),
        ("去年12月", "2025-12-01 00:00:00", "2025-12-31 23:59:59"),
        ("Q3", "2026-07-01 00:00:00", "2026-09-30 23:59:59"),
        ("第三季度", "2026-07-01 00:00:00", "2026-09-30 23:59:59"),
        ("2025年Q4", "2025-10-01 00:00:00", "2025-12-31 23:59:59"),
        ("今年", "2026-01-01 00:00:00", "2026-12-05 23:59:59"),
        ("去年", "2025-01-01 00:00:00", "2025-12-31 23:59:59"),
        ("11月1日到15日", "2026-11-01 00:00:00", "2026-11-15 23:59:59"),
        ("2026-11-03", "2026-11-03 00:00:00", "2026-11-03 23:59:59"),
        ("in November", "2026-11-01 00:00:00", "2026-11-30 23:59:59"),
        ("October 2025", "2025-10-01 00:00:00", "2025-10-31 23:59:59"),
    ],
)
def test_date_phrases_against_a_fixed_clock(phrase: str, start: str, end: str) -> None:
    assert date_range(f"外汇{phrase}的会话有多少条", NOW) == (start, end)
    values = ex(f"外汇{phrase}的会话有多少条")
    assert (values["lookup_start_time"], values["lookup_end_time"]) == (start, end)


def test_a_quarter_still_to_come_means_last_years() -> None:
    march = datetime(2026, 3, 15, 12, 0, 0)
    assert date_range("Q3基金的会话数", march) == ("2025-07-01 00:00:00", "2025-09-30 23:59:59")
    assert date_range("2026年Q3基金的会话数", march) == ("2026-07-01 00:00:00", "2026-09-30 23:59:59")


def test_no_date_phrase_is_no_period_for_a_look_up() -> None:
    values = ex("看一下客户C100005的会话")
    assert (values["lookup_start_time"], values["lookup_end_time"]) == (None, None)
    assert date_range("may I see the forex conversations", NOW) is None  # "may" is a verb here


# ---- counts, samples, topics ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "最近7天外汇业务的客服会话有多少条？",
        "钻石客户最近30天的会话数",
        "最近一周关于手续费的会话",
        "基金业务上个月多少条会话",
        "how many forex conversations in the last 7 days?",
        "抽几条信用卡年费相关的会话看看",
        "show me a few app conversations about 手续费 last week",
    ],
)
def test_counts_and_samples_reach_the_session_query(question: str) -> None:
    assert route(question) == ["finance-session-query"]


def test_an_analysis_that_mentions_sessions_stays_an_analysis() -> None:
    assert route("分析最近30天贵金属的客服会话") == ["finance-semantic-analysis"]
    assert route("看看理财业务最近30天客户都在问什么，做个分析") == ["finance-semantic-analysis"]
    assert sorted(route("信用卡盗刷问题分析报告，按渠道拆分")) == ["finance-reporting", "finance-semantic-analysis"]


@pytest.mark.parametrize(
    ("question", "rows"),
    [
        ("查询外汇业务最近的10条会话", 10),
        ("抽样5条贵金属的会话", 5),
        ("show me 3 conversations about 年费", 3),
        ("外汇的会话有多少条", 20),
    ],
)
def test_the_rows_asked_for(question: str, rows: int) -> None:
    assert ex(question)["top_n"] == rows


@pytest.mark.parametrize(
    ("question", "keywords"),
    [
        ("最近一周关于手续费的会话", ["手续费"]),
        ("电话渠道关于盗刷的会话有几条", ["盗刷"]),
        ("关于债券的会话有多少", ["债券"]),
        ("提到大额存单的会话", ["大额存单"]),
        ("手机银行登录相关的会话", ["登录"]),
        ("网银上本月黄金相关的会话多少条", []),  # every word is a filter: no topic
        ("credit card conversations about annual fees", ["年费"]),
        ("conversations about margin calls this week", ["保证金"]),
        ("外汇的会话有几条", []),
    ],
)
def test_topic_keywords(question: str, keywords: list[str]) -> None:
    assert ex(question)["keywords"] == keywords


# ---- the language asked, and honest refusals ---------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "lang"),
    [
        ("看一下客户C100005的会话", "zh"),
        ("how many forex conversations in the last 7 days?", "en"),
        ("show me a few app conversations about 手续费 last week", "en"),
        ("看看 app 上的会话", "zh"),
    ],
)
def test_the_answer_language_follows_the_question(question: str, lang: str) -> None:
    assert language(question) == lang
    assert ex(question)["language"] == lang


@pytest.mark.parametrize(
    ("question", "term"),
    [
        ("股票业务的会话有多少", "股票"),
        ("期货客户上周的会话", "期货"),
        ("帮我查一下期权业务的会话", "期权"),
        ("how many stock trading conversations this week?", "stock"),
    ],
)
def test_a_business_line_the_data_does_not_hold_is_refused_naming_what_can_be_asked(question: str, term: str) -> None:
    with pytest.raises(PlannerQuestion) as info:
        ex(question)
    text = str(info.value)
    assert f"“{term}”" in text
    if language(question) == "zh":
        assert text.startswith("我离线回答不了这个问题") and "我可以：" in text and "外汇" in text
    else:
        assert text.startswith("I can't answer that offline") and "I can:" in text and "forex" in text


@pytest.mark.parametrize(
    "question",
    [
        "各业务线的会话数",
        "每个渠道有多少会话",
        "哪个渠道的会话最多",
        "按等级统计会话",
        "how many sessions per channel?",
    ],
)
def test_a_count_per_group_is_refused_not_answered_with_the_total(question: str) -> None:
    with pytest.raises(PlannerQuestion) as info:
        ex(question)
    assert "offline" in str(info.value) or "离线" in str(info.value)


def test_a_known_line_named_as_a_business_is_not_refused() -> None:
    assert ex("外汇业务上周有多少会话")["business_line"] == "forex"
    assert ex("客服业务的会话有多少")["business_line"] is None  # 客服 is not a business line
