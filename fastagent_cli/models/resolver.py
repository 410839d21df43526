"""The model port: which model a spec names, which wire client serves it, which key it uses.

:class:`ModelResolver` is what the engine is handed (it satisfies
:class:`fastagent_cli.engine.ports.ModelPort`). It owns one wire client per API shape (and one
scripted model per script), created on first use and reused across turns so HTTP connections are
pooled. Wire modules are imported here, lazily: an agent on the scripted model never imports httpx.

A model client built in code (``ScriptedModel.from_callable(fn)``, a test double) is mounted with
:meth:`ModelResolver.fixed`: it serves the agent's default model, described by :data:`FIXED_MODEL`
unless the caller says otherwise; other specs (a session's ``/model`` override) still resolve
through the registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastagent_cli.errors import ModelError
from fastagent_cli.models.credentials import NOT_NEEDED, Credential, CredentialSource, FileCredentials
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.models.scripted import load_scripted
from fastagent_cli.models.types import ModelClient, ModelInfo

if TYPE_CHECKING:
    from fastagent_cli.models.http_pool import PoolLimits

__all__ = ["FIXED_MODEL", "ModelResolver"]

FIXED_MODEL = ModelInfo(
    provider="scripted", id="custom", api="scripted", name="custom", reasoning=True, input=("text", "image")
)
"""How a fixed in-code client is described (``scripted/custom``: no key, every thinking level)."""


class ModelResolver:
    def __init__(
        self,
        model: str,
        registry: ModelRegistry | None = None,
        *,
        auth_path: Path | None = None,
        agent_dir: Path | None = None,
        credentials: CredentialSource | None = None,
        pool: PoolLimits | None = None,
    ) -> None:
        """``model`` is the default spec, resolved on first use (an unknown one fails the turn).
        ``credentials``: where keys come from (assembly passes one that renews subscription
        logins); without it, ``auth_path`` and the environment are read as they are. ``pool``:
        the wire clients' connection limits and timeouts (``[engine]``'s)."""
        self.model = model
        self.registry = registry or ModelRegistry()
        self.auth_path = auth_path
        self.agent_dir = agent_dir
        self.credentials = credentials or FileCredentials(auth_path)
        self._default: ModelInfo | None = None
        self._fixed: tuple[ModelInfo, ModelClient] | None = None
        self._clients: dict[str, Any] = {}
        self._pool = pool

    @classmethod
    def fixed(
        cls,
        client: ModelClient,
        *,
        info: ModelInfo = FIXED_MODEL,
        registry: ModelRegistry | None = None,
        auth_path: Path | None = None,
        credentials: CredentialSource | None = None,
    ) -> ModelResolver:
        """A resolver whose default model is served by ``client``."""
        resolver = cls(info.spec, registry, auth_path=auth_path, credentials=credentials)
        resolver._default = info
        resolver._fixed = (info, client)
        return resolver

    def default(self) -> ModelInfo:
        if self._default is None:
            self._default = self.registry.resolve(self.model)
        return self._default

    def resolve(self, spec: str) -> ModelInfo:
        """The model ``spec`` names; :class:`~fastagent_cli.errors.ModelError` when none."""
        return self.registry.resolve(spec)

    def specs(self) -> list[str]:
        """Every catalog and ``models.json`` spec, sorted."""
        return self.registry.specs()

    def credential(self, model: ModelInfo) -> Credential:
        """Where the key for ``model`` comes from now (no renewal, no network: for reports)."""
        if model.api == "scripted":
            return Credential(None, NOT_NEEDED)
        return self.credentials.peek(model)

    async def acquire(self, model: ModelInfo) -> Credential:
        """The key for a request right now: an expired subscription login is renewed first."""
        if model.api == "scripted":
            return Credential(None, NOT_NEEDED)
        return await self.credentials.acquire(model)

    def client_for(self, model: ModelInfo) -> ModelClient:
        if self._fixed is not None and model == self._fixed[0]:
            return self._fixed[1]
        key = f"scripted:{model.id}" if model.api == "scripted" else model.api
        client: ModelClient | None = self._clients.get(key)
        if client is None:
            client = (
                load_scripted(model.id, self.agent_dir)
                if model.api == "scripted"
                else _wire(model.api, self._pool)
            )
            self._clients[key] = client
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()


def _wire(api: str, pool: PoolLimits | None) -> ModelClient:
    if pool is None:
        from fastagent_cli.models.http_pool import DEFAULT_POOL

        pool = DEFAULT_POOL
    if api == "openai-completions":
        from fastagent_cli.models.openai_chat import OpenAIChatClient

        return OpenAIChatClient(pool=pool)
    if api == "anthropic-messages":
        from fastagent_cli.models.anthropic_messages import AnthropicMessagesClient

        anthropic: ModelClient = AnthropicMessagesClient(pool=pool)
        return anthropic
    if api in ("openai-responses", "openai-codex-responses"):
        from fastagent_cli.models.openai_responses import OpenAIResponsesClient

        responses: ModelClient = OpenAIResponsesClient(pool=pool)
        return responses
    raise ModelError(
        f'API "{api}" is not supported (supported: openai-completions, openai-responses, '
        "openai-codex-responses, anthropic-messages)"
    )
