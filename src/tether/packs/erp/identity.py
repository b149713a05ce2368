"""The ``erp`` identity provider: the bearer token tether receives *is* the user's ERP token.

It is resolved through the ERP's ``/me`` to user + brand + subsidiary + granted form ids, and
the answer is reused for a few seconds (``TETHER_ERP_ME_CACHE_S``). The cache is keyed by an
HMAC of the token under a key that lives only in this process's memory, so not even a hash of
the token is kept anywhere an attacker could test guesses against. The token itself travels on
the identity as ``credential`` for the request and its tool calls, and is never stored.

An ERP that cannot be reached is ``Unavailable`` (503 with ``Retry-After``), not an unknown token
(401): the caller's login is still good. The cache is no grace period: an entry past
``cache_s`` is not served while the ERP is down, so a token revoked there is refused within
``cache_s`` of its revocation once the ERP answers again, and is never honoured for longer.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from typing import Any

from tether.pack import Identity, Owner, ToolError, Unavailable
from tether.packs.erp.client import UNREACHABLE_MESSAGE, ErpRefused, ErpUnreachable, LoginExpired
from tether.packs.erp.port import ErpPort

PROVIDER = "erp"


def tenant_of(brands_id: Any, subsidiary_id: Any) -> str:
    return f"erp-{brands_id}-{subsidiary_id}"


def brand_of(tenant: str) -> int | None:
    """The brand id of an ERP tenant string, None for other tenants."""
    parts = tenant.split("-")
    if len(parts) == 3 and parts[0] == "erp" and parts[1].isdigit():
        return int(parts[1])
    return None


def subsidiary_of(tenant: str) -> int | None:
    """The subsidiary id of an ERP tenant string, None for other tenants."""
    parts = tenant.split("-")
    if len(parts) == 3 and parts[0] == "erp" and parts[2].isdigit():
        return int(parts[2])
    return None


class ErpIdentityProvider:
    name = PROVIDER
    password_login: str | None = "/api/auth/login"  # the pack's route (routes.py): the ERP login, proxied

    def __init__(self, client: ErpPort, cache_s: float = 5.0, max_entries: int = 10_000) -> None:
        self.client = client
        self.cache_s = cache_s
        self.max_entries = max_entries
        self._key = secrets.token_bytes(32)
        self._cache: dict[bytes, tuple[float, Identity]] = {}

    def _slot(self, token: str) -> bytes:
        return hmac.new(self._key, token.encode(), hashlib.sha256).digest()

    async def identify(self, token: str) -> Identity | None:
        """The door's question: None for a token the ERP refuses; ``Unavailable`` when the ERP
        cannot be reached (the login may well be good)."""
        try:
            return await self.lookup(token)
        except LoginExpired:
            return None
        except ErpUnreachable as exc:  # an outage: the session and the cached identity stay as they are
            raise Unavailable(exc.message, exc.retry_after_s, upstream="erp") from None
        except ErpRefused as exc:
            if exc.status >= 500:  # the ERP is up but failing: not the caller's login either
                raise Unavailable(UNREACHABLE_MESSAGE, self.client.breaker.retry_after_s(), upstream="erp") from None
            return None
        except ToolError:
            return None  # the ERP answered but refused /me: the token cannot be trusted

    async def lookup(self, token: str) -> Identity:
        """A tool's question: the identity, or the client's own errors (``LoginExpired``,
        ``ErpUnreachable``, ``ToolError``) for the tool to report as it reports every ERP call."""
        slot = self._slot(token)
        now = time.monotonic()
        hit = self._cache.get(slot)
        if hit is not None and now - hit[0] < self.cache_s:
            return _with_credential(hit[1], token)
        try:
            me = await self.client.me(token)
        except LoginExpired:
            self._cache.pop(slot, None)
            raise
        identity = identity_from_me(me)
        if len(self._cache) >= self.max_entries:
            self._cache.clear()
        self._cache[slot] = (now, identity)
        return _with_credential(identity, token)

    def forget(self, token: str) -> None:
        self._cache.pop(self._slot(token), None)


def identity_from_me(me: dict[str, Any]) -> Identity:
    user_id = str(me["userId"])
    brands, subsidiary = me.get("brandsId"), me.get("subsidiaryId")
    profile = {
        "name": me.get("name") or user_id,
        "username": me.get("username") or user_id,
        "brandsId": brands,
        "subsidiaryId": subsidiary,
        "jurisdiction": me.get("jurisdiction"),
    }
    grants = frozenset(str(f) for f in me.get("sAuthsId") or ())
    return Identity(Owner(user_id, tenant_of(brands, subsidiary)), grants, provider=PROVIDER, profile=profile)


def _with_credential(identity: Identity, token: str) -> Identity:
    return Identity(identity.owner, identity.grants, token, identity.provider, identity.profile)
