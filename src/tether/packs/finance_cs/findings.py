"""The headline findings of an analysis, in words (Chinese, plain text, unescaped): the change
against the previous period, what sets the slice apart (its distinctive terms), the top keywords
with the terms left out named, the terms rising in the last 7 days, and the channel that carries
the lead term beside how usual that channel is. The answer of the analysis job (``worker``), the
report tool's result and the report's 主要发现 (``report``) all read them from here. Pure
functions over an ``analysis.analyze`` result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.packs.finance_cs.contrast import MIN_G2, log_likelihood

RISING_RATIO = 1.5
REFERENCES = (("previous", "上一周期"), ("rest", "同期其他会话"))
EXCLUDED_SHOWN = 0.1  # a left-out term is named in the findings when this share of the slice mentions it


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "0%"


def lead_keyword(analysis: Mapping[str, Any]) -> str | None:
    """The term the channel split is shown for: the most distinctive one the splits count, else the
    top keyword that is not a channel name (“app” says little about channels)."""
    channels = {str(g["group"]).lower() for g in analysis.get("byChannel") or []}
    names = [k["keyword"] for k in analysis.get("keywords") or []]
    counted = set(names)
    distinct = [d["keyword"] for d in analysis.get("distinctive") or [] if d["keyword"] in counted]
    plain = [n for n in names if n.lower() not in channels]
    return next(iter(distinct + plain + names), None)


def previous_finding(analysis: Mapping[str, Any]) -> str | None:
    """The slice against the same filters one period earlier, in words (None without one)."""
    previous = (analysis.get("contrast") or {}).get("previous")
    if not previous:
        return None
    before, now = previous["documents"], analysis.get("documents", 0)
    if not before:
        change = "上一周期没有匹配的会话"
    elif now < before:  # "0.5 倍" reads as growth at a glance; a fall is said as one
        change = f"比上一周期减少 {1 - now / before:.0%}"
    else:
        change = f"为上一周期的 {now / before:.1f} 倍"
    return (
        f"与上一周期（{str(previous['start'])[:10]} 至 {str(previous['end'])[:10]}）相比：匹配会话 {before} → "
        f"{now} 条，{change}"
    )


def _against(term: Mapping[str, Any]) -> str:
    """保证金 93%（上一周期 5%，同期其他 5%）: the term's share here and in each reference."""
    parts = [f"{label.removesuffix('会话')} {term[key]['share']:.0%}" for key, label in REFERENCES if term.get(key)]
    return f"{term['keyword']} {term['share']:.0%}（" + "，".join(parts) + "）"


def findings(analysis: Mapping[str, Any], top: int = 5, scope: str = "") -> list[str]:
    """Plain-text headline findings (unescaped): the change against the previous period, what
    distinguishes the slice (lift against the previous period and the rest of the period), the
    top keywords (without the terms that define the slice), rising terms, the leading channel.
    ``scope`` (the filters in words) is named when nothing matched them."""
    keywords = analysis.get("keywords") or []
    lines = [line for line in (previous_finding(analysis),) if line]
    if not keywords:
        if not analysis.get("documents") and scope:
            return [f"没有符合条件（{scope}）的会话，无从分析：可以放宽时间、渠道或关键词再试。", *lines]
        return ["没有可分析的会话。", *lines]
    distinct = analysis.get("distinctive") or []
    refs = "及".join(
        label for key, label in REFERENCES if ((analysis.get("contrast") or {}).get(key) or {}).get("documents")
    )
    if distinct:
        lines.append(
            f"突出问题（会话占比，对比{refs}，按提升度排序）：" + "、".join(_against(d) for d in distinct[:top])
        )
    elif refs:
        lines.append(f"突出问题：与{refs}相比，没有占比明显更高的词（会话较少时，差异难以与偶然区分）")
    left_out = [e for e in analysis.get("excluded") or [] if e["share"] >= EXCLUDED_SHOWN]
    note = (
        "，不计查询条件与渠道、业务线名称：" + "、".join(f"{e['keyword']} {e['share']:.0%}" for e in left_out)
        if left_out
        else ""
    )
    lines.append(
        f"高频关键词（按 TF-IDF 得分{note}）："
        + "、".join(f"{k['keyword']}（{k['documents']}条，{k['share']:.0%}）" for k in keywords[:top])
    )
    rising = rising_terms(analysis)
    if rising:
        lines.append(
            "最近7天明显上升（提及会话占比，此前 → 最近7天）："
            + "、".join(f"{kw}（{before:.0%} → {recent:.0%}）" for kw, before, recent in rising)
        )
    first = lead_keyword(analysis) or keywords[0]["keyword"]
    channels = analysis.get("byChannel") or []
    if channels:
        lead = max(channels, key=lambda c: (c["keywords"].get(first, 0), c["group"]))
        mentions = sum(c["keywords"].get(first, 0) for c in channels)
        rest = ((analysis.get("contrast") or {}).get("rest") or {}).get("byChannel") or {}
        # how common the channel is anyway: 70 % from the app says little if the app carries 70 % of all
        usual = (
            f"；同期其他会话中 {lead['group']} 占{_pct(rest.get(lead['group'], 0), sum(rest.values()))}" if rest else ""
        )
        lines.append(
            f"“{first}”相关会话主要来自 {lead['group']} 渠道"
            f"（{lead['keywords'].get(first, 0)}条，占{_pct(lead['keywords'].get(first, 0), mentions)}{usual}）"
        )
    return lines


def rising_terms(analysis: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """(term, share before, share in the last 7 days) for the trended terms whose share of the
    conversations rose at least ``RISING_RATIO`` times in the last 7 days, beyond chance (G²).
    Shares, not daily counts: when the whole slice grows, every term's daily count grows with it."""
    trend = analysis.get("trend") or {}
    documents = trend.get("documents") or []
    recent_n, before_n = sum(documents[-7:]), sum(documents[:-7])
    if not recent_n or not before_n:
        return []
    out = []
    for term, series in (trend.get("series") or {}).items():
        recent, before = sum(series[-7:]), sum(series[:-7])
        lift = recent / recent_n >= RISING_RATIO * before / before_n
        if recent and lift and log_likelihood(recent, recent_n, before, before_n) >= MIN_G2:
            out.append((term, before / before_n, recent / recent_n))
    return out
