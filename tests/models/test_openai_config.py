"""Provider presets and config resolution (no SDK, no network)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tether.errors import ConfigError
from tether.models.openai_config import NO_KEY, redact_url, resolve_openai_config


@pytest.mark.parametrize(
    ("provider", "base_url", "model"),
    [
        ("deepseek", "https://api.deepseek.com/v1", "deepseek-chat"),
        ("qwen", "https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen-plus"),
        ("openai", "https://api.openai.com/v1", "gpt-4o-mini"),
    ],
)
def test_presets(provider: str, base_url: str, model: str) -> None:
    config = resolve_openai_config(provider, api_key="sk-x")
    assert (config.provider, config.base_url, config.model) == (provider, base_url, model)


def test_ollama_needs_a_model_but_no_key() -> None:
    config = resolve_openai_config("Ollama", model="qwen2.5:7b")
    assert config.base_url == "http://127.0.0.1:11434/v1"
    assert config.api_key == "ollama"
    with pytest.raises(ConfigError, match="no model name"):
        resolve_openai_config("ollama")


def test_caller_values_win_and_custom_endpoints_work() -> None:
    config = resolve_openai_config("deepseek", base_url="http://proxy:8080/v1/", model="deepseek-reasoner", api_key="k")
    assert config.base_url == "http://proxy:8080/v1" and config.model == "deepseek-reasoner"
    vllm = resolve_openai_config("vllm", base_url="http://gpu-box:8000/v1", model="Qwen2.5-72B")
    assert vllm.api_key == NO_KEY and vllm.provider == "vllm"


def test_bad_configs_are_reported() -> None:
    with pytest.raises(ConfigError, match="unknown model provider"):
        resolve_openai_config("mystery")
    with pytest.raises(ConfigError, match="API key"):
        resolve_openai_config("openai")
    with pytest.raises(ConfigError, match="http"):
        resolve_openai_config(base_url="ftp://x/v1", model="m")
    with pytest.raises(ConfigError, match="timeout"):
        resolve_openai_config("openai", api_key="k", timeout_s=0)


def test_secrets_stay_out_of_repr_and_urls() -> None:
    config = resolve_openai_config("openai", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(config)
    assert redact_url("https://user:pw@host:8443/v1") == "https://host:8443/v1"
    assert redact_url("http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434/v1"


def test_importing_tether_models_does_not_load_the_sdk() -> None:
    code = "import sys, tether.models; assert 'openai' not in sys.modules, 'openai imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("provider", "base_url"), [("vllm", "http://127.0.0.1:8000/v1"), ("llamacpp", "http://127.0.0.1:8080/v1")]
)
def test_self_hosted_presets_need_no_key(provider: str, base_url: str) -> None:
    config = resolve_openai_config(provider, model="qwen3")
    assert (config.base_url, config.api_key, config.thinking) == (base_url, NO_KEY, "auto")


def test_thinking_is_checked() -> None:
    assert resolve_openai_config("deepseek", api_key="k", thinking=" ON ").thinking == "on"
    with pytest.raises(ConfigError, match="thinking must be one of auto, on, off"):
        resolve_openai_config("deepseek", api_key="k", thinking="maybe")
