"""What a deployed agent needs, read from its directory once: :func:`gather`.

* the model that travels: only ``model`` in ``fastagent.toml`` reaches the image (``--model``,
  ``FASTAGENT_MODEL`` and ``.env`` stay on this machine);
* how its credential reaches the host (:class:`ModelAuth`): an environment variable becomes a
  host secret, a stored credential (``auth.json``) travels as ``FASTAGENT_AUTH_SEED``, a
  ``models.json`` literal or ``!command`` travels in the image, some providers need none;
* the secret names (:class:`SecretSpec`): the model key, the channel secrets of first-party
  channels, ``[deploy] secrets``;
* the channels (imported and classified, never mounted), time triggers (``schedules/*.toml``,
  ``self_schedule``), and the container facts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from fastagent_cli.definition.channel_files import InspectedChannel, inspect_channels
from fastagent_cli.definition.config import FastagentConfig
from fastagent_cli.deploy.container import REQUIREMENTS, ContainerFacts
from fastagent_cli.deploy.wheel import DIST_DIR, FastagentSource, fastagent_source
from fastagent_cli.errors import ConfigError, FastagentError
from fastagent_cli.models.credentials import env_reference

if TYPE_CHECKING:
    from fastagent_cli.assembly import AgentSurface
    from fastagent_cli.models.types import ModelInfo

__all__ = ["CHANNEL_SECRETS", "DEFAULT_PORT", "DeployFacts", "ModelAuth", "SecretSpec", "facts_of", "gather"]

DEFAULT_PORT = 8787
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_STATE_DIRNAME = ".fastagent"


@dataclass(frozen=True, slots=True)
class SecretSpec:
    name: str
    hint: str
    required: bool = True
    webhook_only: bool = False
    """Not needed when the channel runs as a long connection (Feishu/Lark over WebSocket)."""


# First-party channel kinds (``channels/<kind>.py``, as ``fastagent add <kind>`` writes them).
CHANNEL_SECRETS: dict[str, tuple[SecretSpec, ...]] = {
    "github": (
        SecretSpec("GITHUB_WEBHOOK_SECRET", "any random string; set the same value in the GitHub webhook"),
    ),
    "telegram": (
        SecretSpec("TELEGRAM_BOT_TOKEN", "from @BotFather -> /newbot"),
        SecretSpec("TELEGRAM_SECRET_TOKEN", "any random string; verifies inbound updates"),
    ),
    "slack": (
        SecretSpec("SLACK_BOT_TOKEN", "Slack app -> Bot User OAuth access token"),
        SecretSpec("SLACK_SIGNING_SECRET", "Slack app -> Basic Information -> App Credentials"),
        SecretSpec("SLACK_BOT_REFRESH_TOKEN", "token rotation (set by `fastagent add slack`)", False),
        SecretSpec("SLACK_CLIENT_ID", "token rotation (set by `fastagent add slack`)", False),
        SecretSpec("SLACK_CLIENT_SECRET", "token rotation (set by `fastagent add slack`)", False),
        SecretSpec("SLACK_BOT_TOKEN_EXPIRES_AT", "token rotation (set by `fastagent add slack`)", False),
    ),
    "feishu": (
        SecretSpec("FEISHU_APP_ID", "console -> Credentials & Basic Info"),
        SecretSpec("FEISHU_APP_SECRET", "console -> Credentials & Basic Info"),
        SecretSpec("FEISHU_VERIFICATION_TOKEN", "console -> Events & Callbacks", webhook_only=True),
        SecretSpec("FEISHU_ENCRYPT_KEY", "optional; console -> Events & Callbacks", False, webhook_only=True),
    ),
    "lark": (
        SecretSpec("LARK_APP_ID", "developer console -> Credentials & Basic Info"),
        SecretSpec("LARK_APP_SECRET", "developer console -> Credentials & Basic Info"),
        SecretSpec("LARK_VERIFICATION_TOKEN", "console -> Events & Callbacks", webhook_only=True),
        SecretSpec("LARK_ENCRYPT_KEY", "optional; console -> Events & Callbacks", False, webhook_only=True),
    ),
}


@dataclass(frozen=True, slots=True)
class ModelAuth:
    kind: Literal["env", "stored", "definition", "not_needed", "none"]
    env_name: str | None = None
    """``env``: the variable; ``none``: the provider's usual variable, for the hint."""
    global_file: Path | None = None
    """``none``: the credential this machine uses lives only in the global
    ``~/.fastagent/auth.json``, which deploy does not carry (it holds every agent's logins)."""
    origin: str | None = None
    """``env``: where the variable is named, when ``models.json`` names it (``models.json
    providers.<name> apiKey``)."""
    needs: str = "set the provider's API key (or run `fastagent login`)"
    """``none``: what to do, as the plan and the gates say it (naming the variable when there is one)."""


