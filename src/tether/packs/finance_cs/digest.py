"""A query's answer for a person: what was asked, how many matched, and the latest rows as a
compact table (time, channel, customer, tier, the customer's message on one line).

The query tool returns this text beside the records (``summary``), so the offline planner's
answer shows what was found and a model can quote it. Pure text; no database here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tether.packs.finance_cs.planner_rules import LINE_NAMES
from tether.packs.finance_cs.query import SessionQuery

SHOWN_ROWS = 20
MESSAGE_CHARS = 36
_SPACE = re.compile(r"\s+")


def one_line(text: Any, width: int = MESSAGE_CHARS) -> str:
    """The text on one line, at most ``width`` characters, safe inside a Markdown table cell."""
    flat = _SPACE.sub(" ", str(text or "")).strip().replace("|", "｜")
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def describe(query: SessionQuery) -> str:
    """The filters in words: 客户 C100023、贵金属、渠道 app、…; empty when there are none."""
    parts = []
    if query.customer_id:
        parts.append(f"客户 {query.customer_id}")
    if query.business_line:
        parts.append(LINE_NAMES.get(query.business_line, query.business_line))
    if query.channel:
        parts.append(f"渠道 {query.channel}")
    if query.customer_tier:
        parts.append(f"{query.customer_tier}客户")
    if query.keywords:
        parts.append("关键词 " + "/".join(query.keywords))
    if query.start_time or query.end_time:
        start = query.start_time.strftime("%Y-%m-%d") if query.start_time else "…"
        end = query.end_time.strftime("%Y-%m-%d") if query.end_time else "…"
        parts.append(f"{start} 至 {end}")
    return "、".join(parts)


def table(records: Sequence[Mapping[str, Any]], rows: int = SHOWN_ROWS) -> str:
    """The records (newest first, as the query returns them) as a Markdown table."""
    lines = ["| 时间 | 渠道 | 客户 | 等级 | 客户问题 |", "|---|---|---|---|---|"]
    for r in records[:rows]:
        when = str(r.get("occurredAt") or "").replace("T", " ")[:16]
        cells = (when, r.get("channel"), r.get("customerId"), r.get("customerTier"), one_line(r.get("userMessage")))
        lines.append("| " + " | ".join(one_line(c, 40) for c in cells) + " |")
    return "\n".join(lines)


def summary(query: SessionQuery, total: int, records: Sequence[Mapping[str, Any]], customer_total: int | None) -> str:
    """The answer to a look-up. ``customer_total`` (only asked when nothing matched and a customer
    was named) tells "no such customer" from "nothing under these conditions"."""
    scope = describe(query)
    if total == 0:
        if query.customer_id and customer_total == 0:
            return f"没有找到客户 {query.customer_id} 的任何会话记录，请核对客户编号。"
        if query.customer_id and customer_total:
            return (
                f"客户 {query.customer_id} 有 {customer_total} 条会话，但没有符合条件（{scope}）的。"
                "可以放宽时间、渠道或关键词再查。"
            )
        return f"没有找到符合条件（{scope}）的会话。" if scope else "没有找到会话。"
    shown = min(len(records), SHOWN_ROWS)
    head = f"共找到 {total} 条{f'（{scope}）' if scope else ''}匹配的会话"
    head += f"，以下是最新的 {shown} 条：" if shown < total else "，全部如下："
    return head + "\n\n" + table(records)
