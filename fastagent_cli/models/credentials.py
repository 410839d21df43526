"""Where a provider's API key comes from, and what to call that source.

Order: the credential file (``--auth-path`` > ``FASTAGENT_AUTH_PATH`` > ``<state root>/auth.json``;
there is no silent fallback to another file), then the provider's environment variables (``.env``
included, since every command loads it into the environment), then a ``models.json`` ``apiKey``.

``auth.json`` is pi's shape: ``{"openai": {"type": "api_key", "key": "sk-..."}}``.
``apiKey`` values in ``models.json`` may be ``$VAR`` (environment), ``!command`` (its stdout) or
a literal; a bare upper-case name of a set environment variable is read from it too (pi's rule).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from fastagent_cli.errors import CredentialError
from fastagent_cli.models.types import ModelInfo

__all__ = ["Credential", "read_auth_file", "resolve_credential", "resolve_value"]

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Credential:
    key: str | None
    source: str
    """``stored credential (<path>)``, an env var name, ``models.json``, ``not needed`` or
    ``(none found)``."""


def read_auth_file(path: Path) -> dict[str, dict[str, str]]:
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
        return _run_command(value[1:])
    if value.startswith("${") and value.endswith("}"):
        return environ.get(value[2:-1])
    if value.startswith("$"):
        return environ.get(value[1:])
    if _ENV_NAME.match(value) and value in environ:
        return environ[value]
    return value


@cache
def _run_command(command: str) -> str | None:
    try:
        done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CredentialError(f"apiKey command {command!r} failed: {exc}") from None
    if done.returncode != 0:
        raise CredentialError(
            f"apiKey command {command!r} exited with {done.returncode}: {done.stderr.strip()}"
        )
    return done.stdout.strip() or None


def resolve_credential(
    model: ModelInfo, auth_path: Path | None, env: Mapping[str, str] | None = None
) -> Credential:
    environ = os.environ if env is None else env
    if auth_path is not None:
        stored = read_auth_file(auth_path).get(model.provider)
        if stored and stored.get("type", "api_key") == "api_key" and stored.get("key"):
            return Credential(stored["key"], f"stored credential ({auth_path})")
    for name in model.api_key_env:
        if environ.get(name):
            return Credential(environ[name], name)
    if model.api_key is not None:
        value = resolve_value(model.api_key, environ)
        if value:
            return Credential(value, "models.json")
    if not model.api_key_env and model.api_key is None:
        return Credential(None, "not needed")
    return Credential(None, "(none found)")
