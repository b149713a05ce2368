"""Login attempts, limited per username and per client address.

Only failed credentials count (an unreachable ERP or any other failure does not: an outage must
lock no one out). ``TETHER_LOGIN_MAX_FAILURES`` failures of one username within
``TETHER_LOGIN_WINDOW_S`` (``TETHER_LOGIN_MAX_ADDRESS_FAILURES`` from one address, any usernames)
lock that username (address) out: for ``TETHER_LOGIN_LOCKOUT_S``, doubled by every further
lock-out within a day, up to ``TETHER_LOGIN_LOCKOUT_MAX_S``. While locked out, ``admit`` answers
429 before anything is sent to the business system. A success forgets the username's failures
(not the address's, and not its lock-outs, which keep the next one long).

Attempts still being checked count as failures until they end (``in flight``): a guesser who
sends fifty at once gets as many to the ERP as the failures left, the rest 429 at once. Each
attempt ends when its request does (``EndLoginAttempts``, a middleware), whatever the route did.

The address is the connection's peer (``request.client``): behind a proxy, run the server so it
takes the proxy's ``X-Forwarded-For`` (uvicorn ``--forwarded-allow-ips``), never from the
request alone, or a guesser picks a new address per attempt.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fastapi import Request
from limits import RateLimitItem, RateLimitItemPerDay, RateLimitItemPerSecond
from limits.aio.storage import Storage
from limits.aio.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as Scope_

from tether.abuse.refusal import LimitReached, Refused, duration, reset_at, until
from tether.abuse.storage import StorageDown, key
from tether.core import error_messages
from tether.settings import Settings

MANY = 1_000_000  # a counter's ceiling that is never reached (lock-outs of a day)
IN_FLIGHT_S = 60  # an attempt whose process died stops counting after this


@dataclass(frozen=True)
class Scope:
    name: str  # "user" | "address"
    max_failures: int
    what: str  # how the message names it
    locked: str  # the codes of its refusals (``tether.core.error_messages``): locked out
    busy: str  # too many attempts in flight


class LoginGuard:
    def __init__(self, storage: Storage, settings: Settings, refused: Refused, down: StorageDown) -> None:
        self.storage = storage
        self.moving = MovingWindowRateLimiter(storage)
        self.fixed = FixedWindowRateLimiter(storage)
        self.window_s = settings.login_window_s
        self.lockout_s = settings.login_lockout_s
        self.lockout_max_s = settings.login_lockout_max_s
        self.scopes = (
            Scope(
                "user",
                settings.login_max_failures,
                "for this username",
                error_messages.LOGIN_LOCKED_USER,
                error_messages.LOGIN_BUSY_USER,
            ),
            Scope(
                "address",
                settings.login_max_address_failures,
                "from this address",
                error_messages.LOGIN_LOCKED_ADDRESS,
                error_messages.LOGIN_BUSY_ADDRESS,
            ),
        )
        self.refused = refused
        self.down = down
        self.lockouts = RateLimitItemPerDay(MANY)

    def _failures(self, scope: Scope) -> RateLimitItem:
        return RateLimitItemPerSecond(scope.max_failures, self.window_s)

    def _lock(self, n: int) -> RateLimitItem:
        """The n-th lock-out of the day (n ≥ 1): one hit of this item holds the lock."""
        return RateLimitItemPerSecond(1, min(self.lockout_s * 2 ** (n - 1), self.lockout_max_s))

    async def admit(self, username: str, address: str) -> LoginAttempt:
        """The attempt, or ``LimitReached`` (429) while the username or the address is locked out."""
        ids = self._ids(username, address)
        if self.down.skipping:
            return LoginAttempt(self, ids)
        try:
            for scope, ident in ids:
                if scope.max_failures <= 0:
                    continue
                n = (
                    MANY
                    - (await self.fixed.get_window_stats(self.lockouts, "login-lockouts", scope.name, ident)).remaining
                )
                if n <= 0:
                    continue
                lock = self._lock(n)
                stats = await self.moving.get_window_stats(lock, "login-lock", scope.name, ident)
                if stats.remaining <= 0:
                    self.refused(f"login_{scope.name}")
                    raise LimitReached(
                        f"login_{scope.name}",
                        f"too many failed logins {scope.what}: locked out for {duration(lock.get_expiry())} "
                        f"(lock-out {n} today; each further one doubles, up to {duration(self.lockout_max_s)}); "
                        f"try again {until(stats.reset_time)}",
                        stats.reset_time - time.time(),
                        scope.locked,
                        {"resetAt": reset_at(stats.reset_time)},
                    )
            return await self._reserve(ids)
        except LimitReached:
            raise
        except Exception as exc:  # the storage failed: the limit is off (logged), the login goes on
            self.down(exc)
        return LoginAttempt(self, ids)

    async def _reserve(self, ids: list[tuple[Scope, str]]) -> LoginAttempt:
        """Count the attempt in flight; 429 when the failures so far and the attempts in flight
        would pass the limit if they all failed."""
        attempt = LoginAttempt(self, ids)
        for scope, ident in ids:
            if scope.max_failures <= 0:
                continue
            in_flight = await self.storage.incr(_in_flight(scope, ident), IN_FLIGHT_S)
            attempt.reserved.append(_in_flight(scope, ident))
            stats = await self.moving.get_window_stats(self._failures(scope), "login-failures", scope.name, ident)
            if scope.max_failures - stats.remaining + in_flight > scope.max_failures:
                await attempt.end()
                self.refused(f"login_{scope.name}")
                raise LimitReached(
                    f"login_{scope.name}",
                    f"too many login attempts at once {scope.what}: the ones still being checked could use up "
                    f"the {scope.max_failures} failures allowed per {duration(self.window_s)}; try again in 1 s",
                    1,
                    scope.busy,
                )
        return attempt

    def _ids(self, username: str, address: str) -> list[tuple[Scope, str]]:
        return [(self.scopes[0], key(username.strip().casefold())), (self.scopes[1], key(address))]

    async def _failed(self, ids: list[tuple[Scope, str]]) -> None:
        for scope, ident in ids:
            if scope.max_failures <= 0:
                continue
            failures = self._failures(scope)
            await self.moving.hit(failures, "login-failures", scope.name, ident)
            if await self.moving.test(failures, "login-failures", scope.name, ident):
                continue
            await self.fixed.hit(self.lockouts, "login-lockouts", scope.name, ident)
            n = MANY - (await self.fixed.get_window_stats(self.lockouts, "login-lockouts", scope.name, ident)).remaining
            await self.moving.hit(self._lock(n), "login-lock", scope.name, ident)
            await self.moving.clear(failures, "login-failures", scope.name, ident)

    async def _succeeded(self, ids: list[tuple[Scope, str]]) -> None:
        scope, ident = ids[0]
        if scope.max_failures > 0:
            await self.moving.clear(self._failures(scope), "login-failures", scope.name, ident)


class LoginAttempt:
    """One admitted attempt: the route says how it ended."""

    def __init__(self, guard: LoginGuard, ids: list[tuple[Scope, str]]) -> None:
        self._guard = guard
        self._ids = ids
        self.reserved: list[str] = []  # in-flight counters this attempt holds

    async def end(self) -> None:
        """No longer in flight (idempotent)."""
        keys, self.reserved = self.reserved, []
        try:
            for k in keys:
                await self._guard.storage.incr(k, IN_FLIGHT_S, amount=-1)
        except Exception as exc:
            self._guard.down(exc)

    async def failed(self) -> None:
        """Wrong credentials: counts towards the lock-outs."""
        if self._guard.down.skipping:
            return
        try:
            await self._guard._failed(self._ids)
        except Exception as exc:
            self._guard.down(exc)
        await self.end()

    async def succeeded(self) -> None:
        if self._guard.down.skipping:
            return
        try:
            await self._guard._succeeded(self._ids)
        except Exception as exc:
            self._guard.down(exc)
        await self.end()


def _in_flight(scope: Scope, ident: str) -> str:
    return f"login-in-flight/{scope.name}/{ident}"


class EndLoginAttempts:
    """Ends the login attempt a request began (``request.state.login_attempt``) when the request
    is over, however the route left: an ERP that did not answer must not leave it in flight."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope_, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})  # shared with the routes' ``request.state``
        try:
            await self.app(scope, receive, send)
        finally:
            attempt = state.pop("login_attempt", None)
            if attempt is not None:
                await attempt.end()


def client_address(request: Request) -> str:
    return request.client.host if request.client is not None else "unknown"
