"""Abuse limits: login attempts per username and per client address, and each user's budgets for
model calls, model tokens and tool calls. The counters live in the ``limits`` package's storage
(``tether.abuse.storage``: Redis when ``TETHER_REDIS_URL`` is set, else tether's own database when
that is PostgreSQL or MariaDB, so every replica shares them; this process's memory on the
embedded SQLite database, which is one process). See docs/security.md, "Abuse limits"."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from tether.abuse.budget import UserBudget
from tether.abuse.login import EndLoginAttempts, LoginAttempt, LoginGuard, client_address
from tether.abuse.refusal import LimitReached, Refused
from tether.abuse.sql_storage import SqlStorage
from tether.abuse.storage import StorageDown, open_storage
from tether.settings import Settings


@dataclass
class AbuseLimits:
    """What the app holds (``Services.abuse``): the login guard and the users' budgets, on one storage."""

    login: LoginGuard
    budget: UserBudget

    @classmethod
    def from_settings(cls, settings: Settings, refused: Refused) -> AbuseLimits:
        storage, down = open_storage(settings), StorageDown()
        return cls(LoginGuard(storage, settings, refused, down), UserBudget(storage, settings, refused, down))

    def close(self) -> None:
        """Close the database storage's pool (the other storages hold nothing to close)."""
        if isinstance(self.login.storage, SqlStorage):
            self.login.storage.close()

    async def login_attempt(self, request: Request, username: str) -> LoginAttempt:
        """A login route's first step (``request.app.state.services.abuse``): 429 while ``username``
        or the caller's address is locked out, else the attempt, whose end the route reports."""
        attempt = await self.login.admit(username, client_address(request))
        request.state.login_attempt = attempt  # ended with the request (``EndLoginAttempts``)
        return attempt


__all__ = ["AbuseLimits", "EndLoginAttempts", "LimitReached", "LoginAttempt", "LoginGuard", "UserBudget"]
