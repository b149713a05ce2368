"""Seed 000 §2.2: the async tool callback, authenticated with the job's callback token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Header

from tether.app.deps import ServicesDep
from tether.app.schemas import ToolCallback

router = APIRouter(prefix="/api/agent", tags=["runtime"])


@router.post(
    "/tool-callback",
    summary="Deliver an async job's result",
    description="Authenticate with the per-job token handed out with the job, in header X-Tether-Callback-Token. "
    "Unknown job: 404; wrong or missing token: 401; a repeated callback: 200 with duplicate=true.",
)
async def tool_callback(
    body: ToolCallback,
    services: ServicesDep,
    x_tether_callback_token: str | None = Header(None),
) -> dict[str, Any]:
    error = body.error
    if body.status == "FAILED" and not error:
        error = str((body.payload or {}).get("error", "the job failed")) if isinstance(body.payload, dict) else None
    return await services.runtime.callback(
        body.externalJobId, x_tether_callback_token, body.status, body.payload, error
    )
