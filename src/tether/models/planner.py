"""The offline rule planner: the embedded default model. Deterministic, no network.

It follows the selected skills' ``plan`` (a tool sequence), fills arguments from the request
with pack-provided extractors, the global context and earlier results, and writes the final
answer from the skill's ``answer`` template. It says what it is in the answer metadata, and the
turn's outcome (``outcome``: a tool's own, or ``no_rows`` where its ``noRows`` test found nothing,
else ``answered``; ``core/session.py`` OUTCOMES). When an
extractor cannot tell something, it asks instead of guessing (``PlannerQuestion``). It writes the
rolling summary of older turns (``purpose="summary"``) with ``memory.deterministic_summary``.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

from tether.core.error_messages import DENIED, FAILED, MESSAGES, say
from tether.core.messages import ModelReply, ModelRequest, ToolCall
from tether.core.session import OUTCOMES
from tether.core.summary import deterministic_summary

STREAM_CHARS, STREAM_PAUSE_S = 8, 0.01
_CJK = re.compile(r"[\u4e00-\u9fff]")
META = {"model": "planner", "note": "offline rule planner (no LLM): follows skill plans with templates"}
MAX_CALL_AGAIN = 3  # a step repeated on its own result's request, at most this often per request
TEMPLATE_RE = re.compile(r"\$\{([^}]+)\}")


class PlannerQuestion(Exception):
    """Raised by an extractor that cannot tell a value; the message is shown to the user."""


# (latest user message, global context + "_previous": the earlier user messages) -> values
Extractor = Callable[[str, dict[str, Any]], dict[str, Any]]


def _lookup(path: str, scope: dict[str, Any]) -> Any:
    current: Any = scope
    for part in path.strip().split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit() and -len(current) <= int(part) < len(current):
            current = current[int(part)]
        else:
            raise KeyError(path)
    return current


def _records(value: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """(column names, rows as objects) of a tool's ``{columns, rows}`` or a list of objects."""
    if isinstance(value, dict) and "rows" in value:
        names = [str(c) for c in value.get("columns") or []]
        return names, [dict(zip(names, r, strict=False)) if isinstance(r, list) else r for r in value["rows"]]
    records = [r for r in value or [] if isinstance(r, dict)] if isinstance(value, list) else []
    return list(dict.fromkeys(k for r in records for k in r)), records


def markdown_table(value: Any, columns: str = "", limit: int = 20) -> str:
    """A Markdown table of a tool's rows: ``{columns, rows[, labels]}`` or a list of objects.
    ``columns`` (comma-separated) picks and orders columns; cells are one line, ``|`` escaped."""
    labels: dict[str, str] = {}
    coded: dict[str, dict[str, str]] = {}
    if isinstance(value, dict) and "rows" in value:
        labels = dict(value.get("labels") or {})
        coded = dict(value.get("valueLabels") or {})
    elif not isinstance(value, list):
        return str(value)
    names, records = _records(value)
    if columns:
        names = [c for c in columns.split(",") if c]
    if not records:
        return "（没有符合条件的记录）"

    def cell(v: Any) -> str:
        text = "" if v is None else (f"{v:,.2f}" if isinstance(v, float) else str(v))
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")[:80]

    head = "| " + " | ".join(cell(labels.get(n, n)) for n in names) + " |"
    rule = "|" + "---|" * len(names)

    def shown(record: dict[str, Any], name: str) -> Any:
        v = record.get(name)
        return coded.get(name, {}).get(str(v), v) if v is not None else v

    body = ["| " + " | ".join(cell(shown(r, n)) for n in names) + " |" for r in records[:limit]]
    return "\n".join([head, rule, *body])


def _table_filter(value: Any, arg: str, scope: dict[str, Any]) -> str:
    columns = _lookup(arg[1:], scope) if arg.startswith("@") else arg
    return markdown_table(value, columns if isinstance(columns, str) else ",".join(columns))


def _render_filter(value: Any, arg: str, scope: dict[str, Any]) -> Any:
    return render(value, scope)


def _sum_filter(value: Any, arg: str, scope: dict[str, Any]) -> str:
    """The sum of column ``arg`` over a tool's rows, as 1,234.50."""
    _, rows = _records(value)
    total = sum(float(r.get(arg) or 0) for r in rows if isinstance(r.get(arg) or 0, (int, float, str)))
    return f"{total:,.2f}"


