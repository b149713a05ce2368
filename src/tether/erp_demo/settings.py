"""The demo ERP's settings (prefix ``TETHER_ERP_``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from tether.pack import process_secret

DEFAULT_URL = "sqlite:///./var/erp.db"
AGENT_KEY_NAME = "erp-agent-key"  # the ERP pack asks process_secret for the same name


class ErpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TETHER_ERP_", extra="ignore")

    kind: Literal["demo", "tryton"] = Field(
        "demo", description="the ERP the ERP pack talks to; tryton: the demo ERP is not mounted in tether serve"
    )
    database_url: str = Field(DEFAULT_URL, description="the ERP's own database (SQLite, PostgreSQL or MariaDB)")
    token_ttl_s: int = Field(604_800, ge=1, description="lifetime of a login token (seconds)")
    seed: Literal["auto", "off"] = Field("auto", description="auto: seed the demo company when empty; off: never")
    seed_scale: float = Field(
        1.0, gt=0, le=10, description="size of the seeded company (1.0: hundreds to thousands of rows per form)"
    )
    seed_random: int = Field(3, description="random seed of the generator (same seed and day, same data)")
    staging_ttl_s: int = Field(7 * 86_400, ge=60, description="default lifetime of a staged op before it expires")
    agent_key: SecretStr | None = Field(
        None,
        description="the agent backend's key: /ai/execStaging needs it in X-Agent-Key, so a user's token alone "
        "cannot carry out an op the chat has not confirmed (embedded: a random key per process; "
        "unset on a separate ERP: any holder of the user's token may)",
    )


def agent_key_of(configured: SecretStr | None, embedded: bool) -> str | None:
    """The configured key; mounted inside ``tether serve`` without one, the process's own (the ERP
    pack sends the same, ``tether.pack.process_secret``); otherwise none."""
    if configured is not None and configured.get_secret_value():
        return configured.get_secret_value()
    return process_secret(AGENT_KEY_NAME) if embedded else None
