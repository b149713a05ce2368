"""Request bodies and JSON views (camelCase as in seed 000 §2.1–§2.2)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tether.core.ports import SessionSummary
from tether.core.prompt import public_context
from tether.core.session import AgentSession

MAX_MESSAGE = 32_000


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
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(v) for v in value)
    return False


class PostMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, max_length=MAX_MESSAGE)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: Any = None
    values: dict[str, Any] | None = None


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


def session_view(s: AgentSession) -> dict[str, Any]:
    return {
        "sessionId": s.session_id,
        "status": s.status.value,
        "title": s.title,
        "query": s.query,
        "globalContext": public_context(s.global_context),
        "transcript": s.transcript,
        "executedSteps": [st.to_json() for st in s.executed_steps],
        "selectedSkillIds": s.selected_skill_ids,
        "pendingInteraction": s.pending_interaction,
        "waitingExternalJobId": s.waiting_external_job_id,
        "waitingExternalJobIds": list(s.waiting_job_ids),
        "lastError": s.last_error,
        "lastDslId": s.last_dsl_id,
        "replayOf": s.global_context.get("_replayOf"),
        "version": s.version,
        "createdAt": iso(s.created_at),
        "updatedAt": iso(s.updated_at),
    }


def session_summary(s: SessionSummary) -> dict[str, Any]:
    return {
        "sessionId": s.session_id,
        "status": s.status.value,
        "title": s.title,
        "archived": s.archived,
        "createdAt": iso(s.created_at),
        "updatedAt": iso(s.updated_at),
    }
