"""The demo ERP's settings (prefix ``TETHER_ERP_``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_URL = "sqlite:///./var/erp.db"


class ErpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TETHER_ERP_", extra="ignore")

    database_url: str = Field(DEFAULT_URL, description="the ERP's own database (SQLite, PostgreSQL or MariaDB)")
    token_ttl_s: int = Field(604_800, ge=1, description="lifetime of a login token (seconds)")
    seed: Literal["auto", "off"] = Field("auto", description="auto: seed the demo company when empty; off: never")
    seed_scale: float = Field(
        1.0, gt=0, le=10, description="size of the seeded company (1.0: hundreds to thousands of rows per form)"
    )
    seed_random: int = Field(3, description="random seed of the generator (same seed and day, same data)")
    staging_ttl_s: int = Field(7 * 86_400, ge=60, description="default lifetime of a staged op before it expires")
