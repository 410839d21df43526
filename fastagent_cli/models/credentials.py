"""Where a provider's API key comes from, and what to call that source.

Order: the agent's credential file (``--auth-path`` > ``FASTAGENT_AUTH_PATH`` > ``<state
root>/auth.json``) with its stored API key, then its subscription login (OAuth); then the same from
the global file ``~/.fastagent/auth.json`` (where ``fastagent login`` writes outside any agent);
then the provider's environment variables (``.env`` included, since every command loads it into
the environment), then a ``models.json`` ``apiKey``. A credential found in a file carries its
``path``, so reports name the file and a renewed login is written back to that file.
A provider marked ``keyOptional`` (the catalog's ``local`` server) uses a key when one is found
and needs none otherwise.

``auth.json`` is pi's shape: ``{"openai": {"type": "api_key", "key": "sk-..."},
"openai-codex": {"type": "oauth", "refresh": "...", "access": "...", "expires": <epoch ms>, ...}}``.
Reading never refreshes: :class:`FileCredentials` (this module) hands out what the file holds; the
engine is given a :class:`CredentialSource` whose ``acquire`` may renew an expired login first
(``fastagent_cli.auth.oauth`` builds the one every assembled agent uses).
``apiKey`` values in ``models.json`` may be ``$VAR`` (environment), ``!command`` (its stdout, run
once per process off the event loop: :mod:`~fastagent_cli.models.key_command`) or
a literal; a bare upper-case name of a set environment variable is read from it too (pi's rule).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fastagent_cli.errors import CredentialError
from fastagent_cli.models import key_command
from fastagent_cli.models.types import ModelInfo

__all__ = [
    "NONE_FOUND",
    "NOT_NEEDED",
    "Credential",
    "CredentialSource",
    "credential_files",
    "env_reference",
    "FileCredentials",
    "missing_hint",
    "prime_api_key",
    "read_auth_file",
    "resolve_credential",
    "resolve_value",
]

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
NONE_FOUND = "(none found)"
NOT_NEEDED = "not needed"
OAUTH_LABEL = "OAuth"


@dataclass(frozen=True, slots=True)
class Credential:
    key: str | None
    source: str
    """``stored credential (<path>)``, ``OAuth (<path>)``, an env var name, ``models.json``,
    ``not needed`` or ``(none found)``."""
    expires: int | None = None
    """For a subscription login: when the access token expires (epoch milliseconds)."""
    base_url: str | None = None
    """An endpoint the login dictates (GitHub Copilot's token names its API host)."""
    path: Path | None = None
    """The credential file it came from (``None``: the environment, ``models.json``, none)."""

    @property
    def missing(self) -> bool:
        """The model needs a credential and none was found (test this, not the source text)."""
        return self.key is None and self.source == NONE_FOUND

    @property
    def needed(self) -> bool:
        """The provider takes a credential (``False`` for keyless servers and the scripted model)."""
        return self.source != NOT_NEEDED

    @property
    def is_oauth(self) -> bool:
        return self.source.startswith(OAUTH_LABEL)

    def expired(self, now_ms: int) -> bool:
        return self.expires is not None and now_ms >= self.expires


def env_reference(value: str) -> str | None:
    """The variable a ``models.json`` ``apiKey`` of ``$VAR`` or ``${VAR}`` names (else ``None``)."""
    name = value[2:-1] if value.startswith("${") and value.endswith("}") else value[1:]
    return name if value.startswith("$") and _ENV_NAME.match(name) else None


def missing_hint(model: ModelInfo) -> str:
    """What to do when no credential was found: the variables to set and/or the login to run."""
    login = f"run `fastagent login {model.provider}`"
    if model.api_key is not None:
        where = f"models.json providers.{model.provider} apiKey"
        name = env_reference(model.api_key.strip())
        if name is not None:
            return f"{name} is not set ({where}): set it in the environment or the agent's .env, or {login}"
        if model.api_key.startswith("!"):
            return f"the command in {where} printed nothing: fix it, or {login}"
    if model.api_key_env:
        return f"set {' or '.join(model.api_key_env)}, or {login}"
    if model.oauth:
        return login
    return f"set an apiKey in models.json, or {login}"


def read_auth_file(path: Path) -> dict[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise CredentialError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CredentialError(f"{path} is not valid JSON (line {exc.lineno}): fix or delete it") from None
    if not isinstance(doc, dict):
        raise CredentialError(f"{path} must hold a JSON object")
    return {k: v for k, v in doc.items() if isinstance(v, dict)}


def resolve_value(value: str, env: Mapping[str, str] | None = None) -> str | None:
    environ = os.environ if env is None else env
    if value.startswith("!"):
        return key_command.command_key(value[1:])
    if value.startswith("${") and value.endswith("}"):
        return environ.get(value[2:-1])
    if value.startswith("$"):
        return environ.get(value[1:])
    if _ENV_NAME.match(value) and value in environ:
        return environ[value]
    return value


async def prime_api_key(model: ModelInfo) -> None:
    """Run ``model``'s ``!command`` apiKey off the loop if it has not settled yet (see
    :mod:`~fastagent_cli.models.key_command`), so the :meth:`CredentialSource.peek` after it never
    blocks. An async ``acquire`` calls it first."""
    if model.api_key is not None and model.api_key.startswith("!"):
        await key_command.prime(model.api_key[1:])


def credential_files(auth_path: Path | None, global_path: Path | None) -> list[Path]:
    """The files to read, in order: the agent's, then the global one (once, if they differ)."""
    files = [p for p in (auth_path, global_path) if p is not None]
    if len(files) == 2 and _same_file(files[0], files[1]):
        files.pop()
    return files


def _same_file(a: Path, b: Path) -> bool:
    """One file under two names (a link, a symlinked directory): two ``stat`` calls, where
    resolving both paths took a system call per component. A missing file is nobody's twin
    (reading a missing file twice finds nothing twice)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


_SETTLE_NS = 2_000_000_000
_Stamp = tuple[int, int, int, int, int]
_parsed: dict[Path, tuple[_Stamp, dict[str, dict[str, Any]]]] = {}
"""Each credential file as last parsed, with the ``stat`` it was parsed at: a model request
reads them all (the agent's, the global one), and they nearly never change."""


def _entries(path: Path) -> Mapping[str, Mapping[str, Any]]:
    """:func:`read_auth_file` for reading only, parsed again only when the file changed (inode,
    size, mtime or ctime moved: a rename into place, an edit, a ``touch``), or changed within
    the last 2 s (a file system's clock tick can hide a second write of the same size). A
    missing file is one ``stat``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        _parsed.pop(path, None)
        return {}
    except OSError:
        return read_auth_file(path)  # reports the error as reading it does
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    cached = _parsed.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    entries = read_auth_file(path)
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLE_NS:
        _parsed[path] = (stamp, entries)
    return entries


def _stored(model: ModelInfo, path: Path) -> Credential | None:
    stored = _entries(path).get(model.provider) or {}
    kind = stored.get("type", "api_key")
    if kind == "api_key" and isinstance(stored.get("key"), str) and stored["key"]:
        return Credential(stored["key"], f"stored credential ({path})", path=path)
    if kind == "oauth" and isinstance(stored.get("access"), str):
        expires = stored.get("expires")
        when = int(expires) if isinstance(expires, int | float) else 0
        return Credential(stored["access"], f"{OAUTH_LABEL} ({path})", when, path=path)
    return None


def resolve_credential(
    model: ModelInfo,
    auth_path: Path | None,
    env: Mapping[str, str] | None = None,
    global_path: Path | None = None,
) -> Credential:
    """The credential a request would use now (an expired login is returned as it is):
    ``auth_path``, then ``global_path``, then the environment and ``models.json``."""
    environ = os.environ if env is None else env
    for path in credential_files(auth_path, global_path):
        found = _stored(model, path)
        if found is not None:
            return found
    for name in model.api_key_env:
        if environ.get(name):
            return Credential(environ[name], name)
    if model.api_key is not None:
        value = resolve_value(model.api_key, environ)
        if value:
            return Credential(value, "models.json")
    if model.key_optional or (not model.api_key_env and model.api_key is None and not model.oauth):
        return Credential(None, NOT_NEEDED)
    return Credential(None, NONE_FOUND)


class CredentialSource(Protocol):
    """Where an engine gets credentials: ``peek`` for reports (no network, never blocks on a
    lock), ``acquire`` right before a request (may renew an expired login)."""

    def peek(self, model: ModelInfo) -> Credential: ...

    async def acquire(self, model: ModelInfo) -> Credential: ...


class FileCredentials:
    """The plain source: what the files and the environment hold, with no renewal."""

    def __init__(self, auth_path: Path | None, global_path: Path | None = None) -> None:
        self.auth_path = auth_path
        self.global_path = global_path

    def peek(self, model: ModelInfo) -> Credential:
        return resolve_credential(model, self.auth_path, global_path=self.global_path)

    async def acquire(self, model: ModelInfo) -> Credential:
        await prime_api_key(model)
        return self.peek(model)
