"""The caller's identity as a FastAPI dependency: ``Authorization: Bearer <token>`` resolved by
the app's identity provider (``app.state.identity``). A missing or unknown token is 401.

Packs' routes use ``IdentityDep`` through ``tether.pack``; the token itself is kept on the
identity (``credential``) for the request only.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from tether.errors import Unauthorized
from tether.identity import Identity, IdentityProvider


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send 'Authorization: Bearer <token>'")
    return token.strip()


async def get_identity(request: Request) -> Identity:
    token = bearer_token(request)
    provider: IdentityProvider = request.app.state.identity
    identity = await provider.identify(token)
    if identity is None:
        raise Unauthorized("unknown or expired bearer token")
    return identity


IdentityDep = Annotated[Identity, Depends(get_identity)]
