"""Tryton's own JSON-RPC, as its clients (``tryton``, ``sao``) speak it: ``POST /<db>/rpc/`` with
``{"id", "method", "params"}``; ``common.db.login`` answers ``[user_id, session, bus_url]`` and
every later call carries ``Authorization: Session base64(login:user_id:session)``.

Tryton's answers are translated here and nowhere else: a refused login and a dead session are
HTTP 401 (``RpcUnauthorised``), too many login attempts 429 (``RpcRateLimited``), a user error or
a missing access right is ``{"error": ["UserError", [message, description, domain]]}``
(``RpcUserError``, ``access`` when the message is Tryton's access refusal), a server that cannot
be reached or answers 5xx is ``RpcUnreachable``. The session string travels only in the header;
it is never logged nor put in an error's text.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass
from typing import Any

import httpx

_ACCESS_WORDS = ("you are not allowed", "不允许", "无权", "权限")  # Tryton's access refusals (ir.message), en and zh_CN


class RpcError(Exception):
    """A call Tryton did not answer with a result."""


class RpcUnreachable(RpcError):
    """Tryton could not be reached, or answered 5xx: an outage, not a refusal."""


class RpcUnauthorised(RpcError):
    """401: a wrong login, or a session Tryton no longer knows (expired, logged out)."""


class RpcRateLimited(RpcError):
    """429: Tryton locks a login out after too many failed attempts."""


class RpcFailed(RpcUnreachable):
    """Tryton answered with an exception of its own code (``[text, traceback]``), not a user error:
    an outage to the breaker like any failure, except where a caller knows what it means."""


class RpcUserError(RpcError):
    """Tryton refused the call in its own words: ``message`` (translated), ``description``."""

    def __init__(self, message: str, description: str = "", *, access: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.description = description
        self.access = access  # Tryton's access rights (groups, ir.model.access, record rules) refused it


class RpcConcurrent(RpcError):
    """Tryton's ``ConcurrencyException``: the record changed since the ``_timestamp`` the call was
    bound to (the version a proposal was made against); nothing was written."""


@dataclass(frozen=True)
class TrytonSession:
    login: str
    user_id: int
    session: str

    @property
    def token(self) -> str:
        """``base64(login:user_id:session)``: what follows ``Session `` in Tryton's header."""
        return base64.b64encode(f"{self.login}:{self.user_id}:{self.session}".encode()).decode("ascii")

    @property
    def header(self) -> str:
        return "Session " + self.token

    @classmethod
    def from_token(cls, token: str) -> TrytonSession | None:
        """The session a token carries; None for anything else (a demo ERP token, garbage)."""
        try:
            login, user_id, session = base64.b64decode(token, validate=True).decode().rsplit(":", 2)
            return cls(login, int(user_id), session)
        except ValueError:
            return None


class TrytonRpc:
    """One Tryton database's JSON-RPC endpoint (``base_url`` is the server, ``database`` its db)."""

    def __init__(self, base_url: str, database: str, timeout_s: float = 15.0) -> None:
        self.server = f"{base_url.rstrip('/')}/rpc/"  # the calls without a database (its version, its list)
        self.url = f"{base_url.rstrip('/')}/{database}/rpc/"
        self.database = database
        self._http = httpx.AsyncClient(timeout=timeout_s)
        self._ids = itertools.count(1)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def login(self, login: str, password: str, language: str = "zh_CN") -> TrytonSession:
        answer = await self._post(None, "common.db.login", [login, {"password": password}, language])
        return TrytonSession(login, int(answer[0]), str(answer[1]))

    async def version(self) -> Any:
        """The server's version (no login): whether a Tryton answers here at all."""
        return await self._post(None, "common.server.version", [], url=self.server)

    async def logout(self, session: str) -> None:
        await self._post(session, "common.db.logout", [])

    async def call(self, session: str, method: str, *params: Any, context: dict[str, Any] | None = None) -> Any:
        """``method`` (``model.sale.sale.search_read``…) as the header ``session``'s user; the
        context (language, company) goes last, as Tryton's clients send it."""
        return await self._post(session, method, [*params, context or {}])

    async def _post(self, session: str | None, method: str, params: list[Any], url: str | None = None) -> Any:
        headers = {"Authorization": session} if session else {}
        body = {"id": next(self._ids), "method": method, "params": params}
        try:
            response = await self._http.post(url or self.url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise RpcUnreachable(f"Tryton at {url or self.url} cannot be reached ({type(exc).__name__})") from None
        if response.status_code == 401 or response.status_code == 403:
            raise RpcUnauthorised(f"Tryton refused the login or session ({response.status_code})")
        if response.status_code == 429:
            raise RpcRateLimited("Tryton locked this login out after too many attempts; wait and try again")
        if response.status_code >= 500:
            raise RpcUnreachable(f"Tryton answered {response.status_code}")
        if response.status_code >= 400:
            raise RpcUserError(f"Tryton refused the request ({response.status_code})")
        try:
            answer = response.json()
        except ValueError:
            raise RpcUnreachable("Tryton answered something that is not JSON") from None
        if "error" in answer and answer["error"] is not None:
            raise _user_error(answer["error"])
        return answer.get("result")


def _user_error(error: Any) -> RpcError:
    """``["UserError", [message, description, domain]]`` (and its kin); a server-side exception is
    ``[text, traceback]``: its traceback is Tryton's, not the caller's, and is dropped."""
    if isinstance(error, list) and error and str(error[0]).startswith("ConcurrencyException"):
        return RpcConcurrent("the record was changed in Tryton since it was read")
    if isinstance(error, list) and len(error) == 2 and isinstance(error[1], list) and error[1]:
        kind, (message, *rest) = error[0], error[1]
        description = str(rest[0]) if rest and rest[0] else ""
        text = str(message)
        access = kind == "UserError" and any(w in text.lower() for w in _ACCESS_WORDS)
        if kind in ("UserError", "UserWarning", "AccessError"):
            return RpcUserError(text, description, access=access or kind == "AccessError")
        return RpcUserError(text, description)
    if isinstance(error, list) and error:
        return RpcFailed(f"Tryton failed: {str(error[0])[:200]}")
    return RpcUnreachable("Tryton failed without saying why")
