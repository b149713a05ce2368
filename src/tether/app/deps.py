"""Request dependencies: the services container and the caller's identity.

Identity comes from a pluggable provider; the embedded default maps dev bearer tokens from
settings to (user, tenant, grants). A missing or unknown token is 401.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request

from tether.core.session import Owner
from tether.errors import Unauthorized
from tether.wiring import Services


@dataclass(frozen=True)
class Identity:
    owner: Owner
    grants: frozenset[str]


class IdentityProvider(Protocol):
    def identify(self, token: str) -> Identity | None: ...


class DevTokenProvider:
    def __init__(self, tokens: dict[str, dict[str, Any]]) -> None:
        self.tokens = tokens

    def identify(self, token: str) -> Identity | None:
        entry = self.tokens.get(token)
        if entry is None:
            return None
        return Identity(Owner(str(entry["userId"]), str(entry["tenant"])), frozenset(entry.get("grants") or ()))


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_identity(request: Request) -> Identity:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send 'Authorization: Bearer <token>'")
    provider: IdentityProvider = request.app.state.identity
    identity = provider.identify(token.strip())
    if identity is None:
        raise Unauthorized("unknown or expired bearer token")
    return identity


ServicesDep = Annotated[Services, Depends(get_services)]
IdentityDep = Annotated[Identity, Depends(get_identity)]
