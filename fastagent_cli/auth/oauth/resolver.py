"""The credential source every assembled agent uses: the file and the environment, with expired
subscription logins renewed right before a request.

Renewal is the part that must not go wrong. Refresh tokens are single-use, and several processes
(two ``invoke``\\ s, a ``dev`` server and a ``chat``) may share one ``auth.json``, so:

1. an expired login is renewed only under the file's lock (waited for in a thread);
2. once the lock is held the file is read again: if another process renewed the login meanwhile,
   its tokens are used and no refresh request is sent;
3. otherwise the refresh request goes out, and the new tokens are written back atomically (0600 in
   a 0700 directory, re-applied) before the lock is released;
4. the renewal runs as its own task, so a turn cancelled half-way does not drop tokens the server
   already rotated;
5. the login is renewed in the file it was found in: the agent's own, or the global
   ``~/.fastagent/auth.json`` it falls back to.

A refresh token the server refuses (revoked, already spent) is a :class:`CredentialError` telling
the user to log in again; the stored login is left as it is. A server that cannot be reached is a
retryable :class:`ProviderError`.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastagent_cli.auth.oauth.common import TokenError, now_ms
from fastagent_cli.auth.store import AuthStore
from fastagent_cli.errors import CredentialError, ProviderError
from fastagent_cli.models.credentials import Credential, prime_api_key, read_auth_file, resolve_credential
from fastagent_cli.models.types import ModelInfo

if TYPE_CHECKING:
    from fastagent_cli.auth.oauth.providers import OAuthProvider

__all__ = ["ENV_EXCHANGING", "OAUTH_NAMES", "RENEW_LOCK_TIMEOUT_S", "OAuthCredentials"]

OAUTH_NAMES = frozenset({"anthropic", "openai-codex", "github-copilot"})
"""The providers of :data:`~fastagent_cli.auth.oauth.providers.OAUTH_PROVIDERS`, known without
importing their login flows (every start and ``invoke`` would pay ~10 ms for them)."""
ENV_EXCHANGING = frozenset({"github-copilot"})
"""Those whose environment token is exchanged for a login (``from_environment``)."""

RENEW_LOCK_TIMEOUT_S = 60.0
"""How long a process waits for another one's renewal (the token call itself times out at 30 s)."""


class OAuthCredentials:
    """:class:`~fastagent_cli.models.credentials.CredentialSource` with login renewal."""

    def __init__(self, auth_path: Path | None, global_path: Path | None = None) -> None:
        self.auth_path = auth_path
        self.global_path = global_path
        self._from_env: dict[tuple[str, str], dict[str, Any]] = {}

    def peek(self, model: ModelInfo) -> Credential:
        return resolve_credential(model, self.auth_path, global_path=self.global_path)

    async def acquire(self, model: ModelInfo) -> Credential:
        await prime_api_key(model)  # an apiKey command runs off the loop, once
        credential = self.peek(model)
        if model.provider not in OAUTH_NAMES or credential.key is None:
            return credential
        if not credential.is_oauth and model.provider not in ENV_EXCHANGING:
            return credential  # a plain API key of a provider that also has logins
        from fastagent_cli.auth.oauth.providers import OAUTH_PROVIDERS

        provider = OAUTH_PROVIDERS[model.provider]
        if credential.is_oauth:
            path = credential.path
            assert path is not None  # an OAuth credential comes from a file
            entry = read_auth_file(path).get(model.provider) or {}
            if credential.expired(now_ms()):
                entry = await asyncio.shield(asyncio.ensure_future(self._renew(provider, path)))
                credential = replace(credential, key=str(entry["access"]), expires=int(entry["expires"]))
            return self._with_base_url(provider, model, credential, entry)
        if provider.from_environment is not None and credential.source in model.api_key_env:
            entry = await self._exchange_env(provider, credential)
            credential = replace(credential, key=str(entry["access"]), expires=int(entry["expires"]))
            return self._with_base_url(provider, model, credential, entry)
        return credential

    @staticmethod
    def _with_base_url(
        provider: OAuthProvider, model: ModelInfo, credential: Credential, entry: dict[str, Any]
    ) -> Credential:
        if provider.base_url is None or model.base_url.rstrip("/") != provider.default_base_url:
            return credential  # models.json points the provider elsewhere: that wins
        return replace(credential, base_url=provider.base_url({**entry, "access": credential.key}))

    async def _renew(self, provider: OAuthProvider, path: Path) -> dict[str, Any]:
        name = provider.name

        async def change(doc: dict[str, Any]) -> tuple[dict[str, Any], bool]:
            entry = doc.get(name)
            if not isinstance(entry, dict) or entry.get("type") != "oauth" or not entry.get("refresh"):
                raise CredentialError(
                    f"the {name} login is no longer in {path}: log in again with `fastagent login {name}`"
                )
            expires = entry.get("expires")
            if isinstance(expires, int | float) and now_ms() < expires:
                return entry, False  # renewed by another process while this one waited
            try:
                fresh = await provider.refresh(entry)
            except TokenError as exc:
                raise _renewal_error(name, exc) from None
            doc[name] = {**fresh, "type": "oauth"}
            return doc[name], True

        entry, _ = await AuthStore(path).update_async(
            change, write_if=lambda outcome: outcome[1], lock_timeout=RENEW_LOCK_TIMEOUT_S
        )
        return entry

    async def _exchange_env(self, provider: OAuthProvider, credential: Credential) -> dict[str, Any]:
        assert provider.from_environment is not None and credential.key is not None
        key = (provider.name, credential.key)
        cached = self._from_env.get(key)
        if cached is not None and now_ms() < int(cached["expires"]):
            return cached
        try:
            entry = await provider.from_environment(credential.key)
        except TokenError as exc:
            if exc.permanent:
                raise CredentialError(
                    f"{provider.name}: the token in {credential.source} was refused ({exc.detail}): "
                    f"set a token with Copilot access, or run `fastagent login {provider.name}`"
                ) from None
            raise ProviderError(f"{provider.name}: {exc.message}", retryable=True) from None
        self._from_env[key] = entry
        return entry


def _renewal_error(name: str, exc: TokenError) -> Exception:
    if exc.permanent:
        return CredentialError(
            f"the {name} login has expired and could not be renewed ({exc.detail}): "
            f"log in again with `fastagent login {name}`"
        )
    return ProviderError(f"{name}: could not renew the login, try again: {exc.message}", retryable=True)
