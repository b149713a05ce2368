"""Keyword reports from an ``analysis.analyze`` result: Markdown and a standalone HTML page.

Pure functions returning strings. The HTML page is self-contained: inline CSS and inline SVG
charts (top keywords, daily trend, channel split); no script, no CDN, no external asset. Every
piece of text that comes from data (keywords, quotes, channel names, the title) is escaped, in
the HTML and in the Markdown alike, so a customer message cannot inject markup.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tether.pack import InvalidInput
from tether.packs.finance_cs.contrast import LINE_NAMES, REASONS
from tether.packs.finance_cs.digest import scope_words
from tether.packs.finance_cs.findings import REFERENCES, findings, lead_keyword

DEFAULT_TITLE = "客服问题关键词分析报告"
PALETTE = ("#2f6fdf", "#e4572e", "#29a36a", "#f2a541", "#8e5ad8", "#17a2b8", "#b0413e", "#6c757d")
FONT = "'PingFang SC','Microsoft YaHei','Noto Sans CJK SC',sans-serif"
METHOD = (  # the analysis' own ``method`` says the same in English, for clients of the API
    "jieba 精确模式分词（金融词典、停用词）；关键词按 TF-IDF（提及会话占比 × jieba 参考 IDF），"
    "不计查询关键词与渠道、业务线名称；突出问题对比上一周期与同期其他会话，按 占比 × log2(提升度) 排序，"
    "提升度至少 1.5 倍且经对数似然检验（p < 0.01）。"
)

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def _h(value: Any) -> str:
    return html.escape(str(value), quote=True)


def md_escape(value: Any) -> str:
    """Text made inert in Markdown: HTML metacharacters become entities, markup is backslashed."""
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\n", " ")


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "0%"


SCOPE_LABELS = {
    "keywords": "查询关键词",
    "businessLine": "业务线",
    "channel": "渠道",
    "customerTier": "客户等级",
    "customerId": "客户",
    "splitBy": "拆分维度",
}
SPLIT_LABELS = {"channel": "渠道", "tier": "客户等级", "customer_channel": "渠道", "customer_tier": "客户等级"}


def _line_name(code: Any) -> str:
    return LINE_NAMES.get(str(code), (str(code),))[0]


def default_title(scope: Mapping[str, Any] | None) -> str:
    """The report's title when none was given: what was analysed (贵金属 · 规则调整 客服问题关键词分析报告)."""
    scope = scope or {}
    parts = [_line_name(scope["businessLine"])] if scope.get("businessLine") else []
    parts += [f"{scope['channel']} 渠道"] if scope.get("channel") else []
    parts += [f"{scope['customerTier']}客户"] if scope.get("customerTier") else []
    parts += ["、".join(map(str, scope["keywords"]))] if scope.get("keywords") else []
    return " · ".join(parts) + " " + DEFAULT_TITLE if parts else DEFAULT_TITLE


def _moment(value: Any) -> str:
    return str(value).replace("T", " ")[:16] if value else "…"


def _scope_value(key: str, value: Any) -> str:
    if key == "businessLine":
        return f"{_line_name(value)}（{value}）"
    items = [value] if isinstance(value, str) or not isinstance(value, Sequence) else list(value)
    if key == "splitBy":
        items = [SPLIT_LABELS.get(str(v), str(v)) for v in items]
    return "、".join(str(v) for v in items)


