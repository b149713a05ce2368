"""Configuration: pydantic-settings with prefix ``TETHER_``. Built by ``create_settings()``,
never a module global. Every field is listed in the README's configuration table."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DEV_TOKENS: dict[str, dict[str, Any]] = {
    "dev-alice": {"userId": "alice", "tenant": "finance-demo", "grants": []},
    "dev-bob": {"userId": "bob", "tenant": "finance-demo", "grants": []},
}


def default_packs() -> list[str]:
    packs = ["tether.packs.finance_cs.pack"]
    if os.environ.get("TETHER_ERP_EMBEDDED", "true").strip().lower() not in ("0", "false", "no", "off"):
        packs.append("tether.erp_demo.pack")
    packs.append("tether.packs.erp.pack")
    if Path("examples/pack.py").exists():
        packs.append("examples")
    return packs


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TETHER_", extra="ignore")

    database_url: str = Field("sqlite:///./var/tether.db", description="SQLAlchemy URL of tether's own database")
    packs: str = Field(
        default_factory=lambda: ",".join(default_packs()),
        description="comma-separated packs to load: module names or folder paths (default: the finance pack, "
        "the demo ERP mounted at /erp unless TETHER_ERP_EMBEDDED=false, the ERP pack, and ./examples when "
        "started from the repository root)",
    )
    model: str = Field("planner", description="planner | openai")
    model_provider: str = Field(
        "openai", description="deepseek | qwen | ollama | vllm | llamacpp | openai | custom (see docs/models.md)"
    )
    model_thinking: str = Field(
        "auto", description="auto | on | off: switch the model's thinking (reasoning) on or off, or leave it"
    )
    model_base_url: str | None = Field(None, description="OpenAI-compatible base URL (overrides the preset)")
    model_name: str | None = Field(None, description="model id (overrides the preset)")
    model_api_key: SecretStr | None = Field(None, description="API key of the model endpoint")
    model_stream: bool = Field(True, description="stream tokens as TOKEN events")
    planner_stream: bool = Field(False, description="the offline planner streams its answers as TOKEN events too")
    model_timeout_s: float = Field(60.0, description="timeout of one model request")
    skill_routing: str = Field("auto", description="model | rules | auto (rules for the planner)")
    max_rounds: int = Field(12, ge=1, description="model rounds per turn")
    max_tool_calls: int = Field(40, ge=1, description="tool calls per turn")
    turn_timeout_s: float = Field(600.0, gt=0, description="wall-clock limit of a turn")
    tool_timeout_s: float = Field(120.0, gt=0, description="default timeout of one tool call")
    model_retries: int = Field(2, ge=0, description="retries of a failed model call")
    model_backoff_s: float = Field(
        0.5, ge=0, description="wait before the first model retry, doubled for each next (Retry-After wins)"
    )
    job_timeout_s: float = Field(1800.0, gt=0, description="an async job past this fails")
    context_tokens: int = Field(
        24000,
        ge=1000,
        description="estimated tokens one model request may carry (messages and tool specs); older turns "
        "beyond it are folded into the session's rolling summary",
    )
    lease_s: float = Field(30.0, gt=0, description="a RUNNING session whose runner is silent this long is recovered")
    sweep_s: float = Field(5.0, gt=0, description="how often recovery, job expiry and op expiry run")
    approval_policies: str | None = Field(
        None,
        description="path of the approval policy YAML (docs/approvals.md): ops a rule matches wait for approvers "
        "after their confirm; read again when it changes; a file that does not parse stops the start; `none`: "
        "no approvals (unset: `tether serve` and `tether demo` on the embedded default use the shipped demo policy)",
    )
    op_ttl_s: float = Field(86_400.0, ge=60, description="a write proposal not confirmed within this expires")
    op_lease_s: float = Field(
        30.0, gt=0, description="an op executing this long without its runner is executed again (idempotently)"
    )
    replica_id: str | None = Field(
        None,
        description="this process's name on the leases it holds (unset: host-pid-random, unique per process); "
        "set it only to something unique per replica",
    )
    redis_url: SecretStr | None = Field(
        None,
        description="Redis that wakes SSE readers on every replica when an event is stored, e.g. "
        "redis://redis:6379/0 (unset: one process, in-process wake-ups); while it is down, readers poll the store",
    )
    sse_poll_s: float = Field(
        1.0, gt=0, description="an SSE reader not woken re-reads the store this often (the fallback when Redis is down)"
    )
    shutdown_grace_s: float = Field(
        20.0,
        ge=0,
        description="on SIGTERM, turns in flight get this long to finish; the rest are stopped and their leases "
        "handed back to the other replicas",
    )
    public_url: str = Field("http://127.0.0.1:8000", description="base URL async workers call back to")
    dev_tokens: dict[str, dict[str, Any]] = Field(
        default_factory=lambda: dict(DEFAULT_DEV_TOKENS), description="bearer token -> identity (dev provider)"
    )
    sse_heartbeat_s: float = Field(15.0, gt=0, description="SSE heartbeat interval")
    max_body_bytes: int = Field(
        1_048_576, ge=1024, description="largest request body accepted (413 beyond), counted as it arrives"
    )
    max_context_bytes: int = Field(32_768, ge=64, description="largest globalContext, as JSON (422 beyond)")
    max_context_depth: int = Field(6, ge=1, description="deepest nesting of objects and arrays in globalContext")
    max_context_keys: int = Field(200, ge=1, description="most object keys in globalContext, all levels together")
    log_level: str = Field("INFO", description="logging level")
    otel_endpoint: str | None = Field(
        None,
        description="OTLP/HTTP base URL traces are exported to (/v1/traces is appended), e.g. a collector at "
        "http://127.0.0.1:4318 or Langfuse at https://<host>/api/public/otel; unset: no traces",
    )
    otel_headers: SecretStr | None = Field(
        None,
        description="headers of the OTLP export, 'key=value,key2=value2' (e.g. Authorization=Basic …); never logged",
    )
    otel_capture_content: bool = Field(
        False, description="record prompts, completions, tool arguments and results (business data) on spans"
    )
    otel_service_name: str = Field("tether", description="service.name of the exported traces")
    login_max_failures: int = Field(
        5, ge=0, description="failed logins of one username within TETHER_LOGIN_WINDOW_S that lock it out (0: no limit)"
    )
    login_max_address_failures: int = Field(
        20, ge=0, description="failed logins from one client address (any usernames) that lock it out (0: no limit)"
    )
    login_window_s: int = Field(60, ge=1, description="the moving window the failed logins are counted in")
    login_lockout_s: int = Field(60, ge=1, description="the first lock-out; each further one within a day doubles")
    login_lockout_max_s: int = Field(3600, ge=1, description="the longest lock-out")
    user_daily_tokens: int = Field(
        0, ge=0, description="model tokens (prompt + completion) per user per day (0: unlimited)"
    )
    user_daily_model_calls: int = Field(0, ge=0, description="model calls per user per day (0: unlimited)")
    user_tool_calls_per_minute: int = Field(0, ge=0, description="tool calls per user per minute (0: unlimited)")
    limits_namespace: str = Field(
        "tether",
        min_length=1,
        description="prefix of the abuse counters' keys (Redis or the database); one per deployment",
    )

    @property
    def approval_policy(self) -> str | None:
        """The approval policy file in force: TETHER_APPROVAL_POLICIES, where ``none`` names none."""
        value = (self.approval_policies or "").strip()
        return None if value.lower() in ("", "none") else value

    @property
    def pack_refs(self) -> list[str]:
        return [p.strip() for p in self.packs.split(",") if p.strip()]


def create_settings(**overrides: Any) -> Settings:
    return Settings(**overrides)
