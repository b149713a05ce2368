"""``tether eval run | diff``: the command line of the eval harness (docs/evals.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

BASELINE = Path("evals/baseline.json")
CHECKOUT_SUITES = Path(__file__).resolve().parents[3] / "evals"  # src/tether/evals/command.py in a checkout


def suites_folder(given: str | None) -> Path | None:
    """Where the suites are: ``--tasks-root``; else ``./evals``; else the checkout this package was
    installed from (``uv sync`` installs it in place), so the command works from any folder."""
    if given is not None:
        return Path(given) if Path(given).is_dir() else None
    for folder in (Path("evals"), CHECKOUT_SUITES):
        if folder.is_dir() and any(child.is_dir() for child in folder.iterdir()):
            return folder
    return None


def _baseline_of(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "suite": report["suite"],
        "model": report["model"],
        "tasks": sorted({r["task"] for r in report["results"]}),
        "pass_hat_1": report["pass_hat_k"]["1"],
        "passed": sorted({r["task"] for r in report["results"] if r["passed"]}),
    }


def below_baseline(report: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
    """Why ``report`` falls short of ``baseline`` (empty: it does not)."""
    problems = []
    if report["safety_violations"]:
        problems.append(f"{report['safety_violations']} safety violations")
    if float(report["pass_hat_k"]["1"]) < float(baseline["pass_hat_1"]) - 1e-9:
        problems.append(f"pass^1 {report['pass_hat_k']['1']} is below the baseline's {baseline['pass_hat_1']}")
    now_failing = sorted(set(baseline.get("passed", [])) - {r["task"] for r in report["results"] if r["passed"]})
    if now_failing:
        problems.append("tasks that passed in the baseline fail now: " + ", ".join(now_failing))
    return problems


def cmd_run(args: argparse.Namespace) -> int:
    from tether.evals.report import html_page, table
    from tether.evals.runner import RunConfig, Runner
    from tether.evals.tasks import TaskError

    root = suites_folder(args.tasks_root)
    if root is None:
        where = args.tasks_root or "evals"
        print(
            f"tether eval: no task suites at {where}/: run it in the tether checkout (where evals/ is), "
            "or pass --tasks-root with the folder of the suites",
            file=sys.stderr,
        )
        return 2
    key = os.environ.get("TETHER_MODEL_API_KEY", "")
    config = RunConfig(
        suite=args.suite,
        model=args.model,
        trials=args.trials,
        concurrency=args.concurrency,
        pattern=args.tasks,
        fast=args.fast,
        tasks_root=root,
        work_root=Path(args.work),
        keep=args.keep,
        secrets=[key] if key else [],
    )
    try:
        report = Runner(config).run()
    except TaskError as e:
        print(f"tether eval: {e}", file=sys.stderr)
        return 2
    print(table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        print(f"results: {args.json}")
    if args.report:
        Path(args.report).write_text(html_page(report), encoding="utf-8")
        print(f"report: {args.report}")
    if args.record_baseline:
        Path(args.record_baseline).write_text(json.dumps(_baseline_of(report), ensure_ascii=False, indent=1) + "\n")
        print(f"baseline recorded: {args.record_baseline}")
    if args.baseline:
        problems = below_baseline(report, json.loads(Path(args.baseline).read_text(encoding="utf-8")))
        for p in problems:
            print(f"below the baseline: {p}", file=sys.stderr)
        return 1 if problems else 0
    return 1 if report["safety_violations"] else 0


def cmd_diff(args: argparse.Namespace) -> int:
    from tether.evals.diff import diff, render

    try:
        a, b = (json.loads(Path(p).read_text(encoding="utf-8")) for p in (args.a, args.b))
    except (OSError, ValueError) as e:
        print(f"tether eval diff: cannot read the runs: {e}", file=sys.stderr)
        return 2
    d = diff(a, b)
    print(render(d, args.a, args.b))
    return 1 if d["worse"] or d["safety_violations"][1] > d["safety_violations"][0] else 0


def add_parser(sub: Any) -> None:
    ev = sub.add_parser("eval", help="measure the agent on task suites (docs/evals.md)")
    esub = ev.add_subparsers(dest="action", required=True)
    run = esub.add_parser("run", help="run a suite: every task on a fresh copy of the seeded data, checked and scored")
    run.add_argument(
        "--suite",
        default="all",
        help="erp | finance | held-out | tryton | all (a folder under --tasks-root; all leaves tryton out without trytond)",
    )
    run.add_argument(
        "--model", default="planner", help="planner | openai (TETHER_MODEL_* settings) | adversarial | module:factory"
    )
    run.add_argument("--trials", type=int, default=1, help="trials per task (pass^1 … pass^K)")
    run.add_argument("--concurrency", type=int, default=2, help="trials at a time, each with its own server")
    run.add_argument("--tasks", help="a glob over task ids, e.g. 'erp/read-*'")
    run.add_argument("--fast", action="store_true", help="only the tasks marked fast (the `make test` subset)")
    run.add_argument("--json", help="write the results as JSON here")
    run.add_argument("--report", help="write the HTML report here")
    run.add_argument("--baseline", help="exit 1 when the run falls below this recorded baseline")
    run.add_argument("--record-baseline", help="record this run as the baseline here (e.g. evals/baseline.json)")
    run.add_argument(
        "--tasks-root", default=None, help="the folder of the suites (default: ./evals, else the checkout's evals/)"
    )
    run.add_argument("--work", default="var/eval", help="where the seeded template and the trials' copies live")
    run.add_argument("--keep", action="store_true", help="keep each trial's folder (databases, server log)")
    run.set_defaults(fn=cmd_run)
    d = esub.add_parser("diff", help="which tasks changed between two runs' --json files")
    d.add_argument("a")
    d.add_argument("b")
    d.set_defaults(fn=cmd_diff)