def _label_filter(value: Any, arg: str, scope: dict[str, Any]) -> Any:
    """``${prev|label:status}``: a record's field shown with its display label (draft → 草稿)."""
    record = value.get("master") if isinstance(value, dict) and "master" in value else value
    raw = record.get(arg) if isinstance(record, dict) else None
    labels = (value.get("valueLabels") or {}).get(arg, {}) if isinstance(value, dict) else {}
    return labels.get(str(raw), raw) if raw is not None else ""


# ``${path|name:arg}``; an ``arg`` of ``@path`` is looked up in the scope
FILTERS: dict[str, Callable[[Any, str, dict[str, Any]], Any]] = {
    "table": _table_filter,
    "render": _render_filter,
    "sum": _sum_filter,
    "label": _label_filter,
}


def _value(expr: str, scope: dict[str, Any]) -> Any:
    """``path`` or ``path|filter:arg``."""
    path, bar, spec = expr.partition("|")
    value = _lookup(path, scope)
    if not bar:
        return value
    name, _, arg = spec.partition(":")
    fn = FILTERS.get(name.strip())
    if fn is None:
        raise KeyError(f"{path}|{name}")
    return fn(value, arg.strip(), scope)


def render(template: Any, scope: dict[str, Any]) -> Any:
    """``"${a.b}"`` alone keeps the value's type; inside text it is interpolated.
    ``${a.b|table}`` / ``${a.b|table:col1,col2}`` renders rows as a Markdown table;
    ``${a.b|render}`` renders a template that an extractor built."""
    if isinstance(template, dict):
        return {k: render(v, scope) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, scope) for v in template]
    if not isinstance(template, str):
        return template
    whole = TEMPLATE_RE.fullmatch(template)
    if whole:
        return _value(whole.group(1), scope)

    def sub(m: re.Match[str]) -> str:
        value = _value(m.group(1), scope)
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    return TEMPLATE_RE.sub(sub, template)


