"""The ERP pack's settings (prefix ``TETHER_ERP_``; the demo ERP reads the same prefix)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from tether.pack import PackSettings

EMBEDDED_ERP_URL = "sqlite:///./var/erp.db"


class ErpPackSettings(PackSettings):
    model_config = SettingsConfigDict(env_prefix="TETHER_ERP_", extra="ignore")

    kind: Literal["demo", "tryton"] = Field(
        "demo",
        description="which ERP the pack talks to: the demo ERP's form API, or Tryton's JSON-RPC (then the demo ERP "
        "is not mounted, and base_url is Tryton's server, default http://127.0.0.1:8720/)",
    )
    tryton_database: str = Field("tether_demo", description="the Tryton database (kind tryton)")
    tryton_language: str = Field("zh_CN", description="the language Tryton answers in, unless the user set one")
    tryton_approvers: str = Field(
        "sale.group_sale_admin=approve.sales,account.group_account_admin=approve.finance",
        description="Tryton groups (module.xml_id) whose members hold an approval grant of the policy: "
        "group=grant, comma-separated (kind tryton)",
    )
    tryton_web_url: str | None = Field(
        None, description="Tryton's web client (sao), where one is served: a proposal's record opens there"
    )
    base_url: str | None = Field(None, description="the ERP's HTTP base URL (default: <TETHER_PUBLIC_URL>/erp)")
    embedded: bool = Field(True, description="mount the demo ERP at /erp inside tether serve")
    database_url: str = Field(
        EMBEDDED_ERP_URL, description="the ERP database (query_data and kg_search read its views)"
    )
    query_url: str | None = Field(
        None, description="a read-only account on the ERP database for query_data (default: database_url)"
    )
    me_cache_s: float = Field(5.0, ge=0, description="how long a token's /me answer is reused (seconds)")
    http_timeout_s: float = Field(15.0, gt=0, description="timeout of one ERP HTTP call")
    breaker_failures: int = Field(
        3, ge=1, description="consecutive calls that cannot reach the ERP before the next ones fail at once"
    )
    breaker_reset_s: float = Field(
        5.0, gt=0, description="how long calls fail at once before one probe is let through to the ERP (seconds)"
    )
    query_timeout_s: float = Field(5.0, gt=0, description="statement timeout of query_data")
    query_max_rows: int = Field(200, ge=1, le=10_000, description="row cap of query_data")
    result_chars: int = Field(12_000, ge=1000, description="budget of one read result shown to the model")
    check_user: str | None = Field(
        None, description="`tether doctor` logs in to the ERP as this user (with check_password), then out"
    )
    check_password: SecretStr | None = Field(None, description="the check user's password (never printed)")
    agent_key: SecretStr | None = Field(
        None,
        description="sent as X-Agent-Key on execStaging, the same key the ERP requires (embedded: a random "
        "key per process both share)",
    )