def _scope(analysis: Mapping[str, Any], scope: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The report's header rows, in the reader's words: how many conversations, their dates, and
    the query that chose them (its keys labelled in Chinese, its times as 2026-11-04 17:51)."""
    period = analysis.get("period") or {}
    days = f"{period['start']} 至 {period['end']}" if period.get("start") else "—"
    rows = [("会话数", str(analysis.get("documents", 0))), ("会话日期", days)]
    given = {k: v for k, v in (scope or {}).items() if v not in (None, "", [], ())}
    start, end = given.pop("startTime", None), given.pop("endTime", None)
    if start or end:
        rows.append(("查询时间", f"{_moment(start)} 至 {_moment(end)}"))
    rows.extend((SCOPE_LABELS.get(k, str(k)), _scope_value(k, v)) for k, v in given.items() if k != "title")
    return rows


def _findings(analysis: Mapping[str, Any], scope: Mapping[str, Any] | None) -> list[str]:
    """The findings; an empty analysis names the filters that matched nothing."""
    try:
        words = scope_words(scope) if scope else ""
    except InvalidInput:  # a scope that is not a query's filters (a hand-made one): no words
        words = ""
    return findings(analysis, scope=words)


def render_markdown(
    analysis: Mapping[str, Any], title: str = DEFAULT_TITLE, scope: Mapping[str, Any] | None = None
) -> str:
    """The report as Markdown; ``scope`` (e.g. the query filters) is listed under the title."""
    out = [f"# {md_escape(title)}", ""]
    out += [f"- **{md_escape(k)}**：{md_escape(v)}" for k, v in _scope(analysis, scope)]
    out += ["", "## 主要发现", ""] + [f"- {md_escape(line)}" for line in _findings(analysis, scope)]
    keywords = analysis.get("keywords") or []
    distinct = analysis.get("distinctive") or []
    if distinct:
        out += ["", "## 突出问题", "", _distinct_caption(analysis), ""]
        head, *rows = _distinct_rows(analysis, distinct)
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *(_md_row(cells) for cells in rows)]
    out += ["", "## 高频关键词", "", "| # | 关键词 | 会话数 | 占比 | 得分 |", "|---|---|---|---|---|"]
    out += [
        f"| {i} | {md_escape(k['keyword'])} | {k['documents']} | {k['share']:.1%} | {k['score']:.3f} |"
        for i, k in enumerate(keywords, 1)
    ]
    if analysis.get("excluded"):
        out += ["", md_escape(_excluded_note(analysis))]
    for heading, key in (("渠道分布", "byChannel"), ("客户等级分布", "byTier")):
        out += ["", f"## {heading}", "", *_split_table_md(analysis.get(key) or [], keywords[:5])]
    pairs = analysis.get("cooccurrence") or []
    if pairs:
        out += ["", "## 关键词共现", "", "| 关键词 A | 关键词 B | 共同出现会话数 | Jaccard |", "|---|---|---|---|"]
        out += [
            f"| {md_escape(p['a'])} | {md_escape(p['b'])} | {p['documents']} | {p['jaccard']:.2f} |" for p in pairs[:10]
        ]
    out += ["", "## 代表性原话", ""]
    for kw, quotes in (analysis.get("quotes") or {}).items():
        out += [f"### {md_escape(kw)}", ""]
        for q in quotes:
            meta = f"{q.get('occurredAt')} · {q.get('channel')} · {q.get('customerTier')} · {q.get('sessionCode')}"
            out += [f"> {md_escape(q.get('text', ''))}", ">", f"> — {md_escape(meta)}", ""]
    out += ["", f"_方法：{md_escape(METHOD)}_", ""]
    return "\n".join(out)


def _distinct_caption(analysis: Mapping[str, Any]) -> str:
    refs = "、".join(label for key, label in REFERENCES if (analysis.get("contrast") or {}).get(key))
    return (
        f"与{refs}相比占比明显更高的词（提升度：本次占比 ÷ 对照占比，取各对照中较小者；"
        "按 占比 × log2(提升度) 排序，差异经对数似然检验 p < 0.01）"
    )


def _distinct_rows(analysis: Mapping[str, Any], distinct: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """The distinctive terms as table rows, a header row first (cells unescaped)."""
    refs = [(key, label) for key, label in REFERENCES if (analysis.get("contrast") or {}).get(key)]
    rows = [["#", "关键词", "会话数", "占比", *(label + "占比" for _, label in refs), "提升度"]]
    for i, d in enumerate(distinct, 1):
        against = [f"{d[key]['share']:.1%}" if d.get(key) else "—" for key, _ in refs]
        rows.append([str(i), d["keyword"], str(d["documents"]), f"{d['share']:.1%}", *against, f"×{d['lift']:.1f}"])
    return rows


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(md_escape(c) for c in cells) + " |"


def _excluded_note(analysis: Mapping[str, Any]) -> str:
    terms = "、".join(
        f"{e['keyword']}（{REASONS.get(e['reason'], e['reason'])}，{e['documents']}条）"
        for e in analysis.get("excluded") or []
    )
    return f"未计入关键词（只复述查询条件或来源）：{terms}"


def _split_table_md(groups: Sequence[Mapping[str, Any]], keywords: Sequence[Mapping[str, Any]]) -> list[str]:
    names = [k["keyword"] for k in keywords]
    head = "| 分组 | 会话数 | " + " | ".join(md_escape(n) for n in names) + " |"
    rule = "|---|---|" + "---|" * len(names)
    rows = [
        f"| {md_escape(g['group'])} | {g['documents']} | "
        + " | ".join(f"{g['keywords'].get(n, 0)} ({_pct(g['keywords'].get(n, 0), g['documents'])})" for n in names)
        + " |"
        for g in groups
    ]
    return [head, rule, *rows]


def bar_chart_svg(items: Sequence[tuple[str, float]], title: str, width: int = 640) -> str:
    """A horizontal bar chart of (label, value) pairs, largest value spanning the plot."""
    bar, gap, left, top = 20, 6, 130, 30
    height = top + len(items) * (bar + gap) + 10
    peak = max((v for _, v in items), default=0) or 1
    plot = width - left - 60
    parts = [_svg_open(width, height, title), f'<text x="8" y="18" class="t">{_h(title)}</text>']
    for i, (label, value) in enumerate(items):
        y = top + i * (bar + gap)
        length = max(value / peak * plot, 1)
        parts += [
            f'<text x="{left - 8}" y="{y + 15}" text-anchor="end">{_h(label)}</text>',
            f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{bar}" fill="{PALETTE[0]}" rx="3"/>',
            f'<text x="{left + length + 6:.1f}" y="{y + 15}">{_h(_num(value))}</text>',
        ]
    return "".join(parts) + "</svg>"


def line_chart_svg(
    days: Sequence[str], series: Mapping[str, Sequence[float]], title: str, width: int = 640, height: int = 260
) -> str:
    """Daily counts as one polyline per series, with first/middle/last dates and the peak marked."""
    left, right, top, bottom = 40, 110, 30, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((max(v, default=0) for v in series.values()), default=0) or 1
    step = plot_w / max(len(days) - 1, 1)
    parts = [
        _svg_open(width, height, title),
        f'<text x="8" y="18" class="t">{_h(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#999"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#999"/>',
        f'<text x="{left - 4}" y="{top + 10}" text-anchor="end">{_h(_num(peak))}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end">0</text>',
    ]
    for index in sorted({0, len(days) // 2, len(days) - 1}) if days else []:
        x = left + index * step
        parts.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle">{_h(days[index])}</text>')
    for n, (name, values) in enumerate(series.items()):
        color = PALETTE[n % len(PALETTE)]
        points = " ".join(f"{left + i * step:.1f},{top + plot_h - v / peak * plot_h:.1f}" for i, v in enumerate(values))
        parts += [
            f'<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{points}"/>',
            f'<rect x="{width - right + 10}" y="{top + n * 18}" width="10" height="10" fill="{color}"/>',
            f'<text x="{width - right + 26}" y="{top + n * 18 + 10}">{_h(name)}</text>',
        ]
    return "".join(parts) + "</svg>"


def channel_chart_svg(groups: Sequence[Mapping[str, Any]], keyword: str | None, title: str, width: int = 640) -> str:
    """Conversations per channel (light bar) and those mentioning ``keyword`` (dark overlay)."""
    bar, gap, left, top = 22, 8, 90, 48
    height = top + len(groups) * (bar + gap) + 10
    peak = max((g["documents"] for g in groups), default=0) or 1
    plot = width - left - 120
    parts = [_svg_open(width, height, title), f'<text x="8" y="18" class="t">{_h(title)}</text>']
    parts += [
        f'<rect x="{left}" y="26" width="10" height="10" fill="#c9d8f5"/>',
        f'<text x="{left + 14}" y="35">全部会话</text>',
    ]
    if keyword:
        parts += [
            f'<rect x="{left + 90}" y="26" width="10" height="10" fill="{PALETTE[1]}"/>',
            f'<text x="{left + 104}" y="35">提及“{_h(keyword)}”</text>',
        ]
    for i, group in enumerate(groups):
        y = top + i * (bar + gap)
        total = group["documents"]
        hits = group["keywords"].get(keyword, 0) if keyword else 0
        parts += [
            f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{_h(group["group"])}</text>',
            f'<rect x="{left}" y="{y}" width="{max(total / peak * plot, 1):.1f}" height="{bar}" fill="#c9d8f5" rx="3"/>',
            f'<rect x="{left}" y="{y}" width="{hits / peak * plot:.1f}" height="{bar}" fill="{PALETTE[1]}" rx="3"/>',
            f'<text x="{left + total / peak * plot + 6:.1f}" y="{y + 16}">{total}（{_h(_pct(hits, total))}）</text>',
        ]
    return "".join(parts) + "</svg>"


def _svg_open(width: int, height: int, title: str) -> str:
    return (
        f'<svg class="chart" role="img" aria-label="{_h(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="{FONT}" font-size="12">'
    )


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


_CSS = (
    "body{font-family:"
    + FONT.replace("'", '"')
    + """;max-width:920px;margin:24px auto;padding:0 16px;color:#222;line-height:1.6}
h1{font-size:24px;border-bottom:2px solid #2f6fdf;padding-bottom:6px}h2{font-size:18px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ddd;padding:4px 8px}
th{background:#f3f6fb}blockquote{margin:8px 0;padding:6px 12px;border-left:4px solid #c9d8f5;background:#fafbfe}
.meta{color:#777;font-size:12px}.chart{display:block;margin:12px 0}.chart .t{font-size:14px;font-weight:bold}
"""
)


def render_html(analysis: Mapping[str, Any], title: str = DEFAULT_TITLE, scope: Mapping[str, Any] | None = None) -> str:
    """The report as one standalone HTML page with inline SVG charts."""
    keywords = analysis.get("keywords") or []
    trend = analysis.get("trend") or {}
    series = dict(list((trend.get("series") or {}).items())[:5])
    top_kw = lead_keyword(analysis)
    body = [f"<h1>{_h(title)}</h1>", "<table>"]
    body += [f"<tr><th>{_h(k)}</th><td>{_h(v)}</td></tr>" for k, v in _scope(analysis, scope)]
    body += ["</table>", "<h2>主要发现</h2><ul>"] + [f"<li>{_h(line)}</li>" for line in _findings(analysis, scope)]
    body.append("</ul>")
    distinct = analysis.get("distinctive") or []
    if distinct:
        head, *rows = _distinct_rows(analysis, distinct)
        body += ["<h2>突出问题</h2>", f'<p class="meta">{_h(_distinct_caption(analysis))}</p>', "<table>"]
        body.append("<tr>" + "".join(f"<th>{_h(c)}</th>" for c in head) + "</tr>")
        body += ["<tr>" + "".join(f"<td>{_h(c)}</td>" for c in cells) + "</tr>" for cells in rows]
        body.append("</table>")
    body.append("<h2>高频关键词</h2>")
    body.append(bar_chart_svg([(k["keyword"], k["documents"]) for k in keywords[:15]], "提及会话数（按得分排序）"))
    if analysis.get("excluded"):
        body.append(f'<p class="meta">{_h(_excluded_note(analysis))}</p>')
    body += ["<h2>每日趋势</h2>", line_chart_svg(trend.get("days") or [], series, "每日提及会话数")]
    body += ["<h2>渠道分布</h2>", channel_chart_svg(analysis.get("byChannel") or [], top_kw, "各渠道会话数")]
    body += ["<h2>客户等级分布</h2>", _split_table_html(analysis.get("byTier") or [], keywords[:5])]
    pairs = analysis.get("cooccurrence") or []
    if pairs:
        body.append(
            "<h2>关键词共现</h2><table><tr><th>关键词 A</th><th>关键词 B</th><th>会话数</th><th>Jaccard</th></tr>"
        )
        body += [
            f"<tr><td>{_h(p['a'])}</td><td>{_h(p['b'])}</td><td>{p['documents']}</td><td>{p['jaccard']:.2f}</td></tr>"
            for p in pairs[:10]
        ]
        body.append("</table>")
    body.append("<h2>代表性原话</h2>")
    for kw, quotes in (analysis.get("quotes") or {}).items():
        body.append(f"<h3>{_h(kw)}</h3>")
        for q in quotes:
            meta = f"{q.get('occurredAt')} · {q.get('channel')} · {q.get('customerTier')} · {q.get('sessionCode')}"
            body.append(f'<blockquote>{_h(q.get("text", ""))}<div class="meta">{_h(meta)}</div></blockquote>')
    body.append(f'<p class="meta">方法：{_h(METHOD)}</p>')
    return (
        '<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_h(title)}</title><style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _split_table_html(groups: Sequence[Mapping[str, Any]], keywords: Sequence[Mapping[str, Any]]) -> str:
    names = [k["keyword"] for k in keywords]
    head = "<tr><th>分组</th><th>会话数</th>" + "".join(f"<th>{_h(n)}</th>" for n in names) + "</tr>"
    rows = [
        f"<tr><td>{_h(g['group'])}</td><td>{g['documents']}</td>"
        + "".join(
            f"<td>{g['keywords'].get(n, 0)}（{_pct(g['keywords'].get(n, 0), g['documents'])}）</td>" for n in names
        )
        + "</tr>"
        for g in groups
    ]
    return "<table>" + head + "".join(rows) + "</table>"
