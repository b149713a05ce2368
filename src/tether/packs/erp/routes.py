"""The pack's HTTP routes: ``/api/auth/*`` proxies the ERP login for the chat page and the CLI.

The token the ERP returns is handed to the caller and nowhere else: it is not logged or stored.
"""

from __future__ import annotations

import contextlib
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from tether.pack import IdentityDep, ToolError, Unauthorized, Unavailable
from tether.packs.erp.client import ErpUnreachable, LoginExpired
from tether.packs.erp.identity import ErpIdentityProvider
from tether.packs.erp.tools import Erp


class Login(BaseModel):
    model_config = ConfigDict(extra="forbid")
    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=256)


def build_router(erp: Erp, provider: ErpIdentityProvider) -> APIRouter:
    router = APIRouter(prefix="/api/auth", tags=["auth"])

    @router.post("/login", summary="Log in with an ERP username and password; returns the ERP token")
    async def login(body: Login, request: Request) -> dict[str, Any]:
        # 429 while the username or the address is locked out (tether.abuse): the ERP is not asked
        attempt = await request.app.state.services.abuse.login_attempt(request, body.username)
        try:
            answer = await erp.client.login(body.username, body.password)
        except LoginExpired:
            await attempt.failed()  # only wrong credentials count, never an unreachable ERP
            raise Unauthorized("wrong ERP username or password") from None
        except ErpUnreachable as exc:  # not the person's credentials: 503, try again later
            raise Unavailable(exc.message, exc.retry_after_s, upstream="erp") from None
        except ToolError as exc:
            raise Unauthorized(f"the ERP login failed: {exc.message}") from None
        await attempt.succeeded()
        return {"token": answer.get("token"), "expiresAt": answer.get("expiresAt"), "user": answer.get("user")}

    @router.post("/logout", summary="Revoke the ERP token this request carries")
    async def logout(request: Request, who: IdentityDep) -> dict[str, Any]:
        if who.provider != provider.name or not who.credential:
            return {"ok": True, "note": "not an ERP login; nothing to revoke"}
        with contextlib.suppress(LoginExpired):  # already expired: nothing left to revoke
            try:
                await erp.client.logout(who.credential)
            except ErpUnreachable as exc:  # not revoked: the token still works once the ERP is back
                raise Unavailable(exc.message, exc.retry_after_s, upstream="erp") from None
        provider.forget(who.credential)
        return {"ok": True}

    @router.get("/me", summary="Who the bearer token is: user, tenant, granted forms (never the token)")
    async def me(who: IdentityDep) -> dict[str, Any]:
        return {
            "userId": who.owner.user_id,
            "tenant": who.owner.tenant,
            "provider": who.provider,
            "grants": sorted(who.grants),
            "profile": who.profile,
        }

    return router
