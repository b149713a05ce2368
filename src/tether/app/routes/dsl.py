"""Seed 000 §2.1: compiled DSL snapshots, their replay with overrides, and the execution log."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body

from tether.app.deps import IdentityDep, ServicesDep
from tether.core.dsl import dsl_to_json

router = APIRouter(prefix="/api/agent/dsl", tags=["dsl"])


@router.get("/{dsl_id}", summary="A compiled DSL snapshot")
async def get_dsl(dsl_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    return dsl_to_json(await services.store.get_dsl(dsl_id, who.owner))


@router.post("/{dsl_id}/execute", summary="Replay a DSL with parameter overrides, without the model")
async def execute_dsl(
    dsl_id: str,
    services: ServicesDep,
    who: IdentityDep,
    overrides: dict[str, Any] = Body(default_factory=dict, examples=[{"top_n": 20}]),
) -> dict[str, Any]:
    return await services.replayer.execute(dsl_id, who, overrides)


@router.get("/{dsl_id}/executions", summary="The DSL's execution log")
async def executions(dsl_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    await services.store.get_dsl(dsl_id, who.owner)
    return {"items": await services.store.executions(dsl_id)}
