"""``GET /metrics``: Prometheus text exposition of the app's own registry (``tether.telemetry.metrics``).

Unauthenticated, as scrapers expect; it holds counts and latencies labelled by tool, model,
outcome and state only — no user, session or business data. Gauges that describe stored state
(async jobs waiting, ops by state) are read from the store at scrape time.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from tether.app.deps import ServicesDep
from tether.telemetry.metrics import CONTENT_TYPE

router = APIRouter(tags=["meta"])


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(services: ServicesDep) -> Response:
    m = services.metrics
    m.jobs_waiting.set(await services.store.count_pending_jobs())
    m.set_ops(await services.ops.store.count_by_status())
    return Response(m.render(), media_type=CONTENT_TYPE)
