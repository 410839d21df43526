"""The built-in catalog, spec resolution, ``models.json`` and credential resolution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastagent_cli.errors import ConfigError, CredentialError, ModelError
from fastagent_cli.models.credentials import resolve_credential, resolve_value
from fastagent_cli.models.registry import ModelRegistry, parse_spec


def write_models(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "models.json"
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def test_catalog_has_the_providers_and_model_facts() -> None:
    registry = ModelRegistry()
    expected = {
        "openai",
        "anthropic",
        "openrouter",
        "groq",
        "deepseek",
        "mistral",
        "xai",
        "google",
        "ollama",
        "local",
        "openai-codex",
        "github-copilot",
    }
    assert expected <= set(registry.providers)
    apis = ("openai-completions", "openai-responses", "openai-codex-responses", "anthropic-messages")
    for provider in registry.providers.values():
        assert provider.base_url.startswith("http") and provider.models
        assert provider.api in apis
        assert provider.default_model in provider.models
        for model in provider.models.values():
            assert model.context_window > 0 and model.max_tokens > 0 and model.api in apis
    sonnet = registry.resolve("anthropic/claude-sonnet-4-5")
    assert sonnet.api == "anthropic-messages" and sonnet.reasoning and sonnet.supports_images
    assert sonnet.api_key_env == ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY") and sonnet.oauth
    codex = registry.resolve("openai-codex/gpt-5.4")
    assert codex.api == "openai-codex-responses" and codex.oauth and codex.api_key_env == ()
    copilot = registry.providers["github-copilot"]
    assert {m.api for m in copilot.models.values()} == set(apis) - {"openai-codex-responses"}
    assert copilot.models["gpt-4o"].headers["Copilot-Integration-Id"] == "vscode-chat"
    assert registry.providers["ollama"].api_key_env == ()


def test_spec_resolution() -> None:
    registry = ModelRegistry()
    assert registry.resolve("gpt-4.1-mini").spec == "openai/gpt-4.1-mini"  # bare id, unique
    assert registry.resolve("OpenAI/GPT-4.1-MINI").id == "gpt-4.1-mini"
    assert registry.resolve("openrouter/anthropic/claude-sonnet-4.5").provider == "openrouter"
    unknown_model = registry.resolve("openai/gpt-9-preview")  # a new model of a known provider
    assert unknown_model.base_url == "https://api.openai.com/v1" and unknown_model.context_window == 128_000
    assert registry.resolve("scripted/echo").api == "scripted"
    assert parse_spec("anthropic/claude-sonnet-4-5:high") == ("anthropic/claude-sonnet-4-5", "high")
    assert parse_spec("ollama/llama3.1:8b") == ("ollama/llama3.1:8b", None)
    assert parse_spec("openai/gpt-5.2:max") == ("openai/gpt-5.2", "max")  # the original's top level
    assert registry.resolve("ollama/llama3.1:8b").id == "llama3.1:8b"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope/x", 'unknown provider "nope"'),
        ("nothing-like-this", 'unknown model "nothing-like-this"'),
        ("openai/", 'names no model: use "openai/<model>"'),
        ("scripted/", "scripted model needs a name"),
        ("", "empty model spec"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        ModelRegistry().resolve(spec)


def test_specs_are_sorted_and_searchable() -> None:
    specs = ModelRegistry().specs()
    assert specs == sorted(specs) and "openai/gpt-4.1-mini" in specs
    assert all("claude" in s.lower() for s in ModelRegistry().specs("Claude"))


def test_models_json_adds_providers_and_retargets_builtins(tmp_path: Path) -> None:
    path = write_models(
        tmp_path,
        {
            "providers": {
                "vllm": {
                    "baseUrl": "http://gpu:8000/v1",
                    "api": "openai-completions",
                    "apiKey": "$VLLM_KEY",
                    "headers": {"X-Team": "agents"},
                    "compat": {"maxTokensField": "max_tokens"},
                    "models": [{"id": "qwen3-32b", "contextWindow": 32768, "reasoning": True}],
                },
                "openai": {"baseUrl": "https://proxy.internal/v1"},
                "anthropic": {"models": [{"id": "claude-next", "maxTokens": 1000}]},
            }
        },
    )
    registry = ModelRegistry(path)
    qwen = registry.resolve("vllm/qwen3-32b")
    assert qwen.base_url == "http://gpu:8000/v1" and qwen.context_window == 32768 and qwen.reasoning
    assert qwen.max_tokens == 16_384 and qwen.headers == {"X-Team": "agents"}
    assert qwen.compat["maxTokensField"] == "max_tokens" and qwen.api_key == "$VLLM_KEY"
    retargeted = registry.resolve("openai/gpt-4.1-mini")
    assert retargeted.base_url == "https://proxy.internal/v1"
    assert retargeted.context_window == ModelRegistry().resolve("openai/gpt-4.1-mini").context_window
    assert registry.resolve("anthropic/claude-next").max_tokens == 1000
    assert registry.resolve("anthropic/claude-sonnet-4-5").api == "anthropic-messages"  # still there


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{not json", "invalid JSON at line 1"),
        ({"models": []}, 'expected {"providers"'),
        (
            {"providers": {"x": {"baseUrl": "http://h", "api": "openai-completions"}}},
            "needs baseUrl, api and models",
        ),
        (
            {"providers": {"x": {"baseUrl": "http://h", "api": "grpc", "models": [{"id": "m"}]}}},
            "not supported",
        ),
        (
            {"providers": {"x": {"baseUrl": "http://h", "api": "openai-completions", "models": [{}]}}},
            'string "id"',
        ),
        ({"providers": {"openai": {"baseURL": "http://h"}}}, "unknown key 'baseURL'"),
        ({"providers": {"openai": {"baseUrl": 5}}}, "baseUrl must be a string"),
    ],
)
def test_a_malformed_models_json_names_the_file(tmp_path: Path, doc: object, message: str) -> None:
    path = write_models(tmp_path, doc)
    with pytest.raises(ConfigError) as info:
        ModelRegistry(path)
    assert str(path) in info.value.message and message in info.value.message


def test_api_key_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_KEY", "from-env")
    assert resolve_value("$TEAM_KEY") == "from-env"
    assert resolve_value("${TEAM_KEY}") == "from-env"
    assert resolve_value("TEAM_KEY") == "from-env"  # pi: a bare name of a set variable
    assert resolve_value("sk-literal") == "sk-literal"
    assert resolve_value("!printf 'from-command'") == "from-command"
    with pytest.raises(CredentialError, match="exited with 3"):
        resolve_value("!exit 3")


def test_credential_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = ModelRegistry().resolve("openai/gpt-4.1-mini")
    auth = tmp_path / "auth.json"
    assert resolve_credential(model, auth).source == "(none found)"
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    assert resolve_credential(model, auth) == resolve_credential(model, None)
    assert resolve_credential(model, auth).source == "OPENAI_API_KEY"
    auth.write_text(json.dumps({"openai": {"type": "api_key", "key": "stored-key"}}))
    stored = resolve_credential(model, auth)
    assert stored.key == "stored-key" and stored.source == f"stored credential ({auth})"
    ollama = ModelRegistry().resolve("ollama/llama3.2")
    assert resolve_credential(ollama, auth).source == "not needed"
    auth.write_text("{broken")
    with pytest.raises(CredentialError, match="not valid JSON"):
        resolve_credential(model, auth)
