"""``GET /api/auth/methods``: how a person can log in here, for the chat page's login dialog —
each identity provider's username-and-password login (the ERP pack's ``/api/auth/login``), then a
bearer token. No token needed; it says which logins exist, nothing about any user."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

router = APIRouter(prefix="/api/auth", tags=["auth"])


@router.get("/methods", summary="The login methods this server offers (password logins, bearer token)")
async def login_methods(request: Request) -> dict[str, Any]:
    return {"methods": request.app.state.identity.login_methods()}
