"""One error tree for tether, split by who is at fault.

- ``UserError``: the caller sent something wrong (bad input, unknown id, a conflict). The API maps
  each subclass to a 4xx status with its message.
- ``RunError``: a run failed for a reason outside the caller's control (model endpoint down,
  guardrail exceeded). It ends a turn with a readable reason.
- ``ToolError``: a tool could not do its job; it becomes that call's error tool result.
- ``Unavailable``: a system tether depends on (the ERP) cannot be reached; nobody's input is
  wrong, and the same request may succeed later (503 with ``Retry-After``).

Exceptions never log themselves.
"""

from __future__ import annotations

from typing import Any


class TetherError(Exception):
    """Base of every error tether raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UserError(TetherError):
    """The caller's mistake (maps to 4xx)."""


class InvalidInput(UserError):
    """Malformed or out-of-range input (422). ``field`` names what to fix when known; ``problems``
    lists each field's problem (a form answer); ``code`` and ``params``, where a pack gives them,
    name the refusal for a person (its message table, as ``ToolError``'s), beside the English
    ``message``."""

    def __init__(
        self,
        message: str,
        field: str | None = None,
        problems: list[dict[str, str]] | None = None,
        *,
        code: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.field = field
        self.problems = problems or []  # [{field, message}] when several fields are wrong
        self.code = code
        self.params = params or {}


class NotFound(UserError):
    """An unknown id, or one the caller does not own (404: ownership is never revealed)."""


class Conflict(UserError):
    """The target is in a state that does not allow the request (409)."""


class AwaitingApproval(Conflict):
    """A session whose write was confirmed and waits for its approvers: stopping the session is not
    withdrawing that request (409, ``code``); the caller withdraws it explicitly."""

    code = "SESSION_AWAITING_APPROVAL"


class GuardRefused(Conflict):
    """A commit's guard (a store-level precondition, such as an op's outcome on its row) matched
    nothing: the commit did not land, and must not be retried as if the session had moved on."""


class Unauthorized(UserError):
    """Missing or wrong credentials (401)."""


class Forbidden(UserError):
    """The caller is known and the target visible to them, but this action is not theirs to take
    (403), e.g. approving their own op (separation of duties)."""


class IllegalTransition(Conflict):
    """A session status change that the status machine does not allow."""


class RunError(TetherError):
    """The run failed (model endpoint, guardrail, timeout)."""


class ModelError(RunError):
    """A model call failed; ``retryable`` says if trying again may help, ``retry_after_s`` when
    the endpoint said how long to wait. The turn's policy (``TETHER_MODEL_RETRIES``) retries it."""

    def __init__(self, message: str, retryable: bool = True, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s


class ContextTooLong(ModelError):
    """The endpoint refused the request as longer than its context window; the turn rebuilds the
    request with a smaller window once. ``limit_tokens`` is the window when the endpoint said it."""

    def __init__(self, message: str, limit_tokens: int | None = None) -> None:
        super().__init__(message, retryable=False)
        self.limit_tokens = limit_tokens


class Unavailable(TetherError):
    """An upstream system cannot be reached now (503): not the caller's fault, not a login problem.
    ``retry_after_s`` is when trying again is worth it; ``upstream`` names the system."""

    def __init__(self, message: str, retry_after_s: int = 5, upstream: str = "") -> None:
        super().__init__(message)
        self.retry_after_s = max(1, retry_after_s)
        self.upstream = upstream


class ToolError(TetherError):
    """A tool failed; ``retryable`` tells the model whether trying again may help. ``code`` (kept
    as ``error_code``: subclasses have codes of their own) and ``params`` name the failure for a
    person — a pack's message table (``Pack.messages``) renders them in the person's language;
    ``message`` stays the model's plain explanation."""

    def __init__(
        self, message: str, retryable: bool = False, *, code: str | None = None, params: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.error_code = code
        self.params = params or {}


class ConfigError(TetherError):
    """Settings, skills or packs are misconfigured (reported at start-up)."""
