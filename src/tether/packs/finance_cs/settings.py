"""The finance pack's own settings (prefix ``TETHER_FINANCE_``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

EMBEDDED_URL = "sqlite:///./var/finance.db"


class FinanceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TETHER_FINANCE_", extra="ignore")

    database_url: str = Field(EMBEDDED_URL, description="the customer_session database (read) and the pack's state")
    seed: str = Field("auto", description="auto (seed the embedded default when empty) | yes | no")
    seed_rows: int = Field(20_000, ge=1)
    seed_days: int = Field(180, ge=1)
    worker: str = Field("inprocess", description="inprocess (analysis runs in the server) | off (`tether worker`)")
    job_timeout_s: float = Field(300.0, gt=0, description="an analysis past this ends FAILED")
    job_attempts: int = Field(2, ge=1, description="runs of a job cut off by a crash before it ends FAILED")
    job_lease_s: float = Field(
        30.0, gt=0, description="a running job's lease, renewed while it runs; a dead worker's job runs again after it"
    )
    handle_ttl_s: float = Field(24 * 3600.0, gt=0, description="how long a result handle stays valid")
    max_handle_rows: int = Field(50_000, ge=1)
    report_dir: str = Field("var/reports", description="where report files are written too")

    @property
    def should_seed(self) -> bool:
        return self.seed == "yes" or (self.seed == "auto" and self.database_url == EMBEDDED_URL)
