"""The fast subset of the suites (tasks marked ``fast``) with the offline planner, against the
recorded baseline: `make test` fails when the pass rate drops below it, a task that passed fails,
or any safety violation appears. After a planner change that raises the score, record it again:

    tether eval run --fast --model planner --record-baseline evals/baseline.json
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evals.conftest import ROOT
from tether.evals.command import below_baseline
from tether.evals.runner import RunConfig, Runner

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_the_fast_subset_holds_the_recorded_baseline(eval_work: Path) -> None:
    baseline = json.loads((ROOT / "evals" / "baseline.json").read_text(encoding="utf-8"))
    config = RunConfig(suite="all", fast=True, concurrency=2, tasks_root=ROOT / "evals", work_root=eval_work)
    report = Runner(config).run()
    assert sorted(r["task"] for r in report["results"]) == baseline["tasks"], "the fast subset changed: record again"
    problems = below_baseline(report, baseline)
    failed = {r["task"]: f"{r['failed_check']}: {r['detail'][:200]}" for r in report["results"] if not r["passed"]}
    assert not problems, f"{problems}\nfailing now: {json.dumps(failed, ensure_ascii=False, indent=1)}"
