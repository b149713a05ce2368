"""Request dependencies: the services container and the caller's identity (``tether.app.auth``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from tether.app.auth import IdentityDep, get_identity
from tether.identity import Identity
from tether.wiring import Services


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]

__all__ = ["Identity", "IdentityDep", "ServicesDep", "get_identity", "get_services"]
