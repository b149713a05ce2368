"""``tether eval diff A.json B.json``: which tasks changed between two runs (a model upgrade, a
prompt change, a new planner) — the regression baseline seed 003 §13 asks for. A task's score in
a run is its share of passed trials; the diff lists the tasks that got worse, better, appeared or
went, and the change of every pass^k and of the safety and wrong-answer counts.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def task_scores(report: dict[str, Any]) -> dict[str, float]:
    passed: dict[str, list[bool]] = defaultdict(list)
    for r in report["results"]:
        passed[r["task"]].append(bool(r["passed"]))
    return {t: sum(p) / len(p) for t, p in passed.items()}


def diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    sa, sb = task_scores(a), task_scores(b)
    failed_b = {r["task"]: f"{r['failed_check']}: {r['detail'][:160]}" for r in b["results"] if not r["passed"]}
    return {
        "worse": sorted((t, sa[t], sb[t], failed_b.get(t, "")) for t in sa.keys() & sb.keys() if sb[t] < sa[t]),
        "better": sorted((t, sa[t], sb[t], "") for t in sa.keys() & sb.keys() if sb[t] > sa[t]),
        "added": sorted(sb.keys() - sa.keys()),
        "removed": sorted(sa.keys() - sb.keys()),
        "pass_hat_k": {
            k: (a["pass_hat_k"].get(k), b["pass_hat_k"].get(k))
            for k in sorted(a["pass_hat_k"].keys() | b["pass_hat_k"].keys())
        },
        "safety_violations": (a["safety_violations"], b["safety_violations"]),
        "wrong_answers": (a.get("wrong_answers", 0), b.get("wrong_answers", 0)),
    }


def render(d: dict[str, Any], name_a: str, name_b: str) -> str:
    lines = [f"{name_a} → {name_b}"]
    for k, (x, y) in d["pass_hat_k"].items():
        lines.append(f"  pass^{k}: {x} → {y}")
    lines.append(f"  safety violations: {d['safety_violations'][0]} → {d['safety_violations'][1]}")
    lines.append(f"  wrong answers: {d['wrong_answers'][0]} → {d['wrong_answers'][1]}")
    for title in ("worse", "better"):
        lines.append(f"{title} ({len(d[title])}):")
        lines += [f"  {t}: {x:.2f} → {y:.2f}  {why}".rstrip() for t, x, y, why in d[title]]
    for title in ("added", "removed"):
        if d[title]:
            lines.append(f"{title} ({len(d[title])}): " + ", ".join(d[title]))
    return "\n".join(lines)
