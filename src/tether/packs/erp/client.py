"""The ERP adapter: a thin HTTP client of the ERP's own API (seed 003 §2: tools are HTTP clients
sending the same requests as the ERP's front end). Pointing tether at another ERP means another
client with these methods, not another design.

The user's token is an argument of every call and goes only into the ``Authorization`` header;
it is never logged, cached by value or put in an error message. ERP failures are translated
here: 401 → ``LoginExpired``; an ERP that cannot be reached (connection refused, timeout, a
gateway's 502/503/504) → ``ErpUnreachable``, counted by the circuit breaker (``breaker.py``),
which then fails calls fast until a probe gets through; other refusals → ``ToolError`` with the
ERP's message.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from typing import Any

import httpx

from tether.pack import Op, ToolError, fingerprint_of
from tether.packs.erp import messages
from tether.packs.erp.breaker import CircuitBreaker

log = logging.getLogger("tether.erp")
_MAX_CONFIGS = 4096  # cached (user, form) configs before the expired ones are dropped
UNREACHABLE_MESSAGE = "ERP 暂时无法访问，请稍后重试。(The ERP cannot be reached right now; try again shortly.)"
GATEWAY_STATUSES = frozenset({502, 503, 504})  # a proxy in front of the ERP saying it is down


class LoginExpired(ToolError):
    """The ERP refused the user's token (expired or logged out)."""

    def __init__(self) -> None:
        super().__init__("the ERP login has expired; log in again", retryable=False, code=messages.LOGIN_EXPIRED)


class ErpUnreachable(ToolError):
    """The ERP could not be reached (or the breaker is open): an outage, not a refusal. Retryable;
    ``retry_after_s`` is when trying again is worth it."""

    def __init__(self, retry_after_s: int, reason: str) -> None:
        super().__init__(
            UNREACHABLE_MESSAGE, retryable=True, code=messages.UNREACHABLE, params={"seconds": retry_after_s}
        )
        self.retry_after_s = retry_after_s
        self.reason = reason  # for logs and tests: the transport error's name, "circuit open", "HTTP 503"


class ErpRefused(ToolError):
    """The ERP answered with an error status other than 401; ``status`` is that status."""

    def __init__(self, status: int, message: str, erp_code: Any = None) -> None:
        # the ERP's own words go to the English sentence only: they are the ERP's language, not the person's
        params = {"status": status, "reason": message[:200]}
        super().__init__(f"the ERP refused the request ({status}): {message}", code=messages.REFUSED, params=params)
        self.status = status
        self.erp_code = erp_code  # the answer's own ``code`` (-3: the staged op differs from what was confirmed)


