"""Model adapters behind the ``ChatModel`` port.

Importing this package stays light: the ``openai`` SDK is loaded only when an OpenAI-compatible
name is first used (``from tether.models import build_openai_model``), and the scripted test model
depends on nothing but the core.
"""

from __future__ import annotations

from typing import Any

from tether.models.openai_config import PRESETS, OpenAICompatConfig, resolve_openai_config
from tether.models.scripted import ScriptedModel, ScriptExhausted, calls, failure, text

_OPENAI_NAMES = ("OpenAICompatModel", "ModelEndpointError", "build_openai_model")

__all__ = [
    "PRESETS",
    "ModelEndpointError",
    "OpenAICompatConfig",
    "OpenAICompatModel",
    "ScriptExhausted",
    "ScriptedModel",
    "build_openai_model",
    "calls",
    "failure",
    "resolve_openai_config",
    "text",
]


def __getattr__(name: str) -> Any:
    if name in _OPENAI_NAMES:
        from tether.models import openai_compat

        return getattr(openai_compat, name)
    raise AttributeError(f"module 'tether.models' has no attribute {name!r}")
