"""Compile a solved turn's tool trajectory into a parameterised DSL, and render it for replay.

Arguments the user's request supplied become named parameters with defaults; arguments that
came from an earlier step's output become references (``${steps.s1.handle_id}``), never frozen
values, so a replay with new parameters flows new outputs through.
"""

from __future__ import annotations

import re
from typing import Any

from tether.core.ports import DslSnapshot, DslStep
from tether.core.schema_check import default_schema, describe, schema_mismatch, shown
from tether.core.session import AgentSession, new_id
from tether.core.tools import ToolRegistry
from tether.errors import Conflict, InvalidInput

REF_RE = re.compile(r"^\$\{(params|steps)\.([A-Za-z0-9_]+)((?:\.[A-Za-z0-9_]+)*)\}$")
MIN_REF_LEN = 6  # shorter strings match by chance too easily to count as references on their own


def _scalar_paths(value: Any, prefix: str = "", depth: int = 0) -> list[tuple[str, Any]]:
    if isinstance(value, dict) and depth < 3:
        out: list[tuple[str, Any]] = []
        for k, v in value.items():
            out += _scalar_paths(v, f"{prefix}.{k}" if prefix else str(k), depth + 1)
        return out
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [(prefix, value)]
    return []


def _in_dsl(registry: ToolRegistry, tool_id: str) -> bool:
    t = registry.get(tool_id)
    return t is None or t.in_dsl


def compile_dsl(
    session: AgentSession, turn_id: str, registry: ToolRegistry, now: float | None = None
) -> DslSnapshot | None:
    """The successful steps of ``turn_id`` as a DSL; None when the turn ran no tool."""
    steps = [
        s
        for s in session.executed_steps
        if s.turn_id == turn_id
        and s.status == "SUCCEEDED"
        and s.tool_id != "load_skill"
        and _in_dsl(registry, s.tool_id)
    ]
    if not steps:
        return None
    request = _request_text(session)
    params: dict[str, Any] = {}
    outputs: list[tuple[str, list[tuple[str, Any]]]] = []
    dsl_steps: list[DslStep] = []
    for n, step in enumerate(steps, start=1):
        sid = f"s{n}"
        args: dict[str, Any] = {}
        for key, value in step.args.items():
            ref = _find_reference(value, outputs, request)
            if ref is not None:
                args[key] = ref
                continue
            name = key if key not in params or params[key] == value else f"{key}_{sid}"
            params[name] = value
            args[key] = "${params." + name + "}"
        tool = registry.get(step.tool_id)
        dsl_steps.append(DslStep(sid, step.tool_id, args, tool.schema_hash if tool else ""))
        outputs.append((sid, _scalar_paths(step.result)))
    dsl = DslSnapshot(new_id("dsl"), session.owner, session.session_id, session.title, params, dsl_steps)
    if now is not None:
        dsl.created_at = now
    return dsl


def _request_text(session: AgentSession) -> str:
    """What the user supplied: their messages and the global context, as one searchable text."""
    parts = [str(m.get("content") or "") for m in session.transcript if m.get("role") == "user"]
    parts += [str(v) for v in session.global_context.values()]
    return "\n".join(parts)


def _mentioned(value: Any, request: str) -> bool:
    text = value if isinstance(value, str) else format(value, "g") if isinstance(value, float) else str(value)
    return text in request


