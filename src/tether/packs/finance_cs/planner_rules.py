"""The offline planner's rules for this pack: turn a Chinese (or English) request into tool
arguments — date ranges, business line, channel, customer id and tier, top N, split dimensions
and topic keywords. A follow-up inherits what earlier messages said. When the business line of an
analysis cannot be told, it asks (listing the choices) instead of guessing.

An analysis always has a period (the last 30 days unless the request names one); a look-up
("查询客户C100023最近的会话") has one only when the request names it (``lookup_start_time`` /
``lookup_end_time``), so "the latest" means the latest, however old.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from tether.pack import PlannerQuestion
from tether.packs.finance_cs import vocabulary as words
from tether.packs.finance_cs.periods import date_range, fmt
from tether.packs.finance_cs.vocabulary import LINE_NAMES, LINE_NAMES_EN

__all__ = ["LINE_NAMES", "date_range", "extract", "language"]

ANALYSIS_WORDS = ("分析", "报告", "趋势", "analy", "report")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_TOP = re.compile(r"(?:(?<![提之以])前|top\s*)(\d{1,3})(?![天日周月年号])", re.I)
_ROWS = re.compile(r"(?<![\d.a-z])(\d{1,3})\s*(?:条|conversations|sessions)", re.I)  # 最近的10条: rows to show


_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
# 各业务线 / 每个渠道 / 哪个渠道最多 / by channel: counts per group, which a look-up does not do
_PER_GROUP = re.compile(
    r"(?:各|每个|每条|每一?个|哪个|哪条|哪些|分)(?:业务线|业务|渠道|客户等级|等级)|"
    r"按(?:业务线|业务|渠道|客户等级|等级)(?:统计|汇总|分组|分别|计数|排名|排序)|"
    r"\b(?:by|per|each|which)\s+(?:channel|business line|line|tier)",
    re.I,
)


def language(text: str) -> str:
    """The language to answer in: Chinese unless the question is mostly English words
    ("show me app conversations about 手续费" is English with a Chinese keyword)."""
    return "zh" if len(_CJK.findall(text)) >= len(_LATIN_WORD.findall(text)) else "en"


def _first(texts: list[str], find: Any) -> Any:
    """The value found in the newest text that has one (the latest message first)."""
    for text in texts:
        value = find(text)
        if value not in (None, [], ""):
            return value
    return None


def _cannot(term: str, lang: str) -> PlannerQuestion:
    """An honest refusal for a business line the data does not hold, naming what can be asked."""
    if lang == "en":
        lines = ", ".join(LINE_NAMES_EN.values())
        return PlannerQuestion(
            f"I can't answer that offline: the conversations hold no business line “{term}”. "
            f"I can: count, list or sample conversations by business line ({lines}), channel (app, web, "
            "phone, WeChat), customer id, customer tier, period and topic keyword, and analyse a business "
            "line's conversations into a report."
        )
    lines = "、".join(LINE_NAMES.values())
    return PlannerQuestion(
        f"我离线回答不了这个问题：会话数据里没有“{term}”这条业务线。"
        f"我可以：按业务线（{lines}）、渠道（手机银行、网银、电话、微信）、客户编号、客户等级、时间和关键词"
        "统计、列出或抽样会话，也可以分析一条业务线的会话并生成报告。"
    )


def _cannot_group(lang: str) -> PlannerQuestion:
    if lang == "en":
        return PlannerQuestion(
            "I can't answer that offline: counting conversations per business line, channel or tier is "
            "not something the look-up does. I can: count, list or sample the conversations of one business "
            "line, channel, tier or customer (ask once per group), or analyse a business line's conversations "
            "split by channel or tier (e.g. “analyse forex conversations, by channel”)."
        )
    return PlannerQuestion(
        "我离线回答不了这个问题：查询不能按业务线、渠道或等级分组统计。"
        "我可以：统计、列出或抽样某一条业务线、某个渠道、某个等级或某位客户的会话（每组问一次），"
        "也可以分析一条业务线的会话并按渠道或客户等级拆分（如“分析外汇业务的客服问题，按渠道拆分”）。"
    )


def _ask_line(query: str) -> PlannerQuestion:
    odd = words.unknown_line(query)
    choices = "、".join(f"{cn}（{key}）" for key, cn in LINE_NAMES.items())
    lead = f"“{odd}”不是支持的业务线。" if odd else "我无法确定要分析哪条业务线。"
    return PlannerQuestion(
        f"{lead}请指明其中之一：{choices}。(I could not tell which business line to analyse; choose one of the above.)"
    )


def _top(text: str) -> int | None:
    m = _TOP.search(text) or _ROWS.search(text)
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


def extract(query: str, context: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now()
    texts = [query, *reversed([str(p) for p in context.get("_previous") or []])]
    line = _first(texts, words.business_line) or context.get("businessLine")
    wants_analysis = any(w in " ".join(texts).lower() for w in ANALYSIS_WORDS)
    if line is None and wants_analysis:
        raise _ask_line(query)
    if line is None and (odd := words.unknown_line(query)):
        raise _cannot(odd, language(query))
    if not wants_analysis and _PER_GROUP.search(query):
        raise _cannot_group(language(query))
    period = _first(texts, lambda t: date_range(t, now))
    start, end = period or (fmt(now - timedelta(days=30)), fmt(now))
    split: list[str] = []
    for text in texts:
        if "按渠道" in text or "by channel" in text.lower():
            split.append("channel")
        if any(w in text for w in ("按客户等级", "按等级", "按客户层级", "按客群")) or "by tier" in text.lower():
            split.append("tier")
    return {
        "business_line": line,
        "channel": _first(texts, words.channel) or context.get("channel"),
        "customer_id": _first(texts, words.customer_id) or context.get("customerId"),
        "customer_tier": _first(texts, words.tier),
        "start_time": start,
        "end_time": end,
        "period_defaulted": period is None,
        "lookup_start_time": period[0] if period else None,
        "lookup_end_time": period[1] if period else None,
        "top_n": _first(texts, _top) or 20,
        "split_by": sorted(set(split)),
        "keywords": _first(texts, words.topics) or [],
        "language": language(query),
    }