@dataclass(slots=True)
class DeployFacts:
    agent_dir: Path
    workspace: Path
    config: FastagentConfig
    container: ContainerFacts
    model: str | None
    """The model that travels (``model`` in ``fastagent.toml``)."""
    local_model: str | None
    """What this machine would use (``--model`` > ``FASTAGENT_MODEL`` > config), for messages."""
    model_error: str | None
    model_auth: ModelAuth
    auth_path: Path
    state_root: Path
    channels: list[InspectedChannel] = field(default_factory=list)
    schedules: list[str] = field(default_factory=list)
    ships_git: bool = False
    travelling_model: ModelInfo | None = None
    """``model`` in ``fastagent.toml``, resolved (``None`` when absent or unknown)."""
    fastagent: FastagentSource = field(default_factory=fastagent_source)
    """Where this machine's fastagent came from: the image installs the same one."""

    @property
    def agent_prefix(self) -> str:
        return self.container.agent_prefix

    @property
    def port(self) -> int:
        return self.container.port

    @property
    def long_connections(self) -> list[str]:
        return [c.name for c in self.channels if c.long_connection]

    @property
    def route_channels(self) -> list[InspectedChannel]:
        return [c for c in self.channels if not c.long_connection]

    @property
    def time_triggers(self) -> bool:
        return bool(self.schedules) or self.config.self_schedule

    def keep_running_reasons(self) -> list[str]:
        """Why scale-to-zero would break this agent (empty: it may sleep between requests)."""
        reasons = []
        if any(c.name == "github" for c in self.route_channels):
            reasons.append("github turns have no replay (an in-flight turn would be lost)")
        if self.schedules:
            reasons.append(f"schedules ({', '.join(self.schedules)}) have no external wake-up")
        if self.config.self_schedule:
            reasons.append("self_schedule wake-ups have no external wake-up")
        if self.long_connections:
            reasons.append(f"long connection ({', '.join(self.long_connections)}) cannot wake from zero")
        return reasons

    def secrets(self) -> list[SecretSpec]:
        """Every secret name the host needs, model key first, each once."""
        specs: list[SecretSpec] = []
        if self.model_auth.kind == "env" and self.model_auth.env_name:
            origin = self.model_auth.origin
            hint = f"your model provider key (named by {origin})" if origin else "your model provider key"
            specs.append(SecretSpec(self.model_auth.env_name, hint))
        for channel in self.channels:
            for spec in CHANNEL_SECRETS.get(channel.name, ()):
                if not (spec.webhook_only and channel.long_connection):
                    specs.append(spec)
        for name in self.config.deploy.secrets:
            specs.append(SecretSpec(name, "declared in fastagent.toml [deploy] secrets"))
        unique: dict[str, SecretSpec] = {}
        for spec in specs:
            unique.setdefault(spec.name, spec)
        return list(unique.values())


def gather(directory: str, *, model_flag: str | None, auth_flag: str | None) -> DeployFacts:
    """Read the agent in ``directory`` (``.env`` applied to this process, as every command does)."""
    from fastagent_cli.assembly import inspect_agent_dir

    return facts_of(inspect_agent_dir(directory, model=model_flag, auth_path=auth_flag))


