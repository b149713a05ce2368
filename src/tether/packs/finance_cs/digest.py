"""A query's answer for a person: the filters and period applied, how many matched, and the
latest rows as a compact table (time, channel, customer, tier, the customer's message on one
line) — in Chinese, or in English when the question was English (``language="en"``).

The query tool returns this text beside the records (``summary``), so the offline planner's
answer shows what was found and a model can quote it. Pure text; no database here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tether.packs.finance_cs.query import SessionQuery, parse_query
from tether.packs.finance_cs.vocabulary import LINE_NAMES, LINE_NAMES_EN, TIER_NAMES_EN

SHOWN_ROWS = 20
MESSAGE_CHARS = 36
_SPACE = re.compile(r"\s+")


def one_line(text: Any, width: int = MESSAGE_CHARS) -> str:
    """The text on one line, at most ``width`` characters, safe inside a Markdown table cell."""
    flat = _SPACE.sub(" ", str(text or "")).strip().replace("|", "｜")
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _period(query: SessionQuery, language: str) -> str:
    if not (query.start_time or query.end_time):
        return "all time" if language == "en" else "不限时间"
    start = query.start_time.strftime("%Y-%m-%d") if query.start_time else "…"
    end = query.end_time.strftime("%Y-%m-%d") if query.end_time else "…"
    return f"{start} to {end}" if language == "en" else f"{start} 至 {end}"


def describe(query: SessionQuery, language: str = "zh") -> str:
    """The filters and the period in words: 客户 C100023、贵金属、渠道 app、…、不限时间."""
    en = language == "en"
    parts = []
    if query.customer_id:
        parts.append(f"customer {query.customer_id}" if en else f"客户 {query.customer_id}")
    if query.business_line:
        names = LINE_NAMES_EN if en else LINE_NAMES
        parts.append(names.get(query.business_line, query.business_line))
    if query.channel:
        parts.append(f"channel {query.channel}" if en else f"渠道 {query.channel}")
    if query.customer_tier:
        tier = query.customer_tier
        parts.append(f"{TIER_NAMES_EN.get(tier, tier)} customers" if en else f"{tier}客户")
    if query.keywords:
        parts.append(("keywords " if en else "关键词 ") + "/".join(query.keywords))
    parts.append(_period(query, language))
    return (", " if en else "、").join(parts)


HEADS = {
    "zh": "| 时间 | 渠道 | 客户 | 等级 | 客户问题 |",
    "en": "| Time | Channel | Customer | Tier | Customer's message |",
}


def scope_words(filters: Mapping[str, Any] | None, language: str = "zh") -> str:
    """A stored handle's or analysis' filters (camelCase JSON; ``splitBy`` ignored) in words."""
    query = {k: v for k, v in (filters or {}).items() if k not in ("splitBy", "limit", "title")}
    return describe(parse_query(query), language)


def table(records: Sequence[Mapping[str, Any]], rows: int = SHOWN_ROWS, language: str = "zh") -> str:
    """The records (newest first, as the query returns them) as a Markdown table."""
    lines = [HEADS.get(language, HEADS["zh"]), "|---|---|---|---|---|"]
    for r in records[:rows]:
        when = str(r.get("occurredAt") or "").replace("T", " ")[:16]
        cells = (when, r.get("channel"), r.get("customerId"), r.get("customerTier"), one_line(r.get("userMessage")))
        lines.append("| " + " | ".join(one_line(c, 40) for c in cells) + " |")
    return "\n".join(lines)


def summary(
    query: SessionQuery,
    total: int,
    records: Sequence[Mapping[str, Any]],
    customer_total: int | None,
    language: str = "zh",
) -> str:
    """The answer to a look-up, the filters and period applied first. ``customer_total`` (only
    asked when nothing matched and a customer was named) tells "no such customer" from "nothing
    under these conditions"."""
    if language == "en":
        return _summary_en(query, total, records, customer_total)
    scope = describe(query)
    if total == 0:
        if query.customer_id and customer_total == 0:
            return f"没有找到客户 {query.customer_id} 的任何会话记录，请核对客户编号。"
        if query.customer_id and customer_total:
            return (
                f"客户 {query.customer_id} 有 {customer_total} 条会话，但没有符合条件（{scope}）的。"
                "可以放宽时间、渠道或关键词再查。"
            )
        return f"没有找到符合条件（{scope}）的会话。"
    shown = min(len(records), SHOWN_ROWS)
    head = f"共找到 {total} 条（{scope}）匹配的会话"
    head += f"，以下是最新的 {shown} 条：" if shown < total else "，全部如下："
    return head + "\n\n" + table(records)


def _summary_en(
    query: SessionQuery, total: int, records: Sequence[Mapping[str, Any]], customer_total: int | None
) -> str:
    scope = describe(query, "en")
    if total == 0:
        if query.customer_id and customer_total == 0:
            return f"No conversations of customer {query.customer_id} found; please check the customer id."
        if query.customer_id and customer_total:
            return (
                f"Customer {query.customer_id} has {customer_total} conversations, but none matching ({scope}). "
                "Try a wider period, another channel or fewer keywords."
            )
        return f"No conversations found matching ({scope})."
    shown = min(len(records), SHOWN_ROWS)
    head = f"Found {total} conversations ({scope})"
    head += f"; the latest {shown}:" if shown < total else "; all of them:"
    return head + "\n\n" + table(records, language="en")
