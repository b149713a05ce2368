"""Reports: Markdown and a standalone HTML page with inline SVG charts; injected text is escaped."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from tether.packs.finance_cs.analysis import analyze
from tether.packs.finance_cs.data import to_record
from tether.packs.finance_cs.generator import generate_rows
from tether.packs.finance_cs.report import default_title, render_html, render_markdown

NOW = datetime(2026, 3, 15, 12, 0, 0)
EVIL = '<script>alert("x")</script>规则调整后保证金又涨了 | **粗体** [链接](javascript:alert(1))'


@pytest.fixture(scope="module")
def analysis() -> dict[str, Any]:
    rows = generate_rows(rows=3000, days=60, seed=7, now=NOW)
    records = [to_record({"id": i, **row}) for i, row in enumerate(rows, 1)]
    since = (NOW - timedelta(days=30)).isoformat()
    sliced = [r for r in records if r["businessLine"] == "precious-metal" and r["occurredAt"] >= since]
    sliced[0] = {**sliced[0], "userMessage": EVIL, "channel": "<b>app</b>"}
    return analyze(sliced, top_n=15)


def test_html_is_standalone_with_three_svg_charts(analysis: dict[str, Any]) -> None:
    page = render_html(analysis, title="贵金属 <规则调整> 报告", scope={"businessLine": "precious-metal"})
    assert page.startswith("<!DOCTYPE html>")
    assert len(re.findall(r"<svg\b", page)) == 3
    assert page.count("</svg>") == 3
    assert "<polyline" in page and "<rect" in page
    assert not re.search(r"(src|href)\s*=", page)
    assert "http" not in page
    assert "<script" not in page.lower()
    assert "&lt;规则调整&gt;" in page


def test_html_escapes_injected_message_text(analysis: dict[str, Any]) -> None:
    quotes = [q for qs in analysis["quotes"].values() for q in qs]
    analysis = {**analysis, "quotes": {"规则调整": [{**quotes[0], "text": EVIL, "channel": "<b>app</b>"}]}}
    page = render_html(analysis)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<b>app</b>" not in page and "&lt;b&gt;app&lt;/b&gt;" in page


def test_markdown_has_sections_and_escapes(analysis: dict[str, Any]) -> None:
    quotes = [q for qs in analysis["quotes"].values() for q in qs]
    analysis = {**analysis, "quotes": {"规则调整": [{**quotes[0], "text": EVIL}]}}
    text = render_markdown(analysis, title="报告 <script>", scope={"businessLine": "precious-metal"})
    assert text.startswith("# 报告 &lt;script&gt;")
    for heading in ("## 主要发现", "## 高频关键词", "## 渠道分布", "## 客户等级分布", "## 代表性原话"):
        assert heading in text
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "\\*\\*粗体\\*\\*" in text and "\\[链接\\]" in text and "\\|" in text
    assert "规则调整" in text


def test_empty_analysis_renders() -> None:
    empty = analyze([])
    text = render_markdown(empty)
    assert "没有可分析的会话" in text
    scope = {"businessLine": "credit-card", "keywords": ["盗刷"], "startTime": "2026-11-05 06:44:54", "splitBy": []}
    named = render_markdown(empty, scope=scope)
    assert "没有符合条件（信用卡、关键词 盗刷、2026-11-05 至 …）的会话，无从分析" in named, (
        "it says what matched nothing"
    )
    assert "没有符合条件（信用卡、关键词 盗刷" in render_html(empty, scope=scope)
    assert "**会话日期**：—" in text and "None" not in text
    assert render_html(empty).count("<svg") == 3


def test_the_header_says_what_was_analysed_in_the_readers_words(analysis: dict[str, Any]) -> None:
    """The query's keys and values as a Chinese reader reads them — not businessLine, ISO times or
    a Python list — and a title that names the slice, so two reports are told apart."""
    scope = {
        "keywords": ["规则调整"],
        "businessLine": "precious-metal",
        "startTime": "2026-11-04T17:51:11",
        "endTime": "2026-12-04T17:51:11",
        "splitBy": ["channel", "tier"],
    }
    title = default_title(scope)
    assert title == "贵金属 · 规则调整 客服问题关键词分析报告"
    assert default_title({"businessLine": "forex", "keywords": ["规则调整"]}).startswith("外汇 · 规则调整 ")
    assert default_title({}) == "客服问题关键词分析报告"
    text = render_markdown(analysis, title, scope)
    assert text.startswith("# 贵金属 · 规则调整 客服问题关键词分析报告\n")
    for row in (
        "- **查询关键词**：规则调整",
        "- **业务线**：贵金属（precious-metal）",
        "- **查询时间**：2026-11-04 17:51 至 2026-12-04 17:51",
        "- **拆分维度**：渠道、客户等级",
    ):
        assert row in text, row
    for raw in ("businessLine", "startTime", "splitBy", "['", "T17:51"):
        assert raw not in text, raw
    page = render_html(analysis, title, scope)
    assert "<th>业务线</th><td>贵金属（precious-metal）</td>" in page and "businessLine" not in page
    # and the method, last, in the report's language too
    assert "_方法：jieba 精确模式分词" in text and "share of conversations" not in text
    assert "方法：jieba 精确模式分词" in page and "share of conversations" not in page
