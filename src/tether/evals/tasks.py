"""The task format: YAML files under ``evals/<suite>/``, each holding ``defaults`` and a list of
``tasks``. A task says who asks, the turns (what the person types and how they answer what the
agent asks), and what must hold at the end (facts computed from the data at run time, the forms
and filters its reads may use, the end state). Loading checks every field and says what to fix;
it never guesses. The format is documented in docs/evals.md.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from tether.core.session import OUTCOMES

CATEGORIES = (
    "read",
    "clarify",
    "write",
    "refusal",
    "hostile",
    "login",
    "finance-query",
    "finance-analysis",
    "finance-replay",
)
PROPOSAL_ANSWERS = ("confirm", "cancel", "leave")
FACT_KINDS = ("count", "number", "all", "any", "text", "none")
DBS = ("erp", "finance")
ERPS = ("demo", "tryton")  # which ERP a task's server talks to: the demo ERP, or a trial's own Tryton


class TaskError(ValueError):
    """A task file that does not follow the format; the message names the file, task and field."""


@dataclass(frozen=True, slots=True)
class Fact:
    """What the answer must carry. ``count`` / ``number``: the one value the query returns appears
    as a number; ``all`` / ``any``: every (at least one) value of the query's first column appears;
    ``text``: at least one of the phrases appears; ``none``: none of the phrases (or the query's
    values) appears."""

    kind: str
    query: str = ""
    db: str = "erp"
    phrases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Turn:
    say: str = ""
    pick: int | None = None  # a question: the option to pick (1-based)
    reply: str | None = None  # a question: free text
    values: dict[str, Any] | None = None  # a form's values
    proposal: str = "confirm"  # confirm | cancel | leave
    relogin: bool = False  # the login lapses before this turn; the person logs in again when asked
    replay: dict[str, Any] | None = None  # replay the session's compiled DSL with these parameters


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    suite: str
    category: str
    user: str  # an ERP user name, or a dev token (dev-alice)
    turns: tuple[Turn, ...]
    facts: tuple[Fact, ...] = ()
    forms: tuple[str, ...] = ()  # the forms its reads may touch (empty: not checked)
    filters: dict[str, Any] | None = None  # the filters the question holds (None: not checked)
    refuse: bool = False  # no data may come back: the answer is a refusal
    reference: tuple[dict[str, Any], ...] = ()  # the reference action list (tool calls)
    status: str = "SUCCEEDED"
    max_tool_calls: int | None = None
    max_rounds: int | None = None
    fast: bool = False  # part of the `make test` subset
    vars: dict[str, str] | None = None  # name -> SQL over the ERP template: {name} in the task is its value
    shape: str = ""  # the answer's shape (checks.SHAPES): value | quantity | latest | top | total
    outcome: str = ""  # the session's outcome the task expects (not_granted for a form not granted …); "": any
    erp: str = "demo"  # tryton: its facts, vars and forms are Tryton's (forms named by model: sale.sale)
    path: str = ""

    @property
    def pack(self) -> str:
        return "finance" if self.user.startswith("dev-") else "erp"

    @property
    def writes(self) -> bool:
        return bool(self.reference) or any(t.proposal != "confirm" for t in self.turns)


def _as_tuple(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)


def _fact(raw: Any, where: str) -> Fact:
    if not isinstance(raw, dict) or len([k for k in raw if k in FACT_KINDS]) != 1:
        raise TaskError(
            f"{where}: a fact is one of {', '.join(FACT_KINDS)}: <query or phrases>, optionally db: erp|finance"
        )
    kind = next(k for k in raw if k in FACT_KINDS)
    db = str(raw.get("db", "erp"))
    if db not in DBS:
        raise TaskError(f"{where}: db must be one of {', '.join(DBS)}, not {db!r}")
    value = raw[kind]
    if kind in ("text",) or (kind == "none" and isinstance(value, list)):
        return Fact(kind, db=db, phrases=_as_tuple(value))
    if not isinstance(value, str) or not value.strip().lower().startswith(("select", "with")):
        raise TaskError(f"{where}: {kind} takes an SQL query (SELECT …) over the {db} database")
    return Fact(kind, query=value, db=db)


def _turn(raw: Any, where: str) -> Turn:
    if isinstance(raw, str):
        return Turn(say=raw)
    if not isinstance(raw, dict):
        raise TaskError(f"{where}: a turn is a message or {{say, pick|reply|values, proposal, relogin, replay}}")
    unknown = set(raw) - {"say", "pick", "reply", "values", "proposal", "relogin", "replay"}
    if unknown:
        raise TaskError(f"{where}: unknown turn field(s) {sorted(unknown)}")
    proposal = str(raw.get("proposal", "confirm"))
    if proposal not in PROPOSAL_ANSWERS:
        raise TaskError(f"{where}: proposal must be one of {', '.join(PROPOSAL_ANSWERS)}")
    if not raw.get("say") and raw.get("replay") is None:
        raise TaskError(f"{where}: a turn needs say: <the person's message> (or replay: {{params}})")
    pick = raw.get("pick")
    if pick is not None and (not isinstance(pick, int) or pick < 1):
        raise TaskError(f"{where}: pick is the option's number, from 1")
    return Turn(
        say=str(raw.get("say") or ""),
        pick=pick,
        reply=None if raw.get("reply") is None else str(raw["reply"]),
        values=raw.get("values"),
        proposal=proposal,
        relogin=bool(raw.get("relogin", False)),
        replay=raw.get("replay"),
    )


TASK_FIELDS = {
    "id",
    "category",
    "user",
    "turns",
    "say",
    "facts",
    "forms",
    "filters",
    "refuse",
    "reference",
    "status",
    "max_tool_calls",
    "max_rounds",
    "fast",
    "vars",
    "shape",
    "outcome",
    "erp",
}
SHAPES = ("value", "quantity", "latest", "top", "total")


def _outcome(raw: Any, where: str) -> str:
    if raw in (None, ""):
        return ""
    if raw not in OUTCOMES:
        raise TaskError(f"{where}: outcome must be one of {', '.join(sorted(OUTCOMES))}")
    return str(raw)


def _task(raw: dict[str, Any], defaults: dict[str, Any], suite: str, path: Path) -> Task:
    merged = {**defaults, **raw}
    where = f"{path}: task {merged.get('id', '?')}"
    unknown = set(merged) - TASK_FIELDS
    if unknown:
        raise TaskError(f"{where}: unknown field(s) {sorted(unknown)}; known: {', '.join(sorted(TASK_FIELDS))}")
    for required in ("id", "category", "user"):
        if not merged.get(required):
            raise TaskError(f"{where}: {required} is required")
    if merged["category"] not in CATEGORIES:
        raise TaskError(f"{where}: category must be one of {', '.join(CATEGORIES)}")
    turns_raw = merged.get("turns") or ([merged["say"]] if merged.get("say") else [])
    if not turns_raw:
        raise TaskError(f"{where}: say: <message> or turns: [...] is required")
    turns = tuple(_turn(t, f"{where} turn {i + 1}") for i, t in enumerate(turns_raw))
    reference = merged.get("reference") or []
    if not isinstance(reference, list) or not all(isinstance(r, dict) and "tool" in r for r in reference):
        raise TaskError(f"{where}: reference is a list of {{tool, args}} calls")
    if merged.get("shape", "") not in ("", *SHAPES):
        raise TaskError(f"{where}: shape must be one of {', '.join(SHAPES)}")
    erp = str(merged.get("erp") or "demo")
    if erp not in ERPS:
        raise TaskError(f"{where}: erp must be one of {', '.join(ERPS)}")
    filters = merged.get("filters")
    if filters is not None and not isinstance(filters, dict):
        raise TaskError(f"{where}: filters maps a filter name to its value (~ for any value)")
    return Task(
        id=f"{suite}/{merged['id']}",
        suite=suite,
        category=str(merged["category"]),
        user=str(merged["user"]),
        turns=turns,
        facts=tuple(_fact(f, where) for f in merged.get("facts") or []),
        forms=_as_tuple(merged.get("forms")),
        filters=filters,
        refuse=bool(merged.get("refuse", False)),
        reference=tuple(reference),
        status=str(merged.get("status", "SUCCEEDED")),
        max_tool_calls=merged.get("max_tool_calls"),
        max_rounds=merged.get("max_rounds"),
        fast=bool(merged.get("fast", False)),
        vars={str(k): str(v) for k, v in (merged.get("vars") or {}).items()} or None,
        shape=str(merged.get("shape") or ""),
        outcome=_outcome(merged.get("outcome"), where),
        erp=erp,
        path=str(path),
    )


def _fill(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, v in values.items():
            value = value.replace("{" + key + "}", v)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_fill(v, values) for v in value)
    return value


def bind(task: Task, values: dict[str, str]) -> Task:
    """The task with ``{name}`` replaced everywhere — messages, answers, facts, filters, reference."""
    turns = tuple(
        replace(
            t,
            say=_fill(t.say, values),
            reply=_fill(t.reply, values),
            values=_fill(t.values, values),
            replay=_fill(t.replay, values),
        )
        for t in task.turns
    )
    facts = tuple(replace(f, query=_fill(f.query, values), phrases=_fill(f.phrases, values)) for f in task.facts)
    return replace(
        task, turns=turns, facts=facts, filters=_fill(task.filters, values), reference=_fill(task.reference, values)
    )


def load_file(path: Path, suite: str | None = None) -> list[Task]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise TaskError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), list):
        raise TaskError(f"{path}: a task file holds tasks: [...] (and optionally defaults: {{...}})")
    defaults = doc.get("defaults") or {}
    return [_task(t, defaults, suite or path.parent.name, path) for t in doc["tasks"]]


def load_suite(root: Path, suite: str, pattern: str | None = None, fast: bool = False) -> list[Task]:
    """The tasks of ``suite`` (``all``: every suite) under ``root``, ``pattern`` a glob over task ids."""
    suites = sorted(p.name for p in root.iterdir() if p.is_dir()) if suite == "all" else [suite]
    tasks: list[Task] = []
    for name in suites:
        folder = root / name
        if not folder.is_dir():
            raise TaskError(f"no suite {name!r}: {folder} is not a folder")
        for path in sorted(folder.glob("*.yaml")):
            tasks += load_file(path, name)
    ids = [t.id for t in tasks]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise TaskError(f"task ids must be unique; repeated: {', '.join(duplicates)}")
    if pattern:
        tasks = [t for t in tasks if fnmatch.fnmatch(t.id, pattern) or fnmatch.fnmatch(t.id.split("/", 1)[1], pattern)]
    chosen = [t for t in tasks if t.fast] if fast else tasks
    if not chosen:
        raise TaskError(f"no task of suite {suite!r} under {root} matches" + (f" {pattern!r}" if pattern else ""))
    return chosen
