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
