"""The offline planner's rules for the finance pack, one by one, with a fixed ``now``.

``now`` is Sunday 2026-03-15 12:00: this week began on Monday 2026-03-09.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tether.core.skills import SkillRegistry, load_skills, select_by_rules
from tether.models.planner import PlannerQuestion
from tether.packs.finance_cs.pack import SKILLS
from tether.packs.finance_cs.planner_rules import date_range, extract

NOW = datetime(2026, 3, 15, 12, 0, 0)


def ex(query: str, *previous: str, **context: Any) -> dict[str, Any]:
    return extract(query, {**context, "_previous": list(previous)}, now=NOW)


# ---- date phrases ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "start", "end"),
    [
        ("最近30天", "2026-02-13 12:00:00", "2026-03-15 12:00:00"),
        ("近7天", "2026-03-08 12:00:00", "2026-03-15 12:00:00"),
        ("过去两周", "2026-03-01 12:00:00", "2026-03-15 12:00:00"),
        ("最近3个月", "2025-12-15 12:00:00", "2026-03-15 12:00:00"),
        ("最近一周", "2026-03-08 12:00:00", "2026-03-15 12:00:00"),
        ("last 14 days", "2026-03-01 12:00:00", "2026-03-15 12:00:00"),
        ("本月", "2026-03-01 00:00:00", "2026-03-15 12:00:00"),
        ("上个月", "2026-02-01 00:00:00", "2026-02-28 23:59:59"),
        ("上月", "2026-02-01 00:00:00", "2026-02-28 23:59:59"),
        ("本周", "2026-03-09 00:00:00", "2026-03-15 12:00:00"),
        ("上周", "2026-03-02 00:00:00", "2026-03-08 23:59:59"),
        ("昨天", "2026-03-14 00:00:00", "2026-03-14 23:59:59"),
        ("今天", "2026-03-15 00:00:00", "2026-03-15 12:00:00"),
        ("3月1日到3月14日", "2026-03-01 00:00:00", "2026-03-14 23:59:59"),
        ("3月1号至14号", "2026-03-01 00:00:00", "2026-03-14 23:59:59"),
        ("2025年11月3日到11月9日", "2025-11-03 00:00:00", "2025-11-09 23:59:59"),
        ("2026-01-05 到 2026-02-10", "2026-01-05 00:00:00", "2026-02-10 23:59:59"),
        ("2026-01-05 to 2026-02-10", "2026-01-05 00:00:00", "2026-02-10 23:59:59"),
    ],
)
def test_date_phrases(phrase: str, start: str, end: str) -> None:
    assert date_range(f"请分析{phrase}贵金属的客服问题", NOW) == (start, end)


def test_a_month_day_range_after_now_means_last_year() -> None:
    assert date_range("4月1日到4月10日", NOW) == ("2025-04-01 00:00:00", "2025-04-10 23:59:59")


def test_a_month_day_range_across_the_new_year() -> None:
    january = datetime(2026, 1, 10, 9, 0, 0)
    assert date_range("12月20日到1月5日", january) == ("2025-12-20 00:00:00", "2026-01-05 23:59:59")


def test_last_month_in_january_is_last_december() -> None:
    assert date_range("上个月", datetime(2026, 1, 20)) == ("2025-12-01 00:00:00", "2025-12-31 23:59:59")


def test_no_date_phrase_defaults_to_thirty_days_and_says_so() -> None:
    assert date_range("贵金属的客服问题", NOW) is None
    values = ex("分析贵金属客服问题")
    assert (values["start_time"], values["end_time"]) == ("2026-02-13 12:00:00", "2026-03-15 12:00:00")
    assert values["period_defaulted"] is True
    assert ex("分析最近30天贵金属客服问题")["period_defaulted"] is False


# ---- business lines, channels, tiers --------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "line"),
    [
        ("贵金属", "precious-metal"),
        ("黄金", "precious-metal"),
        ("白银T+D", "precious-metal"),
        ("外汇", "forex"),
        ("结售汇", "forex"),
        ("换汇", "forex"),
        ("基金", "fund"),
        ("信用卡", "credit-card"),
        ("理财", "wealth"),
        ("财富管理", "wealth"),
        ("Gold", "precious-metal"),
        ("forex", "forex"),
        ("credit card", "credit-card"),
    ],
)
def test_business_line_synonyms(phrase: str, line: str) -> None:
    assert ex(f"分析最近30天{phrase}相关的客服问题")["business_line"] == line


def test_an_english_word_inside_another_is_not_a_synonym() -> None:
    # "refund" holds "fund", "whatsapp" holds "app", "iphone" holds "phone"
    values = ex("analyse credit card refund complaints from whatsapp users on iphone")
    assert values["business_line"] == "credit-card"
    assert values["channel"] is None


@pytest.mark.parametrize(
    ("phrase", "channel"),
    [
        ("手机银行", "app"),
        ("App", "app"),
        ("客户端", "app"),
        ("网银", "web"),
        ("官网", "web"),
        ("电话", "phone"),
        ("热线", "phone"),
        ("微信", "wechat"),
        ("WeChat", "wechat"),
    ],
)
def test_channel_synonyms(phrase: str, channel: str) -> None:
    assert ex(f"分析贵金属{phrase}渠道的客服问题")["channel"] == channel


def test_no_channel_means_all_channels() -> None:
    assert ex("分析贵金属客服问题")["channel"] is None


@pytest.mark.parametrize("tier", ["高净值", "钻石", "白金", "金卡", "普通"])
def test_tiers(tier: str) -> None:
    assert ex(f"分析贵金属{tier}客户的客服问题")["customer_tier"] == tier


def test_no_tier_means_all_tiers() -> None:
    assert ex("分析贵金属客服问题")["customer_tier"] is None


# ---- top N, split, keywords -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "top"),
    [
        ("前10个关键词", 10),
        ("top 20 keywords", 20),
        ("TOP5", 5),
        ("关键词", 20),
        ("提前1天平仓的投诉", 20),
        ("之前3个月的", 20),
        ("前3天", 20),
    ],
)
def test_top_n(phrase: str, top: int) -> None:
    assert ex(f"分析贵金属客服问题的{phrase}")["top_n"] == top


@pytest.mark.parametrize(
    ("phrase", "split"),
    [
        ("按渠道拆分", ["channel"]),
        ("split by channel", ["channel"]),
        ("按客户等级拆分", ["tier"]),
        ("按等级", ["tier"]),
        ("按渠道和按客户等级拆分", ["channel", "tier"]),
        ("", []),
    ],
)
def test_split(phrase: str, split: list[str]) -> None:
    assert ex(f"分析贵金属客服问题，{phrase}")["split_by"] == split


def test_keywords_come_from_the_topic_list() -> None:
    assert ex("请分析最近30天贵金属规则调整相关的客服问题并生成报告")["keywords"] == ["规则调整"]
    assert ex("分析贵金属保证金和手续费、延期交收的投诉")["keywords"] == ["保证金", "手续费", "延期交收"]
    assert ex("分析贵金属的客服问题")["keywords"] == []


def test_the_main_question() -> None:
    assert ex("请分析最近30天贵金属规则调整相关的客服问题并生成报告") == {
        "business_line": "precious-metal",
        "channel": None,
        "customer_id": None,
        "customer_tier": None,
        "start_time": "2026-02-13 12:00:00",
        "end_time": "2026-03-15 12:00:00",
        "period_defaulted": False,
        "lookup_start_time": "2026-02-13 12:00:00",
        "lookup_end_time": "2026-03-15 12:00:00",
        "top_n": 20,
        "split_by": [],
        "keywords": ["规则调整"],
        "language": "zh",
    }


# ---- follow-ups -----------------------------------------------------------------------------------


def test_a_follow_up_inherits_what_earlier_messages_said() -> None:
    first = "请分析最近30天贵金属规则调整相关的客服问题并生成报告"
    values = ex("只分析高净值客户，并按渠道拆分", first)
    assert values["business_line"] == "precious-metal"
    assert values["keywords"] == ["规则调整"]
    assert (values["start_time"], values["end_time"]) == ("2026-02-13 12:00:00", "2026-03-15 12:00:00")
    assert values["customer_tier"] == "高净值"
    assert values["split_by"] == ["channel"]


def test_the_newest_message_wins() -> None:
    values = ex("改看外汇，上周，手机银行", "分析最近30天贵金属规则调整的问题，电话渠道", "前5个")
    assert values["business_line"] == "forex"
    assert (values["start_time"], values["end_time"]) == ("2026-03-02 00:00:00", "2026-03-08 23:59:59")
    assert values["channel"] == "app"
    assert values["top_n"] == 5  # the newest message that says one
    assert values["keywords"] == ["规则调整"]


def test_the_global_context_supplies_line_and_channel() -> None:
    values = ex("分析最近7天的客服问题", businessLine="fund", channel="web")
    assert (values["business_line"], values["channel"]) == ("fund", "web")


# ---- polite failure -------------------------------------------------------------------------------

CHOICES = ("贵金属（precious-metal）", "外汇（forex）", "基金（fund）", "信用卡（credit-card）", "理财（wealth）")


def test_an_analysis_without_a_business_line_asks_and_lists_the_choices() -> None:
    with pytest.raises(PlannerQuestion) as info:
        ex("请分析最近30天规则调整相关的客服问题")
    text = str(info.value)
    assert "无法确定" in text and "business line" in text
    assert all(choice in text for choice in CHOICES)


def test_an_unsupported_business_line_is_named() -> None:
    with pytest.raises(PlannerQuestion) as info:
        ex("请分析最近30天股票相关的客服问题并生成报告")
    text = str(info.value)
    assert "“股票”不是支持的业务线" in text
    assert all(choice in text for choice in CHOICES)


def test_a_follow_up_does_not_ask_again() -> None:
    assert ex("再按客户等级拆分", "分析贵金属客服问题")["business_line"] == "precious-metal"


def test_a_plain_look_up_needs_no_business_line() -> None:
    assert ex("查一下客户C10001最近的会话")["business_line"] is None


@pytest.mark.parametrize(
    ("message", "customer"),
    [
        ("查询客户C10001最近的会话", "C10001"),  # the seed's shape: C + 5 digits
        ("查一下客户C100023最近的会话", "C100023"),  # the generator's: C + 6
        ("看看 c100023 的电话会话", "C100023"),
        ("客户编号C1234567890的记录", "C1234567890"),
        ("show me the sessions of customer C200001 last week", "C200001"),
        ("查询客户的会话", None),
        ("查询 CS202603130001 这条会话", None),  # a session code is not a customer id
        ("查询订单ABC12345", None),
    ],
)
def test_customer_ids_of_any_digit_count_are_extracted(message: str, customer: str | None) -> None:
    assert ex(message)["customer_id"] == customer


def test_a_follow_up_keeps_the_customer_and_a_look_up_has_no_default_period() -> None:
    values = ex("只看电话渠道", "查询客户C100023最近的会话")
    assert (values["customer_id"], values["channel"]) == ("C100023", "phone")
    assert (values["lookup_start_time"], values["lookup_end_time"]) == (None, None)
    assert values["period_defaulted"] and values["start_time"]  # an analysis still gets its 30 days
    named = ex("查询客户C100023上周的会话")
    assert (named["lookup_start_time"], named["lookup_end_time"]) == ("2026-03-02 00:00:00", "2026-03-08 23:59:59")


# ---- everyday look-ups reach the session query, whatever the phrasing ---------------------------------


LOOKUPS = [
    ("看一下客户C100005的会话", {"customer_id": "C100005"}),
    ("客户c100005最近的会话", {"customer_id": "C100005", "lookup_start_time": None}),
    ("C100005这个客户聊了什么", {"customer_id": "C100005"}),
    ("最近7天外汇业务的客服会话有多少条", {"business_line": "forex", "lookup_start_time": "2026-03-08 12:00:00"}),
    ("手机银行渠道上周有多少条信用卡的会话", {"business_line": "credit-card", "channel": "app"}),
    ("微信上关于手续费的会话有哪些", {"channel": "wechat", "keywords": ["手续费"]}),
    ("How many credit card sessions this month?", {"business_line": "credit-card"}),
    ("show me forex conversations from last week", {"business_line": "forex"}),
    ("抽样20条贵金属的会话", {"business_line": "precious-metal"}),
]


@pytest.mark.parametrize(("message", "expected"), LOOKUPS)
def test_look_ups_in_any_phrasing_reach_the_session_query_with_their_filters(
    message: str, expected: dict[str, Any]
) -> None:
    skills, issues = load_skills([SKILLS])
    assert not issues
    chosen = select_by_rules(SkillRegistry(skills), message, "dev").skill_ids
    assert chosen == ["finance-session-query"], chosen
    got = ex(message)
    assert {k: got[k] for k in expected} == expected


def test_an_analysis_is_not_also_a_look_up() -> None:
    skills, _ = load_skills([SKILLS])
    chosen = select_by_rules(SkillRegistry(skills), "分析最近30天贵金属规则调整相关的客服会话", "dev").skill_ids
    assert chosen == ["finance-semantic-analysis"]
