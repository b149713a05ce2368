"""The ERP port's adapter that ``TETHER_ERP_KIND`` names (port.py): the demo ERP's form API
(``client.ErpClient``) or Tryton's JSON-RPC (``tryton_client.TrytonClient``)."""

from __future__ import annotations

from tether.pack import ConfigError, process_secret
from tether.packs.erp.breaker import CircuitBreaker
from tether.packs.erp.client import ErpClient
from tether.packs.erp.port import ErpPort
from tether.packs.erp.settings import ErpPackSettings

TRYTON_URL = "http://127.0.0.1:8720/"  # `tether tryton serve`'s default


def approvers_of(text: str) -> dict[str, str]:
    """``sale.group_sale_admin=approve.sales,…`` → {Tryton group: grant}."""
    pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
    if any(len(p) != 2 or "." not in p[0] or not p[1].strip() for p in pairs):
        raise ConfigError(f"TETHER_ERP_TRYTON_APPROVERS: write module.group=grant, comma-separated (got {text[:80]!r})")
    return {group.strip(): grant.strip() for group, grant in pairs}


def open_client(settings: ErpPackSettings, public_url: str, timeout_s: float | None = None) -> ErpPort:
    breaker = CircuitBreaker(settings.breaker_failures, settings.breaker_reset_s)
    timeout = timeout_s or settings.http_timeout_s
    if settings.kind == "tryton":
        from tether.packs.erp.tryton_client import TrytonClient

        url = settings.base_url or TRYTON_URL
        return TrytonClient(
            url, settings.tryton_database, settings.tryton_language, timeout, breaker=breaker,
            web_url=settings.tryton_web_url, approvers=approvers_of(settings.tryton_approvers),
        )  # fmt: skip
    base_url = settings.base_url or f"{public_url.rstrip('/')}/erp"
    agent_key = settings.agent_key.get_secret_value() if settings.agent_key else None
    if not agent_key and settings.embedded:  # the demo ERP mounted in this process holds the same
        agent_key = process_secret("erp-agent-key")
    return ErpClient(base_url, timeout_s=timeout, agent_key=agent_key, breaker=breaker)
