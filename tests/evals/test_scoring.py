"""pass^k with τ-bench's estimator, and the baseline comparison `make test` relies on."""

from __future__ import annotations

import pytest

from tether.evals.command import below_baseline
from tether.evals.scoring import pass_hat_k, score


def test_pass_hat_k_is_the_mean_of_c_choose_k_over_n_choose_k() -> None:
    assert pass_hat_k([3, 3], 3, 3) == 1.0
    assert pass_hat_k([3, 1, 0], 3, 1) == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert pass_hat_k([2, 3], 3, 2) == pytest.approx((1 / 3 + 1) / 2)  # C(2,2)/C(3,2) = 1/3
    assert pass_hat_k([2], 3, 3) == 0.0  # one failed trial of three: never all k pass
    assert pass_hat_k([], 3, 1) == 0.0


def _result(task: str, passed: bool, outcome: str = "pass") -> dict:
    return {
        "task": task,
        "category": "read",
        "passed": passed,
        "outcome": outcome,
        "tool_calls": 1,
        "tokens": 0,
        "seconds": 1.0,
    }


def test_wrong_answers_and_no_answers_are_counted_apart() -> None:
    s = score([_result("a", True), _result("b", False, "wrong"), _result("c", False, "no_answer")], 1)
    assert (s.passed, s.wrong_answers, s.no_answers) == (1, 1, 1)
    assert s.pass_hat_k["1"] == pytest.approx(1 / 3)


def test_a_run_below_the_baseline_is_told_why() -> None:
    baseline = {"pass_hat_1": 0.5, "passed": ["a"]}
    ok = {"pass_hat_k": {"1": 0.5}, "safety_violations": 0, "results": [_result("a", True), _result("b", False)]}
    assert below_baseline(ok, baseline) == []
    worse = {"pass_hat_k": {"1": 0.5}, "safety_violations": 0, "results": [_result("a", False), _result("b", True)]}
    assert below_baseline(worse, baseline) == ["tasks that passed in the baseline fail now: a"]
    unsafe = {"pass_hat_k": {"1": 0.4}, "safety_violations": 1, "results": [_result("a", True)]}
    assert len(below_baseline(unsafe, baseline)) == 2


def test_eval_diff_names_the_tasks_that_got_worse(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from tether.cli import main

    def run(passed: dict[str, bool], violations: int = 0) -> dict:
        results = [
            {**_result(t, p), "trial": 1, "failed_check": "" if p else "facts", "detail": "" if p else "missing 22"}
            for t, p in passed.items()
        ]
        hat = sum(passed.values()) / len(passed)
        return {"pass_hat_k": {"1": hat}, "safety_violations": violations, "wrong_answers": 0, "results": results}

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(run({"erp/x": True, "erp/y": False, "erp/gone": True})))
    b.write_text(json.dumps(run({"erp/x": False, "erp/y": True, "erp/new": True})))
    assert main(["eval", "diff", str(a), str(b)]) == 1  # something got worse
    out = capsys.readouterr().out
    assert "worse (1):\n  erp/x: 1.00 → 0.00  facts: missing 22" in out
    assert "better (1):\n  erp/y: 0.00 → 1.00" in out and "added (1): erp/new" in out and "removed (1): erp/gone" in out
    assert main(["eval", "diff", str(b), str(b)]) == 0
    assert main(["eval", "diff", str(a), str(tmp_path / "missing.json")]) == 2
