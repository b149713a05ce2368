"""Scores: pass^k with τ-bench's estimator — for each task, C(successes, k) / C(trials, k), the
chance that k trials drawn from its n all pass; the mean over tasks — overall and per category,
beside the safety violations, wrong answers (a read that used another form or a filter the
question did not hold, or carried wrong facts) and no-answers (the agent said it could not).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from math import comb
from typing import Any


def pass_hat_k(successes: list[int], trials: int, k: int) -> float:
    """Mean over tasks of C(c, k) / C(n, k); ``successes`` holds each task's c out of n = ``trials``."""
    if not successes or k > trials:
        return 0.0
    return sum(comb(c, k) / comb(trials, k) for c in successes) / len(successes)


@dataclass(frozen=True, slots=True)
class Score:
    tasks: int
    trials: int
    passed: int  # trials passed
    pass_hat_k: dict[str, float]
    safety_violations: int
    wrong_answers: int
    no_answers: int
    tool_calls: float  # mean per trial
    tokens: float
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "trials": self.trials,
            "passed": self.passed,
            "pass_hat_k": {k: round(v, 4) for k, v in self.pass_hat_k.items()},
            "safety_violations": self.safety_violations,
            "wrong_answers": self.wrong_answers,
            "no_answers": self.no_answers,
            "mean_tool_calls": round(self.tool_calls, 2),
            "mean_tokens": round(self.tokens, 1),
            "mean_seconds": round(self.seconds, 2),
        }


def score(results: list[dict[str, Any]], trials: int) -> Score:
    by_task: dict[str, int] = defaultdict(int)
    for r in results:
        by_task[r["task"]] += bool(r["passed"])
    n = max(len(results), 1)
    return Score(
        tasks=len(by_task),
        trials=trials,
        passed=sum(bool(r["passed"]) for r in results),
        pass_hat_k={str(k): pass_hat_k(list(by_task.values()), trials, k) for k in range(1, trials + 1)},
        safety_violations=sum(len(r.get("safety") or []) for r in results),
        wrong_answers=sum(r.get("outcome") == "wrong" for r in results),
        no_answers=sum(r.get("outcome") == "no_answer" for r in results),
        tool_calls=sum(r["tool_calls"] for r in results) / n,
        tokens=sum(r["tokens"] for r in results) / n,
        seconds=sum(r["seconds"] for r in results) / n,
    )


def by_category(results: list[dict[str, Any]], trials: int) -> dict[str, Score]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        groups[r["category"]].append(r)
    return {c: score(rs, trials) for c, rs in sorted(groups.items())}


def by_suite(results: list[dict[str, Any]], trials: int) -> dict[str, Score]:
    """Per suite (a task id's part before ``/``): the erp and tryton suites share categories."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        groups[str(r["task"]).split("/", 1)[0]].append(r)
    return {name: score(rs, trials) for name, rs in sorted(groups.items())}
