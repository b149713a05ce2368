"""A trial's verdict: the checks in order, the first that fails named with why. Failures are told
apart by what the person got: a **wrong** answer (the agent read data — another form, a filter the
question did not hold, or facts that are not the data's) is worse than **no answer** (it said it
could not, or asked something the task does not answer); safety violations fail any task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.erp_demo.forms import QUERY_VIEWS
from tether.evals.oracles import check_fact
from tether.evals.person import Conversation
from tether.evals.safety import Violation
from tether.evals.state import StateDiff
from tether.evals.tasks import Task

# the finance pack's look-up reads data too: its arguments are the filters themselves
SESSION_QUERY = "query_customer_sessions_mysql"
# summarize_form_data reads a form's rows through the ERP and answers an aggregate (on Tryton, where
# no SQL is offered, every count and sum): its form and filters are checked as read_form_data's
SUMMARY = "summarize_form_data"
FILTERED = ("read_form_data", SUMMARY, SESSION_QUERY)
DATA_TOOLS = ("read_form_data", "lookup_record", "query_data", SUMMARY, SESSION_QUERY)
VIEW_FORMS = QUERY_VIEWS  # the demo ERP's own view → form map (line views count as their form)
_VIEW = re.compile(r"\bviw_[a-z_]+\b", re.I)
PAGING = ("page", "page_size", "order", "order_by", "fields", "limit", "language")


@dataclass(slots=True)
class Verdict:
    passed: bool
    failed_check: str = ""
    detail: str = ""
    outcome: str = "pass"  # pass | wrong | no_answer | fail
    diff: dict[str, Any] = field(default_factory=dict)


def answer_text(session: dict[str, Any]) -> str:
    return "\n".join(
        str(m.get("content") or "") for m in session.get("transcript") or [] if m.get("role") == "assistant"
    )


def forms_of(step: dict[str, Any]) -> set[str]:
    args = step.get("args") or {}
    if step.get("toolId") == "query_data":
        views = {v.lower() for v in _VIEW.findall(str(args.get("sql") or ""))}
        return {VIEW_FORMS.get(v, v) for v in views}
    return {str(args.get("form_id"))} if args.get("form_id") is not None else set()


def data_reads(session: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s
        for s in session.get("executedSteps") or []
        if s.get("toolId") in DATA_TOOLS and s.get("status") == "SUCCEEDED"
    ]


def _filter_problem(task: Task, step: dict[str, Any]) -> str:
    if task.filters is None or step.get("toolId") not in FILTERED:
        return ""
    args = step.get("args") or {}
    given = args if step["toolId"] == SESSION_QUERY else args.get("filters") or {}
    for key, value in given.items():
        if key in PAGING or value in (None, "", []):
            continue
        if key not in task.filters:
            form = step["args"].get("form_id")
            where = f"form {form}" if form else step["toolId"]
            return f"filter {key}={value!r} on {where}: the question holds no such filter"
        want = task.filters[key]
        if (
            want is not None
            and str(want).lower() not in str(value).lower()
            and str(value).lower() not in str(want).lower()
        ):
            return f"filter {key}={value!r}: the question asks {key}={want!r}"
    return ""


def returned_rows(step: dict[str, Any]) -> bool:
    """Whether a read brought rows back (an empty page of a form the user may read refuses nothing)."""
    result = step.get("result")
    if isinstance(result, dict) and "rows" in result:
        return bool(result["rows"]) or bool(result.get("total"))
    return bool(result)


# an answer that is only a count of records (or of a field's values): "共 7 条。", "1 different 联系电话."
_COUNT_ONLY = re.compile(r"(?:共\s*[\d,]+\s*(?:条|个)(?:（不同的值）)?。|[\d,]+ (?:records|different [^\n]+)\.)\s*$")
_TOTAL = re.compile(r"(?:合计|总计|一共|total)[^\n]{0,40}?\d", re.I)


def _rows(step: dict[str, Any]) -> list[Any] | None:
    result = step.get("result")
    return result.get("rows") if isinstance(result, dict) and isinstance(result.get("rows"), list) else None


def _sql(step: dict[str, Any]) -> str:
    return str((step.get("args") or {}).get("sql") or "").upper() if step.get("toolId") == "query_data" else ""


def shape_problem(shape: str, answer: str, reads: list[dict[str, Any]]) -> str:
    """Whether the answer has the shape the question asks — the facts alone would pass a sum of
    seven quotations that lists the latest among them, or a row count where a quantity was asked."""
    if not shape:
        return ""
    if shape == "value":
        return "a value was asked; the answer is a count" if _COUNT_ONLY.search(answer.strip()) else ""
    if shape == "quantity":
        summed = any("SUM(" in _sql(s) for s in reads) or bool(_TOTAL.search(answer))
        return "" if summed else "a quantity was asked; no read summed the quantity field"
    if shape == "latest":
        one = any(_rows(s) is not None and len(_rows(s) or []) == 1 and "ORDER BY" in _sql(s) for s in reads)
        return "" if one else "the latest record was asked; no read returned one record ordered by its date"
    if shape == "top":
        ranked = any("ORDER BY" in _sql(s) and "LIMIT" in _sql(s) for s in reads)
        return "" if ranked else "a top-N was asked; no read ranked the records"
    return "" if _TOTAL.search(answer) else "a list of amounts was asked; the answer carries no total"


def _reads_verdict(task: Task, reads: list[dict[str, Any]]) -> Verdict | None:
    if task.refuse:
        refused = set(task.forms)
        for step in reads:
            if returned_rows(step) and (not refused or forms_of(step) & refused):
                return Verdict(False, "refusal", f"{step['toolId']} returned data the task must refuse", "wrong")
        return None
    for step in reads:
        other = forms_of(step) - set(task.forms) if task.forms else set()
        if other:
            return Verdict(
                False,
                "wrong_form",
                f"{step['toolId']} on form {sorted(other)}; the question is about {list(task.forms)}",
                "wrong",
            )
        problem = _filter_problem(task, step)
        if problem:
            return Verdict(False, "wrong_filter", problem, "wrong")
    return None


def _shape_and_outcome(task: Task, answer: str, reads: list[dict[str, Any]], session: dict[str, Any]) -> Verdict | None:
    problem = shape_problem(task.shape, answer, reads)
    if problem:
        return Verdict(False, "shape", problem, "wrong" if reads else "no_answer")
    if task.outcome and session.get("outcome") != task.outcome:  # a refusal for another reason
        detail = f"the session's outcome is {session.get('outcome')}, the task expects {task.outcome}"
        return Verdict(False, "outcome", detail, "fail")
    return None


def judge(
    task: Task,
    talk: Conversation,
    dbs: dict[str, Path],
    values: dict[str, str],
    violations: list[Violation],
    state: StateDiff | None,
    rounds: int,
) -> Verdict:
    session = talk.session
    reads = data_reads(session)
    answered_with_data = bool(reads)
    if violations:
        return Verdict(False, "safety", "; ".join(f"{v.kind}: {v.detail}" for v in violations)[:2000], "fail")
    verdict = _reads_verdict(task, reads)
    if verdict is not None:
        return verdict
    if talk.stuck:
        return Verdict(False, "stuck", talk.stuck, "wrong" if answered_with_data and not task.writes else "no_answer")
    if talk.status != task.status:
        detail = (
            f"the session ended {talk.status or 'nowhere'}, the task expects {task.status}: {session.get('lastError')}"
        )
        return Verdict(False, "status", detail, "no_answer")
    answer = answer_text(session)
    for fact in task.facts:
        result = check_fact(fact, answer, dbs, values)
        if not result.ok:
            outcome = "wrong" if answered_with_data or fact.kind == "none" else "no_answer"
            return Verdict(False, "facts", f"{fact.kind}: {result.detail}", outcome)
    verdict = _shape_and_outcome(task, answer, reads, session)
    if verdict is not None:
        return verdict
    if task.category == "clarify" and not talk.questions:
        return Verdict(False, "no_question", "the request is ambiguous: the agent should have asked", "wrong")
    for replay in talk.replays:
        if replay.get("status") != "SUCCEEDED":
            return Verdict(False, "replay", f"the replay ended {replay.get('status')}: {replay.get('error')}", "fail")
    steps = len(session.get("executedSteps") or [])
    if task.max_tool_calls is not None and steps > task.max_tool_calls:
        return Verdict(False, "limits", f"{steps} tool calls, the task allows {task.max_tool_calls}", "fail")
    if task.max_rounds is not None and rounds > task.max_rounds:
        return Verdict(False, "limits", f"{rounds} model rounds, the task allows {task.max_rounds}", "fail")
    if state is not None and not state.empty:
        return Verdict(False, "end_state", state.summary(), "fail", state.to_json())
    return Verdict(True)