def _since_last_user(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return str(messages[i].get("content") or ""), messages[i + 1 :]
    return "", messages


def _tool_data(message: dict[str, Any]) -> dict[str, Any]:
    try:
        body = json.loads(message.get("content") or "{}")
    except json.JSONDecodeError:
        return {"kind": "value", "data": message.get("content")}
    return body if isinstance(body, dict) else {"kind": "value", "data": body}


def _call_again(result: dict[str, Any]) -> dict[str, Any] | None:
    """A tool's result may ask for the same call again with corrected arguments (``callAgain``: a
    disambiguation answered, say); the plan then repeats that step instead of moving on."""
    data = result.get("data")
    again = data.get("callAgain") if isinstance(data, dict) else None
    args = again.get("args") if isinstance(again, dict) else None
    return args if isinstance(args, dict) else None


def _expand(plan: list[dict[str, Any]], scope: dict[str, Any]) -> list[dict[str, Any]]:
    """A plan entry ``{steps: "${extract.x}"}`` stands for the steps an extractor chose for this
    request (their arguments are rendered when each step runs, so they may use earlier results).
    Spliced steps may splice again (``{steps: "${steps.0.plan}"}``: the steps an earlier tool
    chose); a splice whose result is not there yet ends the plan for now."""
    out: list[dict[str, Any]] = []
    _splice(plan, scope, set(), out)
    return out


def _splice(plan: list[dict[str, Any]], scope: dict[str, Any], spliced: set[str], out: list[dict[str, Any]]) -> bool:
    """Appends ``plan``'s steps to ``out``; False when a splice waits for a step not run yet."""
    for entry in plan:
        if "steps" not in entry or "tool" in entry:
            out.append(entry)
            continue
        if str(entry["steps"]) in spliced:  # several skills sharing one extractor's choice: once
            continue
        if _waits_for_result(str(entry["steps"]), scope):
            return False
        spliced.add(str(entry["steps"]))
        chosen = render(entry["steps"], scope)
        inner = [s for s in chosen or [] if isinstance(s, dict) and (isinstance(s.get("tool"), str) or "steps" in s)]
        if not _splice(inner, scope, spliced, out):
            return False
    return True


def _waits_for_result(template: str, scope: dict[str, Any]) -> bool:
    """``${steps.N…}`` of a step not run yet."""
    match = re.fullmatch(r"\$\{steps\.(\d+)[.|].*\}", template.strip())
    return match is not None and int(match.group(1)) >= len(scope.get("steps") or [])


def _outcome(scope: dict[str, Any]) -> tuple[str, str | None]:
    """(outcome, the answer instead of the template's) from the last result that says either: a
    tool's ``outcome`` (a refusal's ``not_granted`` / ``not_understood``), or its ``noRows``
    (``{test, answer}``): where ``test`` renders missing, empty or 0 over the steps run, nothing
    matched, and ``answer`` says so with the filters used."""
    for data in reversed(scope["steps"]):
        if not isinstance(data, dict):
            continue
        if data.get("outcome") in OUTCOMES:
            return str(data["outcome"]), None
        empty = data.get("noRows")
        if isinstance(empty, dict) and isinstance(empty.get("test"), str):
            try:
                found = render(empty["test"], scope)
            except KeyError:
                found = None
            if found in (None, 0, "0", "", [], {}):
                return "no_rows", str(empty.get("answer") or "")
            return "answered", None
    return "answered", None


class PlannerModel:
    name = "planner"

    def __init__(
        self,
        extractors: list[Extractor] | None = None,
        stream: bool = False,
        messages: dict[str, dict[str, str]] | None = None,
        denied: frozenset[str] = DENIED,
    ) -> None:
        self.extractors = list(extractors or [])
        self.stream = stream  # answers arrive as TOKEN deltas too, paced like a streaming model
        # a tool error's code -> {language: template}: the core's table, the packs' merged over it
        self.messages = {**MESSAGES, **(messages or {})}
        self.denied = denied  # the codes whose failure ends the turn ``not_granted``

    async def chat(self, request: ModelRequest) -> ModelReply:
        reply = await self._reply(request)
        if self.stream and request.on_token is not None and reply.content and request.purpose == "turn":
            for start in range(0, len(reply.content), STREAM_CHARS):
                await request.on_token(reply.content[start : start + STREAM_CHARS])
                await asyncio.sleep(STREAM_PAUSE_S)
        return reply

    async def _reply(self, request: ModelRequest) -> ModelReply:
        if request.purpose == "route":
            return ModelReply(content="", meta=META)  # the router's keyword rules decide
        if request.purpose == "summary":
            fold = request.fold
            text = deterministic_summary(fold.previous, fold.messages, fold.max_tokens) if fold else ""
            return ModelReply(content=text, meta=META)
        query, recent = _since_last_user(request.messages)
        results = [_tool_data(m) for m in recent if m.get("role") == "tool"]
        failed = next((r for r in results if r.get("kind") == "error"), None)
        zh = _CJK.search(query) is not None  # answer in the language asked
        if failed is not None:
            return self._answer(self._failure(failed, "zh" if zh else "en"), self._failed_outcome(failed))
        skills = sorted(request.skills, key=lambda k: k.plan_order)
        plan = [step for skill in skills for step in skill.plan]
        if not plan:  # said without the tools' names: those are the system's, not the person's words
            if zh:
                return self._answer(
                    "我是离线规则规划器，没有已安装的技能能处理这个请求。请换用技能的关键词再问。", "not_understood"
                )
            return self._answer(
                "I am the offline rule planner and no installed skill matches this request. "
                "Try rephrasing with a skill's keywords.",
                "not_understood",
            )
        scope = self._scope(query, request, [r.get("data") for r in results])
        try:
            plan = _expand(plan, scope)
        except PlannerQuestion as q:
            return self._answer(str(q), "not_understood")
        except KeyError as exc:
            if scope["_asked"]:  # an extractor could not tell a value, and the plan needs one
                return self._answer(scope["_asked"][0], "not_understood")
            if zh:
                return self._answer(f"无法规划这个请求：不知道 {exc.args[0]!r} 是什么。", "not_understood")
            return self._answer(f"I could not plan this request: {exc.args[0]!r} is unknown.", "not_understood")
        repeated = min(sum(1 for r in results[:-1] if _call_again(r) is not None), MAX_CALL_AGAIN)
        if results and (args := _call_again(results[-1])) is not None and repeated < MAX_CALL_AGAIN:
            return self._tool_call(str(results[-1].get("tool")), args)
        done = sum(1 for m in recent if m.get("role") == "assistant" and m.get("tool_calls")) - repeated
        if done < len(plan):
            return self._call(plan[done], scope)
        template = next((k.answer for k in reversed(skills) if k.answer), None)  # the last plan's skill answers
        outcome, instead = _outcome(scope)
        try:
            text = instead or (render(template, scope) if template else self._summary(results, zh))
        except KeyError as exc:  # a skill's bug, said in the language asked
            if zh:
                text = f"已完成，但回答模板引用了没有步骤产生的 {exc.args[0]!r}。"
            else:
                text = f"Done, but the answer template refers to {exc.args[0]!r}, which no step produced."
        return self._answer(text, outcome)

    def _scope(self, query: str, request: ModelRequest, steps: list[Any]) -> dict[str, Any]:
        extracted: dict[str, Any] = {}
        earlier = [str(m.get("content") or "") for m in request.messages if m.get("role") == "user"][:-1]
        context = {**request.global_context, "_previous": earlier}  # follow-ups inherit what was said
        asked: list[str] = []
        for extract in self.extractors:  # every pack's: one that cannot tell its value asks only if
            try:  # the chosen plan needs a value no extractor gave (another pack's word is not its)
                extracted.update(extract(query, context))
            except PlannerQuestion as q:
                asked.append(str(q))
        return {
            "_asked": asked,
            "query": query,
            "ctx": request.global_context,
            "extract": extracted,
            "steps": steps,
            "prev": steps[-1] if steps else None,
            "prev2": steps[-2] if len(steps) > 1 else None,  # the step before it (a sum, then its rows)
        }

    def _call(self, step: dict[str, Any], scope: dict[str, Any]) -> ModelReply:
        try:
            args = render(step.get("args") or {}, scope)
        except KeyError as exc:
            if scope["_asked"]:
                return self._answer(scope["_asked"][0], "not_understood")
            name = exc.args[0].split(".")[-1]
            if _CJK.search(scope["query"]):
                return self._answer(f"我无法从您的请求中确定 {name!r}，请明确说明。", "not_understood")
            return self._answer(
                f"I could not tell {name!r} from your request; please say it explicitly.", "not_understood"
            )
        return self._tool_call(step["tool"], args)

    def _failure(self, failed: dict[str, Any], language: str) -> str:
        """A failed tool's error in the language asked: its code's template (a pack's, or the
        core's, ``tether.core.error_messages``). An error without words of its own is said as the
        core's ``tool.failed`` in Chinese (never an English sentence to a Chinese question) and
        with the tool's English explanation in English."""
        raw = failed.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        text = say(self.messages, data.get("code"), data.get("params") or {}, language) if data.get("code") else None
        if text is None and language == "zh":
            text = say(self.messages, FAILED, {"tool": failed.get("tool")}, language)
        if text is not None:
            return f"未能完成：{text}" if language == "zh" else f"I could not finish: {text}"
        error = data.get("error", "unknown error")  # the tool's own explanation, never its name
        if language == "zh":
            return "未能完成：这一步出错了，请换个说法或稍后再试。"
        return f"I could not finish: {error}"

    def _failed_outcome(self, failed: dict[str, Any]) -> str:
        """A failure whose code says the person is not granted it (``erp.no_access``): not granted."""
        data = failed.get("data")
        code = data.get("code") if isinstance(data, dict) else None
        return "not_granted" if code in self.denied else "answered"

    def _tool_call(self, tool_id: str, args: Any) -> ModelReply:
        call = ToolCall(f"call_{uuid.uuid4().hex[:12]}", tool_id, json.dumps(args, ensure_ascii=False))
        return ModelReply(tool_calls=[call], meta=META)

    def _summary(self, results: list[dict[str, Any]], zh: bool) -> str:
        lines = [f"- {json.dumps(r.get('data'), ensure_ascii=False)[:300]}" for r in results]
        done, listed = ("已完成。", "已完成。结果：\n") if zh else ("Done.", "Done. Results:\n")
        return listed + "\n".join(lines) if lines else done

    def _answer(self, text: str, outcome: str = "answered") -> ModelReply:
        return ModelReply(content=text, meta={**META, "outcome": outcome})
