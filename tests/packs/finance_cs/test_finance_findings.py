"""Findings an analyst would keep, on the demo data set (``generate`` with its defaults: 20,000
rows over 180 days, seed 7) and example 1's slice as the planner builds it (precious metal, the
last 30 days, the keyword 规则调整): the terms that define the slice (规则调整, the query's own
keyword) and the channel name "app" are left out, and the findings lead with the planted surge's
themes — what sets the slice apart from the 30 days before and from the rest of the period — by
lift, not by raw frequency. The analysis from the index and the one over the records agree."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tether.packs.finance_cs import contrast
from tether.packs.finance_cs.analysis import analyze
from tether.packs.finance_cs.findings import findings, rising_terms
from tether.packs.finance_cs.generator import generate
from tether.packs.finance_cs.indexed_analysis import analyze_indexed
from tether.packs.finance_cs.pack import open_finance, prepare
from tether.packs.finance_cs.query import BUSINESS_LINES, CHANNELS, parse_query
from tether.packs.finance_cs.report import render_markdown
from tether.packs.finance_cs.settings import FinanceSettings
from tether.packs.finance_cs.tools import Finance

NOW = datetime(2026, 12, 4, 17, 35, 0)
EXAMPLE_1 = {
    "businessLine": "precious-metal",
    "keywords": ["规则调整"],
    "startTime": (NOW - timedelta(days=30)).isoformat(),
    "endTime": NOW.isoformat(),
}
# the surge's templates (phrasebook.SURGE_ASKS): margin (保证金) raised (比例, 上调, 追加, 占用), no
# notice in the App (提醒, 推送, 弹窗, 通知), positions force-closed (强平), complaints about it
SURGE_THEMES = {"保证金", "比例", "提醒", "强平", "追加", "占用", "推送", "弹窗", "上调", "通知", "提前", "太短"}
GROUP_NAMES = {*CHANNELS, *BUSINESS_LINES, "贵金属", "外汇", "基金", "信用卡", "理财", "手机银行", "网银", "微信"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Finance]:
    folder: Path = tmp_path_factory.mktemp("demo-data")
    finance = open_finance(
        "http://127.0.0.1:9",
        FinanceSettings(database_url=f"sqlite:///{folder / 'finance.db'}", seed="no", report_dir=str(folder)),
    )
    prepare(finance)
    generate(finance.repo.engine, now=NOW)  # the demo's data set, indexed as it is seeded
    try:
        yield finance
    finally:
        finance.repo.engine.dispose()
        finance.state.engine.dispose()


@pytest.fixture(scope="module")
def example1(demo: Finance) -> dict[str, Any]:
    return analyze_indexed(demo.repo.engine, EXAMPLE_1, writer=demo.state.engine)


def test_the_terms_that_define_the_slice_are_left_out(example1: dict[str, Any]) -> None:
    excluded = {e["keyword"]: e for e in example1["excluded"]}
    assert excluded["规则调整"]["reason"] == "query" and excluded["规则调整"]["share"] > 0.95
    assert excluded["app"]["reason"] == "channel" and excluded["app"]["share"] > 0.9
    shown = [k["keyword"] for k in example1["keywords"]] + [d["keyword"] for d in example1["distinctive"]]
    assert not set(shown) & (GROUP_NAMES | {"规则调整"}), shown
    assert "规则调整" not in example1["quotes"] and "app" not in example1["quotes"]


def test_the_distinctive_terms_are_the_planted_themes(example1: dict[str, Any]) -> None:
    references = example1["contrast"]
    assert references["previous"]["documents"] * 10 < example1["documents"], "the surge against the 30 days before"
    assert references["rest"]["documents"] > example1["documents"]
    distinct = [d["keyword"] for d in example1["distinctive"]]
    assert distinct[0] == "保证金", distinct
    assert set(distinct[:6]) <= SURGE_THEMES, distinct
    assert {"提醒", "强平"} <= set(distinct[:6]), "no notice in the App, and the positions force-closed"
    for term in example1["distinctive"]:
        for ref in ("previous", "rest"):
            assert term["share"] >= contrast.MIN_LIFT * term[ref]["share"], term


def test_a_frequent_term_as_common_before_is_not_distinctive(example1: dict[str, Any]) -> None:
    """公告 (the announcement) is among the slice's frequent words, but conversations about a rule
    change always ask where the announcement is: not what sets this period apart."""
    share = {k["keyword"]: k["share"] for k in example1["keywords"]}
    assert share["公告"] > 0.1
    assert "公告" not in {d["keyword"] for d in example1["distinctive"]}


def test_the_findings_lead_with_the_change_and_the_distinctive_themes(example1: dict[str, Any]) -> None:
    lines = findings(example1)
    assert lines[0].startswith("与上一周期") and "倍" in lines[0]
    assert lines[1].startswith("突出问题") and "保证金 93%（上一周期 " in lines[1], lines[1]
    keywords_line = next(line for line in lines if line.startswith("高频关键词"))
    listed = keywords_line.split("）：", 1)[1]
    assert "规则调整" not in listed and "app" not in listed, keywords_line
    assert "不计查询条件与渠道、业务线名称：规则调整 99%、app 95%" in keywords_line
    assert "“保证金”相关会话主要来自 app 渠道" in lines[-1]
    # the planted surge came by the app (0.7 against 0.38 for the rest): the line says how usual
    # the app is in the rest of the period, so "mainly from the app" is a finding, not the mix
    rest = example1["contrast"]["rest"]["byChannel"]
    assert sum(rest.values()) == example1["contrast"]["rest"]["documents"] and next(iter(rest)) == "app"
    assert 0.33 < rest["app"] / sum(rest.values()) < 0.43
    assert re.search(r"（\d+条，占(6\d|7\d)%；同期其他会话中 app 占(3\d|4\d)%）$", lines[-1]), lines[-1]
    # the surge grows day by day (1x to 2x), and every term's daily count with it: no term's share
    # rose in the last 7 days beyond chance, so none is called rising (夜盘 was, by its daily count)
    assert not any(line.startswith("最近7天") for line in lines), lines
    report = render_markdown(example1, "t", EXAMPLE_1)
    assert report.index("## 突出问题") < report.index("## 高频关键词")
    assert "未计入关键词（只复述查询条件或来源）：规则调整（查询条件" in report


def test_a_slice_without_distinctive_terms_says_so(demo: Finance) -> None:
    """The replay's slice (forex, 规则调整: 15 conversations, 29 the month before) has no term that
    stands out beyond chance; the findings say so instead of leaving it out silently."""
    forex = analyze_indexed(demo.repo.engine, {**EXAMPLE_1, "businessLine": "forex"})
    assert forex["distinctive"] == [] and 0 < forex["documents"] < 50
    assert forex["contrast"]["previous"]["documents"] > 0
    lines = findings(forex)
    assert "突出问题：与上一周期及同期其他会话相比，没有占比明显更高的词（会话较少时，差异难以与偶然区分）" in lines


def test_the_analysis_over_the_records_agrees(demo: Finance, example1: dict[str, Any]) -> None:
    query = parse_query(EXAMPLE_1)
    previous, period = contrast.previous_query(query), contrast.period_query(query)
    assert previous is not None and period is not None
    chosen = demo.repo.ids(query)
    rest = sorted(set(demo.repo.ids(period)) - set(chosen))
    reference = analyze(
        demo.repo.fetch_by_ids(chosen),
        query=query,
        previous=demo.repo.fetch_by_ids(demo.repo.ids(previous)),
        rest=demo.repo.fetch_by_ids(rest),
    )
    assert json.dumps(reference, ensure_ascii=False, sort_keys=True) == json.dumps(
        example1, ensure_ascii=False, sort_keys=True
    )


def test_every_channel_and_business_line_is_named() -> None:
    assert set(contrast.CHANNEL_NAMES) == set(CHANNELS) and set(contrast.LINE_NAMES) == set(BUSINESS_LINES)
    terms = contrast.defining_terms(parse_query({"keywords": ["保证金比例"]}), lambda text: ["保证金", "比例"])
    assert terms["保证金比例"] == terms["保证金"] == terms["比例"] == "query", "a keyword and its tokens"
    assert terms["app"] == terms["微信"] == "channel" and terms["贵金属"] == terms["forex"] == "businessLine"


def test_a_difference_in_small_numbers_is_not_distinctive() -> None:
    """7 of 15 against 8 of 29 is a lift of 1.6 but could be chance (G² about 1); the same shares
    over ten times the conversations are not."""
    assert contrast.distinctive({"x": 7}, 15, {"previous": ({"x": 8}, 29)}, {}) == []
    [term] = contrast.distinctive({"x": 70}, 150, {"previous": ({"x": 80}, 290)}, {})
    assert term["keyword"] == "x" and term["previous"] == {"documents": 80, "share": 0.2759, "lift": 1.68}


def test_a_term_must_stand_out_against_every_reference() -> None:
    rising = ({"x": 5, "y": 5}, 100)
    assert [t["keyword"] for t in contrast.distinctive({"x": 50, "y": 50}, 100, {"previous": rising}, {})] == ["x", "y"]
    common = ({"x": 45, "y": 2}, 100)  # x is as common in the rest of the period
    both = {"previous": rising, "rest": common}
    assert [t["keyword"] for t in contrast.distinctive({"x": 50, "y": 50}, 100, both, {})] == ["y"]
    assert contrast.distinctive({"x": 50, "y": 50}, 100, both, {"y": "query"}) == []


def test_rising_means_a_larger_share_not_a_larger_count() -> None:
    """Four times the conversations in the last 7 days: a term mentioned by the same fifth of them
    is not rising, one that went from a tenth to half of them is."""
    days = 30
    trend = {
        "documents": [10] * (days - 7) + [40] * 7,
        "series": {"flat": [2] * (days - 7) + [8] * 7, "up": [1] * (days - 7) + [20] * 7},
    }
    assert rising_terms({"trend": trend}) == [("up", 0.1, 0.5)]
    lines = findings({"keywords": [{"keyword": "up", "documents": 163, "share": 0.45}], "trend": trend})
    assert "最近7天明显上升（提及会话占比，此前 → 最近7天）：up（10% → 50%）" in lines
    few = {"documents": [3] * 30, "series": {"x": [0] * 23 + [1, 1, 0, 0, 0, 0, 0]}}  # 2 of 21, none before
    assert rising_terms({"trend": few}) == [], "two mentions are no trend"


def test_a_fall_against_the_previous_period_is_said_as_one() -> None:
    def said(now: int, before: int) -> str:
        previous = {"start": "2026-10-05T17:58:00", "end": "2026-11-04T17:57:59", "documents": before}
        return findings({"documents": now, "contrast": {"previous": previous}})[-1]

    assert said(15, 29) == "与上一周期（2026-10-05 至 2026-11-04）相比：匹配会话 29 → 15 条，比上一周期减少 48%"
    assert said(1260, 54).endswith("匹配会话 54 → 1260 条，为上一周期的 23.3 倍")
    assert said(3, 0).endswith("上一周期没有匹配的会话")