def facts_of(surface: AgentSurface) -> DeployFacts:
    """The deploy facts of an agent directory already read (the command's one read)."""
    agent_dir, workspace, config = surface.agent_dir, surface.workspace, surface.config
    model = config.model
    model_error = surface.model_error if model and surface.model_source == "fastagent.toml" else None
    auth = ModelAuth("none")
    probe = model or surface.model_spec
    travelling: ModelInfo | None = None
    if probe:
        try:
            resolved = surface.registry.resolve(probe)
            auth = _model_auth(resolved, surface.auth_path, surface.global_auth_path)
            travelling = resolved if model else None
        except FastagentError as exc:
            model_error = model_error or exc.message
    channels, failures = inspect_channels(agent_dir)
    if failures:
        raise ConfigError(f"cannot inspect channel modules: {'; '.join(failures)}")
    ships_git = (workspace / ".git").exists()
    apt = (["git"] if ships_git else []) + [p for p in config.deploy.apt if not (ships_git and p == "git")]
    prefix = "" if agent_dir == workspace else f"{agent_dir.name}/"
    source = fastagent_source()
    wheel = f"{prefix}{DIST_DIR}/{source.wheel_name}" if source.kind == "local" else None
    container = ContainerFacts(
        agent_prefix=prefix,
        port=config.http.port or DEFAULT_PORT,
        apt=tuple(apt),
        has_requirements=(agent_dir / REQUIREMENTS).is_file(),
        machinery_paths=tuple(_machinery_paths(workspace, surface.state_root, surface.auth_path)),
        wheel=wheel,
    )
    return DeployFacts(
        agent_dir=agent_dir,
        workspace=workspace,
        config=config,
        container=container,
        model=model,
        local_model=surface.model_spec,
        model_error=model_error,
        model_auth=auth,
        auth_path=surface.auth_path,
        state_root=surface.state_root,
        channels=channels,
        schedules=_stems(agent_dir / "schedules", ".toml"),
        ships_git=ships_git,
        travelling_model=travelling,
        fastagent=source,
    )


def _model_auth(info: ModelInfo, auth_path: Path, global_path: Path | None = None) -> ModelAuth:
    from fastagent_cli.auth.store import AuthStore

    if info.provider == "scripted" or (not info.api_key_env and info.api_key is None and not info.oauth):
        return ModelAuth("not_needed")
    entry = AuthStore(auth_path).read().get(info.provider)
    if entry and (entry.get("key") or entry.get("type") == "oauth"):
        return ModelAuth("stored")
    for name in info.api_key_env:
        if os.environ.get(name):
            return ModelAuth("env", name)
    if info.api_key is not None:
        value = info.api_key.strip()
        where = f"models.json providers.{info.provider} apiKey"
        named = env_reference(value)
        if named is not None:
            return ModelAuth("env", named, origin=where)
        if _ENV_NAME.match(value) and value in os.environ:
            return ModelAuth("env", value)
        return ModelAuth("definition")  # a literal key or a !command travels in the image
    if info.key_optional:
        return ModelAuth("not_needed")
    wanted = info.api_key_env[0] if info.api_key_env else None
    login = f"`fastagent login {info.provider} <agent dir>`"
    if wanted is not None:
        needs = f"set {wanted} (or run {login})"
    elif info.oauth:
        needs = f"run {login}"
    else:
        needs = f'add an apiKey to models.json providers.{info.provider} (e.g. "$VAR", then set VAR)'
    if global_path is not None and global_path != auth_path:
        entry = AuthStore(global_path).read().get(info.provider)
        if entry and (entry.get("key") or entry.get("type") == "oauth"):
            return ModelAuth("none", wanted, global_file=global_path, needs=needs)
    return ModelAuth("none", wanted, needs=needs)


def _machinery_paths(workspace: Path, state_root: Path, auth_path: Path) -> list[str]:
    """State and credential locations inside the build context that ``**/.fastagent`` misses."""
    out: list[str] = []
    for path in (state_root, auth_path):
        try:
            rel = path.resolve().relative_to(workspace)
        except ValueError:
            continue  # outside the context: nothing to exclude
        covered = any(rel.as_posix() == p or rel.as_posix().startswith(p + "/") for p in out)
        if rel.parts and _STATE_DIRNAME not in rel.parts and not covered:
            out.append(rel.as_posix())
    return out


def _stems(folder: Path, suffix: str) -> list[str]:
    try:
        return sorted(
            p.name[: -len(suffix)] for p in folder.iterdir() if p.name.endswith(suffix) and p.is_file()
        )
    except OSError:
        return []
