"""Who is calling: the ``Identity`` a bearer token resolves to, and the providers that resolve it.

An identity is the stable owner (user + tenant), the granted form or tool ids, and — for
providers whose token *is* the business system's credential (the ERP) — that credential, held
for the request and the tool calls it makes only. It is never stored, logged or put in a prompt:
``credential`` is excluded from ``repr`` and from every view.

The ``Identity`` dataclass itself lives in the core (``tether.core.session``). Providers are tried in order (``ProviderChain``); the first that knows the token answers. This
module imports no web framework.
"""

from __future__ import annotations

from typing import Any, Protocol

from tether.core.session import Identity, Owner


class IdentityProvider(Protocol):
    """Resolves a bearer token to an identity, or ``None`` when it does not know the token.
    It raises ``Unauthorized`` only for a token it recognises as its own but refuses.

    ``password_login``: the path of the provider's username-and-password login (it answers
    ``{"token", …}``), or ``None`` when its tokens come from elsewhere; the chat page offers what
    the providers declare (``GET /api/auth/methods``)."""

    name: str
    password_login: str | None

    async def identify(self, token: str) -> Identity | None: ...


class DevTokenProvider:
    """Fixed bearer tokens from settings (``TETHER_DEV_TOKENS``): the embedded default's users."""

    name = "dev"
    password_login: str | None = None

    def __init__(self, tokens: dict[str, dict[str, Any]]) -> None:
        self.tokens = tokens

    async def identify(self, token: str) -> Identity | None:
        entry = self.tokens.get(token)
        if entry is None:
            return None
        owner = Owner(str(entry["userId"]), str(entry["tenant"]))
        return Identity(owner, frozenset(entry.get("grants") or ()), provider="dev")


class ProviderChain:
    """Tries each provider in order; the first identity wins."""

    name = "chain"
    password_login: str | None = None

    def __init__(self, providers: list[IdentityProvider]) -> None:
        self.providers = list(providers)

    def login_methods(self) -> list[dict[str, str]]:
        """How a person can log in: each provider's password login, in order, then a bearer token
        (any provider's: a dev token, or one obtained elsewhere)."""
        methods = [
            {"kind": "password", "provider": p.name, "url": p.password_login}
            for p in self.providers
            if p.password_login
        ]
        return [*methods, {"kind": "token"}]

    async def identify(self, token: str) -> Identity | None:
        for provider in self.providers:
            identity = await provider.identify(token)
            if identity is not None:
                return identity
        return None


__all__ = ["DevTokenProvider", "Identity", "IdentityProvider", "ProviderChain"]