def _find_reference(value: Any, outputs: list[tuple[str, list[tuple[str, Any]]]], request: str) -> str | None:
    """A reference when the value came from an earlier step's output: long strings (ids, handles)
    always; short strings and numbers only when the user did not say them."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if isinstance(value, str) and len(value) < MIN_REF_LEN and (len(value) < 2 or _mentioned(value, request)):
        return None
    if not isinstance(value, str) and _mentioned(value, request):
        return None
    for sid, paths in reversed(outputs):
        for path, out in paths:
            if out == value and type(out) is type(value):
                return "${steps." + sid + "." + path + "}"
    return None


def check_schemas(dsl: DslSnapshot, registry: ToolRegistry) -> None:
    for step in dsl.steps:
        tool = registry.get(step.tool_id)
        if tool is None:
            raise Conflict(f"DSL step {step.step_id} uses tool {step.tool_id!r}, which is no longer installed")
        if tool.schema_hash != step.schema_hash:
            raise Conflict(
                f"tool {step.tool_id!r} changed its argument schema since this DSL was compiled "
                f"(step {step.step_id}); run the task again to compile a new DSL"
            )


def bind_params(dsl: DslSnapshot, overrides: dict[str, Any], registry: ToolRegistry | None = None) -> dict[str, Any]:
    """The parameters a replay runs with: the defaults with ``overrides`` on top, each override
    checked before anything runs — unknown names, and values that do not fit the parameter's type
    (``param_types``), are ``InvalidInput`` naming the parameter."""
    unknown = sorted(set(overrides) - set(dsl.params))
    if unknown:
        known = ", ".join(sorted(dsl.params)) or "none"
        raise InvalidInput(f"unknown DSL parameter(s) {', '.join(unknown)}; this DSL takes: {known}", field=unknown[0])
    types = param_types(dsl, registry)
    for name, value in overrides.items():
        for schema in types.get(name, ()):
            problem = schema_mismatch(value, schema, schema)
            if problem is not None:
                raise InvalidInput(
                    f"DSL parameter {name!r}: expected {describe(schema, schema)}, got {shown(value)}"
                    + (f" ({problem})" if problem else ""),
                    field=name,
                )
    return {**dsl.params, **overrides}


# ---- parameter types ----------------------------------------------------------------------------
# A parameter's type is the JSON schema of every tool argument it fills (a parameter can fill the
# same argument of several steps); where a tool declares no schema for the argument, the type of
# the compiled default stands in.


def param_types(dsl: DslSnapshot, registry: ToolRegistry | None) -> dict[str, list[dict[str, Any]]]:
    """Parameter name -> the JSON schemas its value must satisfy (the root schema of the tool
    carries ``$defs`` for references, so each entry is resolved against its own tool's schema)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for step in dsl.steps:
        tool = registry.get(step.tool_id) if registry is not None else None
        props = (tool.parameters.get("properties") or {}) if tool is not None else {}
        for arg, value in step.args.items():
            m = REF_RE.match(value) if isinstance(value, str) else None
            if m is None or m.group(1) != "params":
                continue
            name = m.group(2)
            prop = props.get(arg)
            if prop is not None:
                schema = {**prop, "$defs": tool.parameters.get("$defs", {})} if tool is not None else prop
            else:
                schema = default_schema(dsl.params.get(name))
            out.setdefault(name, []).append(schema)
    return out


def render_args(args: dict[str, Any], params: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    return {k: _render(v, params, outputs) for k, v in args.items()}


def _render(value: Any, params: dict[str, Any], outputs: dict[str, Any]) -> Any:
    if not isinstance(value, str):
        return value
    m = REF_RE.match(value)
    if m is None:
        return value
    source, name, path = m.groups()
    if source == "params":
        return params[name]
    current: Any = outputs.get(name)
    for part in path.split(".")[1:]:
        if not isinstance(current, dict) or part not in current:
            raise Conflict(f"step reference {value} did not resolve: the earlier step's output has no {part!r}")
        current = current[part]
    return current


def dsl_to_json(dsl: DslSnapshot) -> dict[str, Any]:
    return {
        "dslId": dsl.dsl_id,
        "sourceSessionId": dsl.source_session_id,
        "title": dsl.title,
        "params": dsl.params,
        "steps": [
            {"stepId": s.step_id, "toolId": s.tool_id, "args": s.args, "schemaHash": s.schema_hash} for s in dsl.steps
        ],
        "createdAt": dsl.created_at,
    }
