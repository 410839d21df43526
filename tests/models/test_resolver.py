"""The model port: the default model, a fixed in-code client, credentials and pooled clients."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastagent_cli.errors import ModelError
from fastagent_cli.models.credentials import missing_hint
from fastagent_cli.models.resolver import FIXED_MODEL, ModelResolver
from fastagent_cli.models.scripted import ScriptedModel


async def test_a_fixed_client_serves_the_default_model_only() -> None:
    client = ScriptedModel.from_callable(lambda request: "fixed")
    resolver = ModelResolver.fixed(client)
    assert resolver.default() is FIXED_MODEL and FIXED_MODEL.spec == "scripted/custom"
    assert resolver.client_for(resolver.default()) is client
    assert not resolver.credential(resolver.default()).missing
    echo = resolver.resolve("scripted/echo")
    assert resolver.client_for(echo) is not client  # a session's override still resolves normally
    assert resolver.client_for(echo) is resolver.client_for(echo)
    await resolver.aclose()


def test_the_default_is_resolved_when_first_needed() -> None:
    resolver = ModelResolver("nosuch/model")  # building never fails: a turn reports it
    with pytest.raises(ModelError, match='unknown provider "nosuch"'):
        resolver.default()
    assert ModelResolver("openai/gpt-4.1-mini").default().spec == "openai/gpt-4.1-mini"


def test_a_missing_key_is_a_property_not_a_string(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    resolver = ModelResolver("openai/gpt-4.1-mini", auth_path=tmp_path / "auth.json")
    model = resolver.default()
    missing = resolver.credential(model)
    assert missing.missing and missing.key is None and missing.source == "(none found)"
    assert missing_hint(model) == "set OPENAI_API_KEY, or run `fastagent login openai`"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    found = resolver.credential(model)
    assert not found.missing and (found.key, found.source) == ("sk-test", "OPENAI_API_KEY")
    local = resolver.credential(resolver.resolve("ollama/llama3.2"))
    assert (local.needed, local.missing) == (False, False)
