"""Request bodies and JSON views (camelCase as in seed 000 §2.1–§2.2)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, field_validator, model_validator

from tether.core.ports import SessionSummary
from tether.core.prompt import public_context
from tether.core.session import AgentSession

MAX_MESSAGE = 32_000
MAX_TITLE = 200


class CreateSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, max_length=MAX_MESSAGE)
    globalContext: dict[str, Any] = Field(default_factory=dict)

    @field_validator("globalContext")
    @classmethod
    def _finite(cls, value: dict[str, Any]) -> dict[str, Any]:
        if _has_non_finite(value):
            raise ValueError("numbers must be finite (no NaN or Infinity)")
        return value


def _has_non_finite(value: Any) -> bool:
    """Any NaN or Infinity inside; iterative, so a deeply nested value cannot exhaust the stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class PostMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, max_length=MAX_MESSAGE)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: StrictStr | None = Field(None, max_length=MAX_MESSAGE, description="a question's answer")
    values: dict[str, Any] | None = Field(None, description="a form's values: {column: value, details?: [...]}")


class CancelBody(BaseModel):
    """``POST /api/agent/sessions/{id}/cancel``'s optional body: ``withdraw`` says the caller means
    to withdraw a confirmed write that awaits approval (otherwise such a session answers 409)."""

    model_config = ConfigDict(extra="forbid")
    withdraw: StrictBool = False


class PatchSession(BaseModel):
    """A conversation's owner-held fields: its title and whether it is archived (either or both)."""

    model_config = ConfigDict(extra="forbid")
    title: StrictStr | None = Field(None, description=f"1-{MAX_TITLE} characters, trimmed; no NUL")
    archived: StrictBool | None = None

    # validators run on given values only: None here is an explicit null
    @field_validator("title")
    @classmethod
    def _title(cls, value: str | None) -> str:
        if value is None:
            raise ValueError("may not be null")
        value = value.strip()
        if not 1 <= len(value) <= MAX_TITLE:
            raise ValueError(f"must be 1 to {MAX_TITLE} characters (after trimming spaces)")
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        try:
            value.encode()
        except UnicodeEncodeError:
            raise ValueError("must be valid Unicode (no lone surrogates)") from None
        return value

    @field_validator("archived")
    @classmethod
    def _archived(cls, value: bool | None) -> bool:
        if value is None:
            raise ValueError("may not be null")
        return value

    @model_validator(mode="after")
    def _something(self) -> PatchSession:
        if not self.model_fields_set:
            raise ValueError("give a title, archived, or both")
        return self


class ToolCallback(BaseModel):
    externalJobId: str = Field(min_length=1, max_length=200)
    status: str = Field(pattern="^(SUCCEEDED|FAILED)$")
    payload: Any = None
    error: str | None = None

    @field_validator("externalJobId")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def session_view(s: AgentSession, meta: SessionSummary | None = None) -> dict[str, Any]:
    """The session snapshot; ``meta`` (the stored summary) supplies the owner-held title and
    archived flag, which a rename may have changed since ``s`` was loaded (none: a new session)."""
    return {
        "sessionId": s.session_id,
        "status": s.status.value,
        "title": s.title if meta is None else meta.title,
        "archived": False if meta is None else meta.archived,
        "query": s.query,
        "globalContext": public_context(s.global_context),
        "transcript": s.transcript,
        "executedSteps": [st.to_json() for st in s.executed_steps],
        "selectedSkillIds": s.selected_skill_ids,
        "pendingInteraction": s.pending_interaction,
        "waitingExternalJobId": s.waiting_external_job_id,
        "waitingExternalJobIds": list(s.waiting_job_ids),
        "lastError": s.last_error,
        "lastErrorCode": s.last_error_code,  # {code, params} when the failure has a code (core/error_messages.py)
        "lastDslId": s.last_dsl_id,
        "outcome": s.outcome,  # the last finished turn's: answered | no_rows | not_granted | not_understood | asked
        "replayOf": s.global_context.get("_replayOf"),
        "version": s.version,
        "createdAt": iso(s.created_at),
        "updatedAt": iso(s.updated_at),
    }


def session_summary(s: SessionSummary, write_state: str | None = None) -> dict[str, Any]:
    """``write_state``: the state of the conversation's newest write while it still needs
    something (``draft``, ``processing``, ``pending``, ``awaiting_approval``, ``failed``); null otherwise."""
    return {
        "sessionId": s.session_id,
        "status": s.status.value,
        "title": s.title,
        "archived": s.archived,
        "writeState": write_state,
        "createdAt": iso(s.created_at),
        "updatedAt": iso(s.updated_at),
    }
