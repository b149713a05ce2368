"""The customer-session query request (seed 000 §2.3) and the pack's fixed vocabularies.

``SessionQuery`` is the one validated form of the filters every customer-session read takes: the
direct query API, the sampling and handle tools and the repository all accept it. Field names are
the seed's camelCase JSON names (``businessLine``, ``startTime``…); snake_case names work too.
Every validation error names the field to fix. This module never touches a database.

Time semantics: ``startTime`` and ``endTime`` are inclusive wall-clock times in the table's own
(naive, business-local) time. Accepted forms are ``YYYY-MM-DD HH:MM:SS``, ISO 8601 (an offset is
dropped, keeping the wall clock) and ``YYYY-MM-DD``; a date-only ``endTime`` means the end of that
day. ``limit`` defaults to 20 and is capped at ``MAX_LIMIT`` (500); zero or less is an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from tether.pack import InvalidInput

BUSINESS_LINES: tuple[str, ...] = ("precious-metal", "forex", "fund", "credit-card", "wealth")
CHANNELS: tuple[str, ...] = ("app", "web", "phone", "wechat")
CUSTOMER_TIERS: tuple[str, ...] = ("普通", "金卡", "白金", "钻石", "高净值")

DEFAULT_LIMIT = 20
MAX_LIMIT = 500
MAX_KEYWORDS = 20

_KEYWORD_SPLIT = re.compile(r"[,，、;；\s]+")
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _parse_time(value: Any, *, end_of_day: bool) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, date):
        return datetime.combine(value, time.max if end_of_day else time.min)
    if not isinstance(value, str):
        raise ValueError(f"expected a time string, got {type(value).__name__}")
    text = value.strip()
    if _DATE_ONLY.match(text):
        try:
            day = date.fromisoformat(text)
        except ValueError:
            raise ValueError(f"'{value}' is not a valid date") from None
        return datetime.combine(day, time.max if end_of_day else time.min)
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        raise ValueError(
            f"cannot read '{value}' as a time; use 'YYYY-MM-DD HH:MM:SS', ISO 8601 or 'YYYY-MM-DD'"
        ) from None


def _choice(value: Any, choices: tuple[str, ...], what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected a string naming the {what}")
    text = value.strip().lower()
    if not text:
        return None
    if text not in choices:
        raise ValueError(f"unknown {what} '{value}'; choose one of: {', '.join(choices)}")
    return text


class SessionQuery(BaseModel):
    """Filters over ``customer_session``; all optional. Keywords OR-match message, reply and tags."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True, extra="forbid", frozen=True
    )

    keywords: tuple[str, ...] = Field(default=(), description="Any of these in message, reply or tags.")
    business_line: str | None = Field(default=None, alias="businessLine")
    channel: str | None = None
    customer_id: str | None = Field(default=None, alias="customerId")
    customer_tier: str | None = Field(default=None, alias="customerTier")
    start_time: datetime | None = Field(default=None, alias="startTime")
    end_time: datetime | None = Field(default=None, alias="endTime")
    limit: int = Field(default=DEFAULT_LIMIT, description=f"Records returned, capped at {MAX_LIMIT}.")

    @field_validator("keywords", mode="before")
    @classmethod
    def _keywords(cls, value: Any) -> tuple[str, ...]:
        if value is None:
            return ()
        items = _KEYWORD_SPLIT.split(value) if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise ValueError("expected a list of keyword strings")
        seen: dict[str, None] = {}
        for item in items:
            if not isinstance(item, str):
                raise ValueError("every keyword must be a string")
            if item.strip():
                seen[item.strip()] = None
        if len(seen) > MAX_KEYWORDS:
            raise ValueError(f"at most {MAX_KEYWORDS} keywords, got {len(seen)}")
        return tuple(seen)

    @field_validator("business_line", mode="before")
    @classmethod
    def _business_line(cls, value: Any) -> str | None:
        return _choice(value, BUSINESS_LINES, "business line")

    @field_validator("channel", mode="before")
    @classmethod
    def _channel(cls, value: Any) -> str | None:
        return _choice(value, CHANNELS, "channel")

    @field_validator("customer_id", "customer_tier", mode="before")
    @classmethod
    def _optional_text(cls, value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("expected a string")
        return value.strip() or None

    @field_validator("start_time", mode="before")
    @classmethod
    def _start(cls, value: Any) -> datetime | None:
        return _parse_time(value, end_of_day=False)

    @field_validator("end_time", mode="before")
    @classmethod
    def _end(cls, value: Any) -> datetime | None:
        return _parse_time(value, end_of_day=True)

    @field_validator("end_time")
    @classmethod
    def _end_after_start(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        start = info.data.get("start_time")
        if value is not None and start is not None and value < start:
            raise ValueError(
                f"must not be before startTime ({start.isoformat(sep=' ')}), got {value.isoformat(sep=' ')}"
            )
        return value

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int) -> int:
        if value <= 0:
            raise ValueError(f"must be at least 1, got {value}")
        return min(value, MAX_LIMIT)

    def to_json(self) -> dict[str, Any]:
        """The filters as the seed's camelCase JSON (times as ISO strings, unset filters left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def parse_query(payload: SessionQuery | Mapping[str, Any] | None) -> SessionQuery:
    """Validate ``payload`` into a ``SessionQuery``; raise ``InvalidInput`` naming the first bad field."""
    if isinstance(payload, SessionQuery):
        return payload
    try:
        return SessionQuery.model_validate(dict(payload or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = _field_name(first.get("loc", ()))
        message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        raise InvalidInput(f"{field}: {message}" if field else message, field=field) from None


_ALIASES = {name: (info.alias or name) for name, info in SessionQuery.model_fields.items()}


def _field_name(loc: tuple[int | str, ...]) -> str | None:
    if not loc:
        return None
    head = str(loc[0])
    return _ALIASES.get(head, head)
