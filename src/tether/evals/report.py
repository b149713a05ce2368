"""What a run shows: the table (per category and overall: pass^1…pass^k, safety violations, wrong
answers, no answers, mean tool calls, tokens, seconds), the JSON a later ``tether eval diff``
reads, and one HTML page a person reads — the table, a chart of pass^k by category, and every
failure with its transcript and end-state diff. The page is self-contained (no script, no CDN)
and escapes everything it shows: transcripts hold the seeded hostile text.
"""

from __future__ import annotations

import html
import json
from typing import Any

COLUMNS = ("category", "tasks", "trials")


def table(report: dict[str, Any]) -> str:
    k = int(report["trials"])
    heads = [
        "category",
        "tasks",
        *[f"pass^{i}" for i in range(1, k + 1)],
        "safety",
        "wrong",
        "no answer",
        "tools",
        "tokens",
        "s",
    ]
    rows = [[c, *_cells(s, k)] for c, s in report["by_category"].items()]
    rows.append(["ALL", *_cells(report["overall"], k)])
    widths = [max(len(str(r[i])) for r in [heads, *rows]) for i in range(len(heads))]
    lines = [
        "  ".join(
            str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [heads, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(len(lines) - 1, "  ".join("-" * w for w in widths))
    cost = report["cost"]
    lines.append(
        f"\n{report['model']} on {report['suite']}: {report['tasks']} tasks × {k} trials, "
        f"{cost['wall_s']}s ({cost['tasks_per_minute']} trials/min at concurrency {cost['concurrency']}; "
        f"{cost['outside_agent_share']:.0%} of trial time outside the agent)"
    )
    suites = report.get("by_suite") or {}
    if len(suites) > 1:
        shown = (f"{name} {s['passed']} of {s['tasks'] * s['trials']} trials" for name, s in suites.items())
        lines.append("by suite: " + ", ".join(shown))
    return "\n".join(lines)


def _cells(score: dict[str, Any], k: int) -> list[Any]:
    hats = score["pass_hat_k"]
    return [
        score["tasks"],
        *[f"{hats.get(str(i), 0.0):.3f}" for i in range(1, k + 1)],
        score["safety_violations"],
        score["wrong_answers"],
        score["no_answers"],
        f"{score['mean_tool_calls']:.1f}",
        f"{score['mean_tokens']:.0f}",
        f"{score['mean_seconds']:.2f}",
    ]


CSS = """
body{font:14px/1.45 system-ui,"Noto Sans CJK SC","WenQuanYi Micro Hei",sans-serif;margin:2rem auto;max-width:1100px;color:#1d1d1f;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #d0d0d5;padding:.25rem .55rem;text-align:right}th:first-child,td:first-child{text-align:left}
th{background:#f2f2f5}.bad{color:#b00020;font-weight:600}.ok{color:#0a7d32;font-weight:600}
details{border:1px solid #d0d0d5;border-radius:6px;margin:.5rem 0;padding:.4rem .7rem}summary{cursor:pointer}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f9;padding:.5rem;border-radius:4px;max-height:28rem;overflow:auto}
.msg{margin:.3rem 0}.role{font-weight:600;display:inline-block;min-width:5.5rem}.legend span{margin-right:1rem}
"""
PALETTE = ("#2b6cb0", "#68a0d8", "#a9c9ec", "#d4e4f6", "#eef4fb")


def _chart(report: dict[str, Any]) -> str:
    """Horizontal bars: pass^1…pass^k per category (SVG, one group per category)."""
    k = int(report["trials"])
    cats = [*report["by_category"].items(), ("ALL", report["overall"])]
    bar, gap, left, width = 12, 10, 150, 520
    height = len(cats) * (k * bar + gap) + 30
    parts = [f'<svg role="img" aria-label="pass^k by category" width="{left + width + 60}" height="{height}">']
    y = 10
    for name, s in cats:
        parts.append(f'<text x="0" y="{y + k * bar / 2 + 4}" font-size="12">{html.escape(name)}</text>')
        for i in range(1, k + 1):
            v = float(s["pass_hat_k"].get(str(i), 0.0))
            color = PALETTE[min(i - 1, len(PALETTE) - 1)]
            parts.append(
                f'<rect x="{left}" y="{y}" width="{v * width:.1f}" height="{bar - 2}" fill="{color}"><title>pass^{i} {v:.3f}</title></rect>'
            )
            parts.append(f'<text x="{left + v * width + 4:.1f}" y="{y + bar - 3}" font-size="10">{v:.2f}</text>')
            y += bar
        y += gap
    parts.append("</svg>")
    legend = "".join(f'<span><b style="color:{PALETTE[min(i - 1, 4)]}">■</b> pass^{i}</span>' for i in range(1, k + 1))
    return "".join(parts) + f'<div class="legend">{legend}</div>'


def _score_table(report: dict[str, Any]) -> str:
    k = int(report["trials"])
    heads = [
        "category",
        "tasks",
        *[f"pass^{i}" for i in range(1, k + 1)],
        "safety violations",
        "wrong answers",
        "no answers",
        "tool calls",
        "tokens",
        "seconds",
    ]
    out = ["<table><tr>", *[f"<th>{html.escape(h)}</th>" for h in heads], "</tr>"]
    for name, s in [*report["by_category"].items(), ("ALL", report["overall"])]:
        cells = _cells(s, k)
        cells[k + 1] = f'<span class="{"bad" if s["safety_violations"] else "ok"}">{s["safety_violations"]}</span>'
        out.append(f"<tr><td>{html.escape(name)}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _transcript(messages: list[dict[str, Any]]) -> str:
    out = []
    for m in messages:
        if m.get("role") == "system":
            continue
        calls = m.get("tool_calls") or []
        body = str(m.get("content") or "")
        if calls:
            body += "\n" + "\n".join(
                f"→ {c.get('function', {}).get('name')}({c.get('function', {}).get('arguments')})" for c in calls
            )
        out.append(
            f'<div class="msg"><span class="role">{html.escape(str(m.get("role")))}</span><pre>{html.escape(body.strip())}</pre></div>'
        )
    return "".join(out)


def _failure(r: dict[str, Any]) -> str:
    head = (
        f"<summary><b>{html.escape(r['task'])}</b> #{r['trial']} — {html.escape(r['failed_check'])} "
        f"({html.escape(r.get('outcome', ''))}): {html.escape(r['detail'][:240])}</summary>"
    )
    parts = [
        head,
        f"<p>question: {html.escape(r.get('question') or '')} · session {html.escape(r['session_id'])} · "
        f"{r['tool_calls']} tool calls, {r['rounds']} rounds, {r['seconds']}s</p>",
    ]
    if r.get("safety"):
        parts.append(
            "<h4>safety</h4><pre>" + html.escape(json.dumps(r["safety"], ensure_ascii=False, indent=1)) + "</pre>"
        )
    if r.get("diff"):
        parts.append(
            "<h4>end-state diff (trial vs reference)</h4><pre>"
            + html.escape(json.dumps(r["diff"], ensure_ascii=False, indent=1, default=str))
            + "</pre>"
        )
    parts.append("<h4>transcript</h4>" + _transcript(r.get("transcript") or []))
    return "<details>" + "".join(parts) + "</details>"


def html_page(report: dict[str, Any]) -> str:
    failures = [r for r in report["results"] if not r["passed"]]
    title = f"tether eval — {report['model']} on {report['suite']}"
    cost = report["cost"]
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>{report['tasks']} tasks × {report['trials']} trials · {report['passed']} trials passed · "
        f'safety violations: <b class="{"bad" if report["safety_violations"] else "ok"}">{report["safety_violations"]}</b> · '
        f"wrong answers {report['wrong_answers']} · no answers {report['no_answers']} · {cost['wall_s']}s</p>"
        f"<h2>Scores</h2>{_score_table(report)}<h2>pass^k by category</h2>{_chart(report)}"
        f"<h2>Failures ({len(failures)})</h2>" + "".join(_failure(r) for r in failures) + "</body></html>"
    )
