"""``LimitReached``: the 429 every abuse limit answers, with ``Retry-After``, a message that says
which limit and when it lets the caller through again, and the same as a code and params."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from starlette.exceptions import HTTPException

Refused = Callable[[str], None]  # counts a refusal by its kind (``/metrics``: tether_limit_refusals)


class LimitReached(HTTPException):
    """Raised by a route; the app's handler for Starlette's ``HTTPException`` answers ``body()``
    with the status and headers: ``{"error": message, "code", "params", "retryAfter"}`` — the
    English message for logs and clients that do not know the code, the code of
    ``tether.core.error_messages`` and its params for a person's language."""

    def __init__(
        self, kind: str, message: str, retry_after_s: float, code: str, params: dict[str, Any] | None = None
    ) -> None:
        self.kind = kind
        self.code = code
        self.retry_after_s = max(1, math.ceil(retry_after_s))
        self.params = {**(params or {}), "seconds": self.retry_after_s}
        super().__init__(429, message, headers={"Retry-After": str(self.retry_after_s)})

    def body(self) -> dict[str, Any]:
        return {"error": self.detail, "code": self.code, "params": self.params, "retryAfter": self.retry_after_s}


def reset_at(moment: float) -> str:
    """A moment in epoch seconds as UTC ISO 8601 (``2026-12-05T18:40:12Z``), for a code's params."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(math.ceil(moment)))


def until(reset_at: float) -> str:
    """``"at 18:40:12 UTC (in 1 min 5 s)"`` for a moment in epoch seconds."""
    left = max(0, math.ceil(reset_at - time.time()))
    clock = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(reset_at))
    return f"at {clock} (in {duration(left)})"


def duration(seconds: float) -> str:
    s = max(0, math.ceil(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    minutes = s % 3600 // 60
    return f"{s // 3600} h {minutes} min" if minutes else f"{s // 3600} h"
