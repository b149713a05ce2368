"""The eval tests share one seeded template (``var/eval`` of the checkout, or TETHER_EVAL_WORK):
seeded by a real server start the first time a day, then only copied per trial."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.evals.runner import RunConfig, Runner
from tether.evals.tasks import Task, load_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def eval_work() -> Path:
    return Path(os.environ.get("TETHER_EVAL_WORK") or ROOT / "var" / "eval")


def tasks_from(tmp_path: Path, text: str, suite: str = "erp") -> list[Task]:
    path = tmp_path / suite / "tasks.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return load_file(path, suite)


def run(work: Path, tasks: list[Task], model: str = "planner", trials: int = 1, concurrency: int = 2) -> dict:
    config = RunConfig(suite="test", model=model, trials=trials, concurrency=concurrency, work_root=work)
    return Runner(config).run(tasks)


def by_task(report: dict) -> dict[str, dict]:
    return {r["task"]: r for r in report["results"]}
