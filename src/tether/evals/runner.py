"""The runner: every task × trial on its own fresh copy of the seeded data, through a real server
(the ERP over HTTP, as in production), driven by the simulated person, then checked — safety,
reads, facts, end state against the task's reference run — and scored. Trials run ``concurrency``
at a time, each with its own server process.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from tether.evals import safety, tryton_site, tryton_state
from tether.evals.checks import judge
from tether.evals.models import USAGE_FILE
from tether.evals.oracles import render, run_query, variables
from tether.evals.person import Conversation, Person
from tether.evals.scoring import by_category, by_suite, score
from tether.evals.state import Snapshot, compare, known_ids, snapshot
from tether.evals.tasks import Task, TaskError, bind, load_suite
from tether.evals.tryton_site import TrytonSite
from tether.evals.tryton_state import TrytonState
from tether.evals.workspace import ServerProcess, Workspace, Zygote
from tether.tryton.server import start_trytond

MAX_CONTENT = 4000  # characters of one transcript message kept in the results


@dataclass(slots=True)
class RunConfig:
    suite: str = "all"
    model: str = "planner"
    trials: int = 1
    concurrency: int = 1
    pattern: str | None = None
    fast: bool = False
    tasks_root: Path = Path("evals")
    work_root: Path = Path("var/eval")
    keep: bool = False  # keep each trial's folder (databases, server log) for a look afterwards
    secrets: list[str] = field(default_factory=list)  # credentials that must never be stored (the model's key)
    tryton_dir: Path | None = None  # a database `tether tryton prepare` built (default: prepared under work_root)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name)


def _reference_calls(task: Task) -> list[dict[str, Any]]:
    return [dict(r) for r in task.reference]


def _write_forms(task: Task) -> set[str]:
    return {str((r.get("args") or {}).get("form_id")) for r in task.reference}


class Progress:
    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.done, self.passed, self.out = total, 0, 0, out
        self.lock = threading.Lock()
        self.started = time.monotonic()

    def tick(self, passed: bool) -> None:
        with self.lock:
            self.done += 1
            self.passed += passed
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            elapsed = time.monotonic() - self.started
            self.out.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} trials, "
                f"{self.passed} passed, {elapsed:.0f}s"
            )
            if self.done == self.total:
                self.out.write("\n")
            self.out.flush()


class Runner:
    def __init__(self, config: RunConfig, out: TextIO = sys.stderr) -> None:
        self.config = config
        self.out = out
        self.workspace = Workspace(config.work_root)
        self.before = Snapshot()
        self.ids: set[str] = set()
        self.expected: dict[str, Snapshot] = {}
        self.zygote: Zygote | None = None
        self.tryton: TrytonSite | None = None
        self.tryton_before: dict[str, str] = {}
        self.tryton_state: TrytonState | None = None

    def run(self, tasks: list[Task] | None = None) -> dict[str, Any]:
        cfg = self.config
        tasks = tasks if tasks is not None else load_suite(cfg.tasks_root, cfg.suite, cfg.pattern, cfg.fast)
        tasks = self._with_tryton(tasks)
        started = time.monotonic()
        self.out.write(f"preparing the seeded data under {self.workspace.root} (once a day)…\n")
        self.out.flush()
        template = self.workspace.prepare()
        erp_db, tether_db = template / "var" / "erp.db", template / "var" / "tether.db"
        self.ids = known_ids(erp_db)
        self.before = snapshot(erp_db, tether_db, self.ids)
        tasks = [self._bound(t, template / "var") for t in tasks]
        self.zygote = Zygote()
        prepared = time.monotonic() - started
        try:
            results = self._all_trials(tasks)
        finally:
            self.zygote.close()
            if not cfg.keep:
                shutil.rmtree(self.workspace.root / "trials" / self.workspace.run_id, ignore_errors=True)
        results.sort(key=lambda r: (r["task"], r["trial"]))
        wall = time.monotonic() - started
        return self._report(tasks, results, wall, prepared)

    def _with_tryton(self, tasks: list[Task]) -> list[Task]:
        """Prepare Tryton when a task runs on it. Without Tryton installed, ``--suite all`` leaves
        the Tryton tasks out (and says so); a run that names them fails with what to install."""
        on_tryton = [t for t in tasks if t.erp == "tryton"]
        if not on_tryton:
            return tasks
        if not tryton_site.available():
            if self.config.suite != "all":
                raise TaskError(tryton_site.MISSING)
            self.out.write(f"left out {len(on_tryton)} Tryton tasks: {tryton_site.MISSING}\n")
            return [t for t in tasks if t.erp != "tryton"]
        cfg = self.config
        try:
            self.tryton = (
                TrytonSite.at(cfg.tryton_dir) if cfg.tryton_dir else TrytonSite.prepare(cfg.work_root, self.out)
            )
        except RuntimeError as exc:
            raise TaskError(str(exc)) from None
        self.tryton_before = tryton_site.digest(self.tryton.sqlite)
        self.tryton_state = TrytonState(self.tryton.sqlite)
        return tasks

    def _all_trials(self, tasks: list[Task]) -> list[dict[str, Any]]:
        cfg = self.config
        with ThreadPoolExecutor(max_workers=max(1, cfg.concurrency)) as pool:
            refs = {pool.submit(self._reference, t): t for t in tasks if t.reference}
            for future in as_completed(refs):
                self.expected[refs[future].id] = future.result()
            progress = Progress(len(tasks) * cfg.trials, self.out)
            jobs = [pool.submit(self._trial, t, k, progress.tick) for t in tasks for k in range(1, cfg.trials + 1)]
            return [j.result() for j in jobs]

    def _report(self, tasks: list[Task], results: list[dict[str, Any]], wall: float, prepared: float) -> dict[str, Any]:
        cfg = self.config
        overall = score(results, cfg.trials)
        agent = sum(r["seconds"] for r in results)
        overhead = sum(r["overhead_s"] for r in results)
        return {
            "suite": cfg.suite,
            "model": cfg.model,
            "trials": cfg.trials,
            "tasks": len(tasks),
            "passed": overall.passed,
            "pass_hat_k": overall.to_json()["pass_hat_k"],
            "safety_violations": overall.safety_violations,
            "wrong_answers": overall.wrong_answers,
            "no_answers": overall.no_answers,
            "overall": overall.to_json(),
            "by_category": {c: s.to_json() for c, s in by_category(results, cfg.trials).items()},
            "by_suite": {name: s.to_json() for name, s in by_suite(results, cfg.trials).items()},
            "cost": {
                "wall_s": round(wall, 1),
                "prepare_s": round(prepared, 1),
                "concurrency": cfg.concurrency,
                "tasks_per_minute": round(len(results) / wall * 60, 2) if wall else 0.0,
                "agent_s": round(agent, 1),
                "outside_agent_s": round(overhead, 1),
                "outside_agent_share": round(overhead / (agent + overhead), 3) if agent + overhead else 0.0,
            },
            "results": results,
        }

    def _bound(self, task: Task, data: Path) -> Task:
        """The task with its variables filled in: the day's dates and its ``vars`` read from the
        template (the ERP's, or the finance data's for a query written ``finance: SELECT …``)."""
        values = variables(task.user)
        dbs = self._dbs(task, data)
        for name, query in (task.vars or {}).items():
            db, _, sql = query.partition(":") if query.startswith("finance:") else ("erp", "", query)
            rows = run_query(dbs[db], render(sql, values))
            if not rows or rows[0][0] is None:
                raise TaskError(f"{task.id}: vars.{name} found nothing in the seeded data: {query}")
            values[name] = str(rows[0][0])
        bound = bind(task, values)
        if self.tryton is not None and task.erp == "tryton":
            try:
                reference = tuple(self.tryton.on_form_id(call) for call in bound.reference)
                bound = replace(bound, forms=self.tryton.form_ids(bound.forms), reference=reference)
            except ValueError as exc:
                raise TaskError(f"{task.id}: forms: {exc}") from None
        return bound

    def _dbs(self, task: Task, data: Path) -> dict[str, Path]:
        """The databases a task's facts read: on Tryton, the ERP's is Tryton's own SQLite file."""
        erp = data / "erp.db"
        if task.erp == "tryton" and self.tryton is not None:
            erp = data / "tryton" / self.tryton.sqlite.name if (data / "tryton").is_dir() else self.tryton.sqlite
        return {"erp": erp, "finance": data / "finance.db"}

    def _reference(self, task: Task) -> Snapshot:
        """The end state the task's reference action list leaves on a fresh copy."""
        workdir = self.workspace.copy(f"ref-{_safe(task.id)}")
        calls = workdir / "reference.json"
        calls.write_text(json.dumps(_reference_calls(task), ensure_ascii=False), encoding="utf-8")
        if task.erp == "tryton":
            return self._tryton_reference(task, workdir, f"reference:{calls}")
        server = ServerProcess(workdir, f"reference:{calls}", zygote=self.zygote).start()
        person = Person(server.url, task, _write_forms(task))
        try:
            person.converse()
        finally:
            person.close()
            server.stop()
        snap = snapshot(workdir / "var" / "erp.db", workdir / "var" / "tether.db", self.ids)
        if not self.config.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        return snap

    def _trial(self, task: Task, trial: int, tick: Callable[[bool], None]) -> dict[str, Any]:
        record: dict[str, Any] = {
            "task": task.id,
            "trial": trial,
            "category": task.category,
            "passed": False,
            "failed_check": "",
            "detail": "",
            "outcome": "fail",
            "tool_calls": 0,
            "rounds": 0,
            "tokens": 0,
            "seconds": 0.0,
            "overhead_s": 0.0,
            "session_id": "",
            "question": task.turns[0].say,
            "answer": "",
            "transcript": [],
            "diff": {},
            "safety": [],
        }
        t0 = time.monotonic()
        workdir = self.workspace.copy(f"{_safe(task.id)}-{trial}")
        try:
            self._run_trial(task, workdir, record, t0)
        except Exception as exc:  # a trial that could not run is a failed trial, said why
            record.update(failed_check="error", detail=f"{type(exc).__name__}: {exc}"[:2000], outcome="fail")
        finally:
            if not self.config.keep:
                shutil.rmtree(workdir, ignore_errors=True)
        record["overhead_s"] = round(time.monotonic() - t0 - record["seconds"], 3)
        tick(bool(record["passed"]))
        return record

    def _run_trial(self, task: Task, workdir: Path, record: dict[str, Any], t0: float) -> None:
        if task.erp == "tryton":
            self._run_tryton_trial(task, workdir, record)
            return
        server = ServerProcess(workdir, self.config.model, zygote=self.zygote).start()
        person = Person(server.url, task, _write_forms(task))
        started = time.monotonic()
        try:
            talk = person.converse()
        finally:
            record["seconds"] = round(time.monotonic() - started, 3)
            person.close()
            server.stop()
        self._judge(task, workdir, talk, record)

    def _run_tryton_trial(self, task: Task, workdir: Path, record: dict[str, Any]) -> None:
        talk = self._tryton_talk(task, workdir, self.config.model, record)
        self._judge_tryton(task, workdir, talk, record)

    def _tryton_reference(self, task: Task, workdir: Path, model: str) -> Snapshot:
        """The rows the task's reference action list leaves in a fresh copy of Tryton's database."""
        assert self.tryton is not None and self.tryton_state is not None
        try:
            self._tryton_talk(task, workdir, model, {})
            sqlite = self._dbs(task, workdir / "var")["erp"]
            return self.tryton_state.snapshot(
                sqlite, tryton_state.changed(tryton_site.digest(sqlite), self.tryton_before)
            )
        finally:
            if not self.config.keep:
                shutil.rmtree(workdir, ignore_errors=True)

    def _tryton_talk(self, task: Task, workdir: Path, model: str, record: dict[str, Any]) -> Conversation:
        """A fresh copy of the prepared Tryton database, its own trytond started while the tether
        server pointed at it starts (trytond loads its modules meanwhile), then the conversation."""
        assert self.tryton is not None
        began = time.monotonic()
        settings = self.tryton.copy(workdir / "var" / "tryton")
        starter = ThreadPoolExecutor(max_workers=1)
        trytond = starter.submit(start_trytond, settings)
        env = {**tryton_site.trial_env(settings), **self._adversary_env()}
        server: ServerProcess | None = None
        try:
            server = ServerProcess(workdir, model, env=env, zygote=self.zygote).start()
            rpc_url = trytond.result().rpc_url
            record["startup_s"] = round(time.monotonic() - began, 3)  # the copy, trytond and tether ready
            person = Person(server.url, task, _write_forms(task), tryton_rpc=rpc_url)
            started = time.monotonic()
            try:
                talk = person.converse()
            finally:
                record["seconds"] = round(time.monotonic() - started, 3)
                person.close()
        finally:
            if server is not None:
                server.stop()
            with contextlib.suppress(Exception):  # a trytond that did not start has nothing to stop
                trytond.result().stop()
            starter.shutdown()
        return talk

    def _adversary_env(self) -> dict[str, str]:
        """The adversarial model asks for every Tryton form, the ungranted ones included."""
        ids = sorted(self.tryton.model_ids.values()) if self.tryton is not None else []
        return {"TETHER_EVAL_ADVERSARY_FORMS": ",".join(ids)} if self.config.model == "adversarial" else {}

    def _judge(self, task: Task, workdir: Path, talk: Conversation, record: dict[str, Any]) -> None:
        dbs = {"erp": workdir / "var" / "erp.db", "finance": workdir / "var" / "finance.db"}
        tether_db = workdir / "var" / "tether.db"
        usage = json.loads((workdir / USAGE_FILE).read_text()) if (workdir / USAGE_FILE).exists() else {}
        after = snapshot(dbs["erp"], tether_db, self.ids)
        violations = safety.check(
            workdir=workdir,
            erp_db=dbs["erp"],
            tether_db=tether_db,
            user=task.user,
            session=talk.session,
            events=talk.events,
            confirmed=talk.confirmed,
            secrets=[*talk.tokens, *self.config.secrets],
            before=self.before,
            after=after,
            # from the trial's own data: a bill the run made may take a number the other brand has
            markers=safety.forbidden_markers(dbs["erp"], task.user),
        )
        expected = self.expected.get(task.id, self.before)
        state = compare(after, expected)
        verdict = judge(task, talk, dbs, variables(task.user), violations, state, int(usage.get("rounds", 0)))
        self._record(record, talk, verdict, violations, usage)

    def _judge_tryton(self, task: Task, workdir: Path, talk: Conversation, record: dict[str, Any]) -> None:
        assert self.tryton is not None
        dbs = self._dbs(task, workdir / "var")
        usage = json.loads((workdir / USAGE_FILE).read_text()) if (workdir / USAGE_FILE).exists() else {}
        after = tryton_site.digest(dbs["erp"])
        changed = tryton_state.changed(after, self.tryton_before)
        hidden = self.tryton.hidden_forms(task.user)
        violations = safety.check_tryton(
            workdir=workdir,
            tether_db=workdir / "var" / "tether.db",
            session=talk.session,
            events=talk.events,
            confirmed=talk.confirmed,
            secrets=[*talk.tokens, *self.config.secrets],
            changed_tables=sorted(changed),
            hidden_forms=hidden,
            markers=safety.tryton_markers(dbs["erp"], set(hidden.values())),
        )
        state = None
        if task.writes and self.tryton_state is not None:  # a read's "no change" is the safety check's
            expected = self.expected.get(task.id)
            tables = changed | {t.removeprefix("tryton.") for t in (expected.tables if expected else {})}
            state = compare(
                self.tryton_state.snapshot(dbs["erp"], tables), self.tryton_state.expected(expected, tables)
            )
        verdict = judge(task, talk, dbs, variables(task.user), violations, state, int(usage.get("rounds", 0)))
        self._record(record, talk, verdict, violations, usage)

    def _record(
        self, record: dict[str, Any], talk: Conversation, verdict: Any, violations: list[Any], usage: dict[str, Any]
    ) -> None:
        transcript = [
            {**m, "content": str(m.get("content") or "")[:MAX_CONTENT]} for m in talk.session.get("transcript") or []
        ]
        record.update(
            passed=verdict.passed,
            failed_check=verdict.failed_check,
            detail=verdict.detail,
            outcome=verdict.outcome,
            tool_calls=len(talk.session.get("executedSteps") or []),
            rounds=int(usage.get("rounds", 0)),
            tokens=int(usage.get("tokens", 0)),
            session_id=talk.session_id,
            answer=next(
                (m["content"] for m in reversed(transcript) if m.get("role") == "assistant" and m.get("content")), ""
            ),
            transcript=transcript,
            diff=verdict.diff,
            safety=[{"kind": v.kind, "detail": v.detail} for v in violations],
            replays=talk.replays,
        )
