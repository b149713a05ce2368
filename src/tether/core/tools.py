"""Tools: definitions, the ``@tool`` decorator, result kinds and the registry.

A tool is an async callable plus a JSON schema. Decorator tools derive the schema from type hints
through pydantic; HTTP tools declare it (see ``http_tools.py``). A tool returns a plain JSON value
or one of the result kinds below; it never sees another user's identity or credential.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from tether.core.ports import OpQueue
from tether.core.session import Identity, Owner
from tether.errors import ConfigError, InvalidInput


@dataclass(slots=True)
class JobTicket:
    """Handed to whoever runs an async job: it calls back with ``job_id`` and proves it with
    ``token`` (header ``X-Tether-Callback-Token``). Only a hash of the token is stored.

    A job started outside a session (``POST /tools/{name}`` of a tool with a ``poll_url``) has
    no one waiting for a callback: ``callback_url`` and ``token`` are empty (``detached``), and
    the tool keeps the outcome where its ``poll_url`` serves it."""

    job_id: str
    token: str
    callback_url: str

    @property
    def detached(self) -> bool:
        return not self.callback_url


JobIssuer = Callable[[], Awaitable[JobTicket]]


@dataclass(slots=True)
class ToolContext:
    """What a tool may know about the call. ``credential`` is the user's business-system
    credential for this call only; it never enters a prompt, transcript, event or log."""

    owner: Owner
    session_id: str
    turn_id: str
    tool_call_id: str
    global_context: dict[str, Any]
    grants: frozenset[str] = frozenset()
    credential: str | None = field(default=None, repr=False)
    issue_job: JobIssuer | None = None
    ops: OpQueue | None = None  # the op queue a proposing tool records its draft in (none outside a session)
    # what an audited tool adds to its audit row (e.g. the SQL as run, a row count); no secrets
    audit_notes: dict[str, Any] = field(default_factory=dict)
    # the session's messages so far, read-only: a proposal marks values copied from tool results' free text
    transcript: Sequence[dict[str, Any]] = ()

    async def async_job(self) -> JobTicket:
        if self.issue_job is None:
            raise ConfigError("this tool context cannot issue async jobs")
        return await self.issue_job()


# ---- result kinds -------------------------------------------------------------------------------


@dataclass(slots=True)
class Table:
    columns: list[str]
    rows: list[list[Any]]
    total: int
    next_cursor: str | None = None


@dataclass(slots=True)
class Handle:
    handle_id: str
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class AsyncJobStarted:
    ticket: JobTicket
    message: str = "job started; the result arrives by callback"


InteractionKind = Literal["question", "form", "proposal", "login"]
"""What a person is asked for: an answer, a form's values, a write's confirmation, a new login (the
business system refused the user's token). A ``proposal`` waits in ``WAITING_CONFIRMATION``, the
rest in ``WAITING_USER_INPUT``; a ``login`` is never answered, the user's next message is."""
INTERACTION_KINDS: tuple[InteractionKind, ...] = get_args(InteractionKind)


@dataclass(slots=True)
class Interaction:
    """A question, form or write proposal for the user: ends the turn, not fed to the model."""

    kind: InteractionKind
    payload: dict[str, Any]
    interaction_id: str = ""


@dataclass(slots=True)
class ErrorResult:
    message: str
    retryable: bool = False
    code: str | None = None  # what failed, for a person's message in their language (``ToolError.code``)
    params: dict[str, Any] = field(default_factory=dict)


ToolFn = Callable[..., Awaitable[Any]]


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any], ToolContext], Awaitable[Any]]
    validate: Callable[[dict[str, Any]], dict[str, Any]]
    timeout_s: float | None = None
    retries: int = 0
    required_grants: frozenset[str] = frozenset()
    audited: bool = False
    is_async: bool = False
    read_only: bool = False  # no side effects: safe to re-run, so no commit is needed before it runs
    # its only effect is a proposal (``propose_op``: a draft a person must confirm, committed with
    # the step that shows it): as with read_only, no commit is needed before it runs
    proposes: bool = False
    # An async tool that can also run outside a session: where its outcome is polled, "{job_id}"
    # standing for the job's id. Without one, POST /tools/{name} does not serve the tool.
    poll_url: str | None = None
    # an interaction's answer checked by the tool that asked: (interaction payload, answer) -> the
    # answer the model gets; raises InvalidInput (with problems) to keep the session waiting
    check_answer: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None
    # then, when set, the same answer checked against the business system as the person who
    # answers (their credential): (payload, checked answer, identity) -> the answer; InvalidInput
    # keeps the session waiting (an ERP form's customer that matches no record the person can see)
    resolve_answer: Callable[[dict[str, Any], dict[str, Any], Identity | None], Awaitable[dict[str, Any]]] | None = None
    # False: a compiled DSL leaves the step out — it only asked a person (a question, a form), and
    # the later steps carry what they answered as literals
    in_dsl: bool = True

    @property
    def schema_hash(self) -> str:
        body = json.dumps(self.parameters, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def _args_model(fn: ToolFn, name: str) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    hints = inspect.get_annotations(fn, eval_str=True)
    for pname, param in inspect.signature(fn).parameters.items():
        if pname == "ctx" or hints.get(pname) is ToolContext:
            continue
        annotation = hints.get(pname, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, default)
    model: type[BaseModel] = create_model(f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return model


def pydantic_validator(model: type[BaseModel]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def validate(args: dict[str, Any]) -> dict[str, Any]:
        try:
            return model.model_validate(args).model_dump()
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            raise InvalidInput(f"invalid arguments: {problems}") from None

    return validate


def tool(
    name: str | None = None,
    *,
    description: str | None = None,
    timeout_s: float | None = None,
    retries: int = 0,
    required_grants: frozenset[str] | set[str] = frozenset(),
    audited: bool = False,
    is_async: bool = False,
    read_only: bool = False,
    poll_url: str | None = None,
    proposes: bool = False,
) -> Callable[[ToolFn], Tool]:
    """Turn ``async def fn(ctx: ToolContext, a: int, b: str = "x")`` into a Tool.

    The docstring's first paragraph is the description unless one is given; parameters other
    than ``ctx`` form the schema; unknown argument keys are rejected. ``read_only=True`` declares
    the tool free of side effects: the runtime then skips the commit before it runs (a crash
    mid-call re-asks the model instead of recording the call as interrupted). ``proposes=True``
    declares that its only effect is a proposal (an op draft, through ``propose_op``): its op row
    is committed with the step that shows it, so the commit before it is skipped too (a crash
    mid-call leaves no op to confirm; at most a draft staged in the business system, which
    expires). ``poll_url``
    (async tools) lets ``POST /tools/{name}`` start the tool outside a session: it gets a detached
    ticket (no callback) and the caller polls ``poll_url`` (``{job_id}`` filled in) for the outcome.
    """

    def wrap(fn: ToolFn) -> Tool:
        if not inspect.iscoroutinefunction(fn):
            raise ConfigError(f"tool {fn.__name__} must be an async function")
        tool_name = name or fn.__name__
        model = _args_model(fn, tool_name)
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema["additionalProperties"] = False
        wants_ctx = "ctx" in inspect.signature(fn).parameters

        async def run(args: dict[str, Any], ctx: ToolContext) -> Any:
            return await (fn(ctx, **args) if wants_ctx else fn(**args))

        doc = description or (inspect.getdoc(fn) or "").split("\n\n")[0].strip()
        return Tool(
            name=tool_name,
            description=doc or tool_name,
            parameters=schema,
            run=run,
            validate=pydantic_validator(model),
            timeout_s=timeout_s,
            retries=retries,
            required_grants=frozenset(required_grants),
            audited=audited,
            is_async=is_async,
            read_only=read_only and not is_async,
            proposes=proposes and not is_async,
            poll_url=poll_url if is_async else None,
        )

    return wrap


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools or []:
            self.register(t)

    def register(self, t: Tool) -> None:
        if t.name in self._tools:
            raise ConfigError(f"tool {t.name!r} is registered twice")
        self._tools[t.name] = t

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self, names: list[str] | frozenset[str] | set[str]) -> list[dict[str, Any]]:
        return [self._tools[n].spec() for n in self._tools if n in names]
