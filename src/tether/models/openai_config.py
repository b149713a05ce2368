"""Settings for the OpenAI-compatible adapter: provider presets and the resolved config.

Kept apart from ``openai_compat`` so settings and the CLI can list presets and validate a
configuration without importing the ``openai`` SDK. Nothing here reads the environment; the
settings layer passes values in. The API key is never part of a ``repr`` or an error message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from tether.errors import ConfigError
from tether.models.providers import PROVIDERS, THINKING_VALUES, Provider, Thinking, provider_profile

PRESETS = PROVIDERS  # the known servers by name (see providers.py for what each needs)

# Self-hosted servers (vLLM, llama.cpp, LM Studio) usually accept any bearer token; the SDK
# insists on one, so a custom endpoint without a key gets this placeholder.
NO_KEY = "no-key"


@dataclass(frozen=True, slots=True)
class OpenAICompatConfig:
    """Everything ``OpenAICompatModel`` needs. Build it with ``resolve_openai_config``."""

    provider: str
    base_url: str
    model: str
    api_key: str = field(repr=False)
    timeout_s: float = 60.0
    stream: bool = True
    temperature: float | None = None
    stream_usage: bool = True  # ask for a final usage chunk (stream_options.include_usage)
    thinking: Thinking = "auto"  # TETHER_MODEL_THINKING: switch the model's thinking on/off, or leave it

    @property
    def profile(self) -> Provider:
        """The server's wire rules (reasoning round trip, ignored fields, thinking switch)."""
        return provider_profile(self.provider)

    @property
    def display_url(self) -> str:
        """The base URL without any user:password part, safe to show in messages and logs."""
        return redact_url(self.base_url)


def resolve_openai_config(
    provider: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    *,
    timeout_s: float = 60.0,
    stream: bool = True,
    temperature: float | None = None,
    stream_usage: bool = True,
    thinking: str = "auto",
) -> OpenAICompatConfig:
    """Fill the gaps from the provider's preset and check the result; raise ``ConfigError``.

    ``provider`` is a preset name, or any other label (e.g. ``"vllm"``) when ``base_url`` is given.
    """
    name = (provider or "custom").strip().lower()
    preset = PRESETS.get(name)
    if preset is None and not base_url:
        known = ", ".join(sorted(PRESETS))
        raise ConfigError(f"unknown model provider {provider!r}: use one of {known}, or give a base_url")
    mode = thinking.strip().lower()
    if mode not in THINKING_VALUES:
        raise ConfigError(f"model thinking must be one of {', '.join(THINKING_VALUES)}, got {thinking!r}")
    url = base_url or (preset.base_url if preset and preset.base_url else "")
    if urlsplit(url).scheme not in ("http", "https"):
        raise ConfigError(f"model base_url must be an http(s) URL, got {redact_url(url)!r}")
    chosen_model = model or (preset.model if preset else None)
    if not chosen_model:
        raise ConfigError(f"no model name given for provider {name!r}")
    key = api_key or (preset.api_key if preset else NO_KEY)
    if not key:
        raise ConfigError(f"no API key given for model provider {name!r}")
    if timeout_s <= 0:
        raise ConfigError("model timeout must be positive")
    return OpenAICompatConfig(
        provider=name,
        base_url=url.rstrip("/"),
        model=chosen_model,
        api_key=key,
        timeout_s=timeout_s,
        stream=stream,
        temperature=temperature,
        stream_usage=stream_usage,
        thinking=mode,
    )


def redact_url(url: str) -> str:
    """Drop credentials embedded in a URL (``https://user:secret@host``)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
