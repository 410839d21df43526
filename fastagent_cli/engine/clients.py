"""One wire client per API shape (and one scripted model per script), created on first use and
reused across turns so HTTP connections are pooled. Wire modules are imported only here, lazily:
an agent on the scripted model never imports httpx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastagent_cli.errors import ModelError
from fastagent_cli.models.scripted import load_scripted
from fastagent_cli.models.types import ModelClient, ModelInfo

__all__ = ["ClientPool"]


class ClientPool:
    def __init__(self, agent_dir: Path | None = None, override: ModelClient | None = None) -> None:
        self.agent_dir = agent_dir
        self._clients: dict[str, Any] = {}
        self._override = override

    def client_for(self, model: ModelInfo) -> ModelClient:
        if model.api == "scripted":
            if self._override is not None and model.id == "custom":
                return self._override
            key = f"scripted:{model.id}"
            if key not in self._clients:
                self._clients[key] = load_scripted(model.id, self.agent_dir)
            client: ModelClient = self._clients[key]
            return client
        if model.api not in self._clients:
            self._clients[model.api] = _make(model.api)
        client = self._clients[model.api]
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()


def _make(api: str) -> ModelClient:
    if api == "openai-completions":
        from fastagent_cli.models.openai_chat import OpenAIChatClient

        return OpenAIChatClient()
    if api == "anthropic-messages":
        from fastagent_cli.models.anthropic_messages import AnthropicMessagesClient

        anthropic: ModelClient = AnthropicMessagesClient()
        return anthropic
    if api in ("openai-responses", "openai-codex-responses"):
        from fastagent_cli.models.openai_responses import OpenAIResponsesClient

        responses: ModelClient = OpenAIResponsesClient()
        return responses
    raise ModelError(
        f'API "{api}" is not supported (supported: openai-completions, openai-responses, '
        "openai-codex-responses, anthropic-messages)"
    )