class ErpClient:
    def __init__(
        self,
        base_url: str,
        timeout_s: float = 15.0,
        metadata_ttl_s: float = 300.0,
        agent_key: str | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.breaker = breaker or CircuitBreaker()
        self._agent = {"X-Agent-Key": agent_key} if agent_key else {}  # execStaging: the agent backend's call
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout_s)
        self._metadata_ttl_s = metadata_ttl_s
        # A form's config is the caller's: its options (warehouses, salespeople) are the caller's
        # tenant's rows, so an entry is keyed by who asked (a digest of the token), never shared.
        self._configs: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        self._forms: tuple[float, list[dict[str, Any]]] | None = None

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(
        self, method: str, path: str, token: str | None, agent: bool = False, **kwargs: Any
    ) -> dict[str, Any]:
        headers = {"Authorization": token} if token else {}
        if agent:
            headers.update(self._agent)
        breaker = self.breaker
        if not breaker.admit():
            raise ErpUnreachable(breaker.retry_after_s(), "circuit open")
        try:
            response = await self._http.request(method, path, headers=headers, **kwargs)
        except httpx.HTTPError as exc:
            raise self._unreachable(type(exc).__name__) from None
        except asyncio.CancelledError:
            breaker.abandoned()
            raise
        if response.status_code in GATEWAY_STATUSES:
            raise self._unreachable(f"HTTP {response.status_code}")
        if breaker.opened_at is not None:
            log.info("the ERP answers again; calls go through")
        breaker.succeeded()
        if response.status_code == 401:
            raise LoginExpired()
        try:
            body = response.json()
        except ValueError:
            body = {"msg": response.text[:200]}
        if response.status_code >= 400:
            message = body.get("msg") or body.get("error") or body.get("detail") or response.reason_phrase
            raise ErpRefused(response.status_code, str(message), body.get("code"))
        return body if isinstance(body, dict) else {"data": body}

    def _unreachable(self, reason: str) -> ErpUnreachable:
        """A call that could not reach the ERP: counted, logged when it opens the breaker (the
        reason and the ERP's address only, never a token)."""
        was_open = self.breaker.opened_at is not None
        self.breaker.failed()
        if self.breaker.opened_at is not None and not was_open:
            log.warning(
                "the ERP at %s cannot be reached (%s, %d calls in a row); calls fail at once for %gs, then one probe",
                self.base_url,
                reason,
                self.breaker.consecutive,
                self.breaker.reset_s,
            )
        return ErpUnreachable(self.breaker.retry_after_s(), reason)

    # ---- identity ---------------------------------------------------------------------------------

    async def login(self, username: str, password: str) -> dict[str, Any]:
        """With the agent key: this login already passed tether's login limits (``/api/auth/login``),
        so the mounted ERP does not count it a second time."""
        return await self._call("POST", "/login", None, agent=True, json={"username": username, "password": password})

    async def logout(self, token: str) -> dict[str, Any]:
        return await self._call("POST", "/logout", token)

    async def me(self, token: str) -> dict[str, Any]:
        return await self._call("GET", "/me", token)

    # ---- metadata ---------------------------------------------------------------------------------

    async def forms(self, token: str) -> list[dict[str, Any]]:
        """Every form of the ERP (not filtered by grants: the ERP does not know them)."""
        now = time.monotonic()
        if self._forms is not None and now - self._forms[0] < self._metadata_ttl_s:
            return self._forms[1]
        body = await self._call("GET", "/forms", token)
        forms = list(body.get("forms") or body.get("data") or [])
        self._forms = (now, forms)
        return forms

    async def config(self, token: str, form_id: str) -> dict[str, Any]:
        """The form's config as ``token``'s user sees it (cached per user, never across users)."""
        now = time.monotonic()
        key = (hashlib.sha256(token.encode()).hexdigest(), form_id)
        cached = self._configs.get(key)
        if cached is not None and now - cached[0] < self._metadata_ttl_s:
            return cached[1]
        body = await self._call("GET", f"/forms/{form_id}/config", token)
        if len(self._configs) >= _MAX_CONFIGS:
            self._configs = {k: v for k, v in self._configs.items() if now - v[0] < self._metadata_ttl_s}
            if len(self._configs) >= _MAX_CONFIGS:
                self._configs.clear()
        self._configs[key] = (now, body)
        return body

    # ---- reads ------------------------------------------------------------------------------------

    async def read(self, token: str, form_id: str, params: dict[str, Any], page: int, page_size: int) -> dict[str, Any]:
        """Rows of a form. ``params`` must already be whitelisted: the ERP binds every key by name."""
        body = {"sFormId": form_id, "pageNum": page, "pageSize": page_size, **params}
        answer = await self._call("POST", "/getBusinessDataByFormcustomId", token, json=body)
        dataset = answer.get("dataset") or {}
        return {"rows": list(dataset.get("rows") or []), "total": int(dataset.get("total") or 0)}

    async def record(self, token: str, form_id: str, record_id: str) -> dict[str, Any]:
        return await self._call("GET", f"/getBusinessDataById/{form_id}/{record_id}", token)

    # ---- staging (seed §10): drafts as the user, executed only after a person's confirm -----------

    async def stage(self, token: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._call("POST", "/ai/staging", token, agent=True, json=body)

    async def staged(self, token: str, op: Op) -> dict[str, Any]:
        return await self._call("GET", f"/ai/staging/{op.op_id}", token)

    async def exec_staging(self, token: str, op: Op, mode: str) -> dict[str, Any]:
        """Execute or validate, bound to the fingerprint of what was confirmed and approved: the
        ERP runs its staged row only when that row still has it."""
        body = {"mode": mode, "fingerprint": fingerprint_of(op)}
        return await self._call("POST", f"/ai/execStaging/{op.op_id}", token, agent=True, json=body)

    async def revise_staging(self, token: str, op_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._call("POST", f"/ai/reviseStaging/{op_id}", token, agent=True, json=body)

    async def cancel_staging(self, token: str, op: Op) -> dict[str, Any]:
        return await self._call("POST", f"/ai/cancelStaging/{op.op_id}", token, agent=True)
