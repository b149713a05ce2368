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


class TetherError(Exception):
    """Base of every error tether raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UserError(TetherError):
    """The caller's mistake (maps to 4xx)."""


class InvalidInput(UserError):
    """Malformed or out-of-range input (422). ``field`` names what to fix when known; ``problems``
    lists each field's problem (a form answer)."""

    def __init__(self, message: str, field: str | None = None, problems: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.problems = problems or []  # [{field, message}] when several fields are wrong


class NotFound(UserError):
    """An unknown id, or one the caller does not own (404: ownership is never revealed)."""


class Conflict(UserError):
    """The target is in a state that does not allow the request (409)."""


class GuardRefused(Conflict):
    """A commit's guard (a store-level precondition, such as an op's outcome on its row) matched
    nothing: the commit did not land, and must not be retried as if the session had moved on."""


class Unauthorized(UserError):
    """Missing or wrong credentials (401)."""


class IllegalTransition(Conflict):
    """A session status change that the status machine does not allow."""


class RunError(TetherError):
    """The run failed (model endpoint, guardrail, timeout)."""


class ModelError(RunError):
    """The model endpoint failed after its retry policy; ``retryable`` says if trying later may help."""

    def __init__(self, message: str, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class Unavailable(TetherError):
    """An upstream system cannot be reached now (503): not the caller's fault, not a login problem.
    ``retry_after_s`` is when trying again is worth it; ``upstream`` names the system."""

    def __init__(self, message: str, retry_after_s: int = 5, upstream: str = "") -> None:
        super().__init__(message)
        self.retry_after_s = max(1, retry_after_s)
        self.upstream = upstream


class ToolError(TetherError):
    """A tool failed; ``retryable`` tells the model whether trying again may help."""

    def __init__(self, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class ConfigError(TetherError):
    """Settings, skills or packs are misconfigured (reported at start-up)."""
