"""Secret values for ``--run``: read from this machine, handed to the host CLI off argv.

Values come from the environment (the agent's ``.env`` included, as every command loads it). They
travel to the child process through its environment (Docker Compose interpolates them) or its
stdin (``fly secrets import``, ``railway variables set --stdin``), never its arguments, and never
into the image. A stored credential (``auth.json``) travels as ``FASTAGENT_AUTH_SEED`` (base64 of
the file), which ``fastagent start`` writes to the box's auth path only when none exists there.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fastagent_cli.auth.seed import AUTH_SEED_ENV
from fastagent_cli.deploy.facts import DeployFacts
from fastagent_cli.errors import DeployError

__all__ = ["AUTH_SEED_ENV", "SecretValues", "assemble_secrets", "require_values"]


@dataclass(slots=True)
class SecretValues:
    values: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    """Required names with no value here."""
    needs_model_credential: bool = False
    """No key in the environment, no stored credential, none in the definition."""
    global_credential: Path | None = None
    """The credential this machine uses is only in this global file, which deploy does not carry."""
    credential_needs: str = "set the provider's API key (or run `fastagent login`)"
    """What to do when ``needs_model_credential`` (naming the variable when there is one)."""


def assemble_secrets(facts: DeployFacts, env: Mapping[str, str] | None = None) -> SecretValues:
    environ = os.environ if env is None else env
    out = SecretValues()
    for spec in facts.secrets():
        value = environ.get(spec.name)
        if value:
            out.values[spec.name] = value
        elif spec.required:
            out.missing.append(spec.name)
    auth = facts.model_auth
    if auth.kind == "stored":
        try:
            raw = facts.auth_path.read_bytes()
        except OSError as exc:
            raise DeployError(f"cannot read {facts.auth_path}: {exc.strerror or exc}") from None
        out.values[AUTH_SEED_ENV] = base64.b64encode(raw).decode("ascii")
    elif auth.kind == "none":
        out.needs_model_credential = True
        out.global_credential = auth.global_file
        out.credential_needs = auth.needs
    return out


def require_values(secrets: SecretValues) -> None:
    """The credential gates every ``--run`` applies before its first side effect."""
    if secrets.needs_model_credential and secrets.global_credential is not None:
        raise DeployError(
            f"deploy stopped: the model credential is only in {secrets.global_credential}, which deploy "
            "does not carry (it holds this machine's logins for every agent): store one for this agent "
            "with `fastagent login <provider> <agent dir>`, or set the provider's API key in .env, then "
            "re-run"
        )
    if secrets.needs_model_credential:
        raise DeployError(
            f"deploy stopped: no model credential: {secrets.credential_needs} (a variable goes in .env "
            "or the environment), then re-run"
        )
    if secrets.missing:
        raise DeployError(
            f"deploy stopped: no local value for: {', '.join(secrets.missing)}: set them in .env (or the "
            "environment) and re-run"
        )
