"""The mounted ERP's password checks (``POST /login``, ``POST /ui/login``) through the host's login
limits: inside ``tether serve`` the pack hands the ERP tether's own (``tether.abuse``, per username
and per address, shared by the replicas), so a user locked out of ``/api/auth/login`` is locked out
here too, and guesses here count there. tether's own call of ``/login`` (it proxies
``/api/auth/login``, whose attempt is already counted) carries the agent key and is not counted
twice. ``tether erp serve`` alone has no gate."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from tether.erp_demo.errors import LoginFailed

T = TypeVar("T")
# the host's gate: raises a 429 ``HTTPException`` while the username or the address is locked out,
# else returns the attempt, whose ``failed()`` / ``succeeded()`` the ERP reports
LoginGate = Callable[[Request, str], Awaitable[Any]]


def from_agent(agent_key: str | None, request: Request) -> bool:
    given = request.headers.get("x-agent-key", "")
    return agent_key is not None and hmac.compare_digest(given.encode(), agent_key.encode())


async def checked(erp: Any, request: Request, username: str, check: Callable[[], T]) -> T:
    """Run the password ``check`` (sync, in the threadpool) as an attempt of the host's gate."""
    gate: LoginGate | None = erp.login_gate
    attempt = None
    if gate is not None and not from_agent(erp.agent_key, request):
        attempt = await gate(request, username)
    try:
        result = await run_in_threadpool(check)
    except LoginFailed:
        if attempt is not None:
            await attempt.failed()
        raise
    if attempt is not None:
        await attempt.succeeded()
    return result
