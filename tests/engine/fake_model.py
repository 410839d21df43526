"""An engine agent whose model is a fake provider speaking the real wire format over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from fastagent_cli.assembly import create_agent
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.sessions.store import SessionStore
from tests.fakes.fake_providers import FakeOpenAI

KEY = "sk-live-0123456789abcdefSECRET"


def agent_on_fake(
    fake: FakeOpenAI, tmp_path: Path, *, api_key: str = KEY, sessions: SessionStore | None = None
) -> EngineAgent:
    """``fake/m`` through a ``models.json`` aimed at ``fake`` (key ``api_key``), one fast retry."""
    models = tmp_path / "models.json"
    provider = {
        "baseUrl": fake.base_url,
        "api": "openai-completions",
        "apiKey": api_key,
        "models": [{"id": "m"}],
    }
    models.write_text(json.dumps({"providers": {"fake": provider}}))
    return create_agent(
        model="fake/m",
        registry=ModelRegistry(models),
        retry=RetryPolicy(1, 1, 5),
        auth_path=tmp_path / "auth.json",
        sessions=sessions,
    )
