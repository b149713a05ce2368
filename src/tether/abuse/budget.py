"""Each user's budgets: model tokens and model calls per day, tool calls per minute.

The day is a fixed window that starts with the user's first model call and lasts 24 hours (one
counter with a TTL, as ``limits`` keeps it); the minute is a moving window. A turn is admitted
only while both daily budgets have something left (``admit_turn``: 429 naming the budget and when
it resets); a turn admitted runs to its end, bounded by ``TETHER_MAX_ROUNDS`` and
``TETHER_MAX_TOOL_CALLS``, and what it spends counts. A tool call over the per-minute budget is
refused as that call's error result, which the model or planner sees. 0 turns a budget off.

Implements the core's ``UsageBudget`` port (``tether.core.ports``).
"""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, RateLimitItemPerDay, RateLimitItemPerMinute
from limits.aio.storage import Storage
from limits.aio.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter

from tether.abuse.refusal import LimitReached, Refused, reset_at, until
from tether.abuse.storage import StorageDown, key
from tether.core import error_messages
from tether.core.messages import Usage
from tether.core.session import Owner
from tether.errors import ToolError
from tether.settings import Settings


def _user(owner: Owner) -> str:
    return key(owner.tenant, owner.user_id)


class UserBudget:
    def __init__(self, storage: Storage, settings: Settings, refused: Refused, down: StorageDown) -> None:
        self.fixed = FixedWindowRateLimiter(storage)
        self.moving = MovingWindowRateLimiter(storage)
        self.daily: list[tuple[str, RateLimitItem, str, str]] = [
            (kind, RateLimitItemPerDay(n), f"{what} of {n:,} (TETHER_USER_{kind.upper()})", code)
            for kind, n, what, code in (
                (
                    "daily_tokens",
                    settings.user_daily_tokens,
                    "the daily budget of model tokens",
                    error_messages.DAILY_TOKENS,
                ),
                (
                    "daily_model_calls",
                    settings.user_daily_model_calls,
                    "the daily budget of model calls",
                    error_messages.DAILY_MODEL_CALLS,
                ),
            )
            if n > 0
        ]
        n = settings.user_tool_calls_per_minute
        self.tool_calls = RateLimitItemPerMinute(n) if n > 0 else None
        self.refused = refused
        self.down = down

    async def admit_turn(self, owner: Owner) -> None:
        """``LimitReached`` (429) when a daily budget of the user is spent."""
        if self.down.skipping:
            return
        try:
            for kind, item, what, code in self.daily:
                if not await self.fixed.test(item, kind, _user(owner)):
                    stats = await self.fixed.get_window_stats(item, kind, _user(owner))
                    self.refused(kind)
                    raise LimitReached(
                        kind,
                        f"{what} is spent; it resets {until(stats.reset_time)}",
                        stats.reset_time - time.time(),
                        code,
                        {"limit": item.amount, "resetAt": reset_at(stats.reset_time)},
                    )
        except LimitReached:
            raise
        except Exception as exc:
            self.down(exc)

    async def charge_model(self, owner: Owner, usage: Usage | None) -> None:
        if self.down.skipping:
            return
        spent = {"daily_model_calls": 1, "daily_tokens": usage.prompt_tokens + usage.completion_tokens if usage else 0}
        try:
            for kind, item, _, _ in self.daily:
                if spent[kind] > 0:
                    await self.fixed.hit(item, kind, _user(owner), cost=spent[kind])
        except Exception as exc:
            self.down(exc)

    async def take_tool_call(self, owner: Owner) -> ToolError | None:
        if self.tool_calls is None or self.down.skipping:
            return None
        try:
            if await self.moving.hit(self.tool_calls, "tool_calls", _user(owner)):
                return None
            stats = await self.moving.get_window_stats(self.tool_calls, "tool_calls", _user(owner))
        except Exception as exc:
            self.down(exc)
            return None
        self.refused("tool_calls_per_minute")
        return ToolError(
            f"the budget of {self.tool_calls.amount} tool calls per minute (TETHER_USER_TOOL_CALLS_PER_MINUTE) "
            f"is spent; the next call is allowed {until(stats.reset_time)}",
            code=error_messages.BUDGET,
            params={"limit": self.tool_calls.amount, "seconds": max(1, math.ceil(stats.reset_time - time.time()))},
        )
