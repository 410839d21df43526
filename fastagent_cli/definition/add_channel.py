"""``fastagent add github|telegram|slack|feishu|lark``: put a first-party channel into an agent
(features I21, I22).

Writes ``channels/<kind>.py`` (one expression over the factory; for Feishu/Lark the webhook or the
WebSocket factory, by ``ingress``) and, for the chat platforms, the ``tools/<kind>_send.py``
tool; an existing file is never replaced (it is reported as kept).
Appends the channel's variables to ``.env.example``, generates its random secret into ``.env``
(created 0600) unless ``.env`` or the environment already has one, and makes sure ``.env`` is
gitignored. Nothing else in the agent is touched.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from fastagent_cli.definition.dotenv import parse_dotenv
from fastagent_cli.definition.scaffold import GITIGNORE_LINES, missing_ignores
from fastagent_cli.errors import ConfigError, UsageError

__all__ = [
    "CHANNEL_KINDS",
    "GROUP_BEHAVIORS",
    "INGRESSES",
    "AddedChannel",
    "EnvVar",
    "add_channel",
    "set_env_values",
]

GROUP_BEHAVIORS = ("context", "mentions")
INGRESSES = ("websocket", "webhook")


@dataclass(frozen=True, slots=True)
class EnvVar:
    name: str
    hint: str
    generate: bool = False
    webhook_only: bool = False


@dataclass(frozen=True, slots=True)
class _Kind:
    files: tuple[tuple[str, str], ...]
    """``(path in the agent, template)``."""
    env: tuple[EnvVar, ...]


CHANNEL_KINDS: dict[str, _Kind] = {
    "github": _Kind(
        files=(("channels/github.py", "channels/github.py"),),
        env=(
            EnvVar("GITHUB_WEBHOOK_SECRET", "random; the same value goes into the GitHub webhook", True),
            EnvVar(
                "GITHUB_TOKEN",
                "optional: tool approvals as issue/PR comments (Issues and Pull requests: read and write)",
            ),
        ),
    ),
    "telegram": _Kind(
        files=(
            ("channels/telegram.py", "channels/telegram.py"),
            ("tools/telegram_send.py", "tools/telegram_send.py"),
        ),
        env=(
            EnvVar("TELEGRAM_BOT_TOKEN", "from @BotFather -> /newbot"),
            EnvVar("TELEGRAM_SECRET_TOKEN", "random; Telegram sends it back with every update", True),
        ),
    ),
    "slack": _Kind(
        files=(("channels/slack.py", "channels/slack.py"), ("tools/slack_send.py", "tools/slack_send.py")),
        env=(
            EnvVar("SLACK_BOT_TOKEN", "Bot User OAuth token (xoxb-...); `fastagent add slack` writes it"),
            EnvVar("SLACK_SIGNING_SECRET", "Basic Information -> App Credentials -> Signing Secret"),
            EnvVar("SLACK_BOT_REFRESH_TOKEN", "token rotation (onboarded apps): the bot refresh token"),
            EnvVar("SLACK_CLIENT_ID", "token rotation: the app's client id"),
            EnvVar("SLACK_CLIENT_SECRET", "token rotation: the app's client secret"),
            EnvVar(
                "SLACK_BOT_TOKEN_EXPIRES_AT", "token rotation: the bot token's expiry, epoch milliseconds"
            ),
        ),
    ),
    **{
        kind: _Kind(
            files=(
                (f"channels/{kind}.py", f"channels/{kind}_{{ingress}}.py"),
                (f"tools/{kind}_send.py", f"tools/{kind}_send.py"),
            ),
            env=(
                EnvVar(f"{kind.upper()}_APP_ID", "developer console -> Credentials & Basic Info (cli_...)"),
                EnvVar(f"{kind.upper()}_APP_SECRET", "developer console -> Credentials & Basic Info"),
                EnvVar(
                    f"{kind.upper()}_VERIFICATION_TOKEN",
                    "webhook: console -> Events & Callbacks",
                    webhook_only=True,
                ),
                EnvVar(
                    f"{kind.upper()}_ENCRYPT_KEY",
                    "webhook, optional: console -> Events & Callbacks",
                    webhook_only=True,
                ),
            ),
        )
        for kind in ("feishu", "lark")
    },
}
_OPTIONAL = {
    "GITHUB_TOKEN",
    "SLACK_BOT_REFRESH_TOKEN",
    "SLACK_CLIENT_ID",
    "SLACK_CLIENT_SECRET",
    "SLACK_BOT_TOKEN_EXPIRES_AT",
    "FEISHU_ENCRYPT_KEY",
    "LARK_ENCRYPT_KEY",
}


@dataclass(slots=True)
class AddedChannel:
    kind: str
    agent_dir: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    """``channels/<kind>.py.disabled`` files found next to the new one."""
    generated: list[str] = field(default_factory=list)
    """Secrets written to ``.env``."""
    in_environment: list[str] = field(default_factory=list)
    """Secrets not generated because the environment sets them."""
    example_added: list[str] = field(default_factory=list)
    gitignore_patched: bool = False
    missing: list[str] = field(default_factory=list)
    """Variables the user still has to set (no value in ``.env`` or the environment)."""


def _template(name: str) -> str:
    return (resources.files("fastagent_cli") / "data" / "templates" / name).read_text(encoding="utf-8")


def add_channel(
    agent_dir: Path, kind: str, *, ingress: str = "websocket", group_behavior: str = "context"
) -> AddedChannel:
    spec = CHANNEL_KINDS.get(kind)
    if spec is None:
        raise UsageError(f'unknown channel "{kind}"; fastagent adds: {", ".join(CHANNEL_KINDS)}')
    if ingress not in INGRESSES:
        raise UsageError(f'--ingress must be one of {", ".join(INGRESSES)}, not "{ingress}"')
    if group_behavior not in GROUP_BEHAVIORS:
        raise UsageError(
            f'--group-behavior must be one of {", ".join(GROUP_BEHAVIORS)}, not "{group_behavior}"'
        )
    if ingress == "websocket":
        spec = _Kind(spec.files, tuple(v for v in spec.env if not v.webhook_only))
    added = AddedChannel(kind, agent_dir)
    try:
        for rel, template in spec.files:
            target = agent_dir / rel
            if target.exists():
                added.kept.append(rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            text = _template(template.replace("{ingress}", ingress)).replace(
                "{group_behavior}", group_behavior
            )
            with open(target, "x", encoding="utf-8") as fh:
                fh.write(text)
            added.created.append(rel)
        disabled = agent_dir / "channels" / f"{kind}.py.disabled"
        if disabled.exists():
            added.disabled.append(f"channels/{disabled.name}")
        _write_env(agent_dir, spec, added)
        added.example_added = _append_example(agent_dir / ".env.example", kind, spec.env)
        added.gitignore_patched = _ignore_env(agent_dir / ".gitignore")
    except OSError as exc:
        raise ConfigError(f"cannot write into {agent_dir}: {exc.strerror or exc} ({exc.filename})") from None
    return added


def _write_env(agent_dir: Path, spec: _Kind, added: AddedChannel) -> None:
    path = agent_dir / ".env"
    try:
        current = parse_dotenv(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        current = {}
    lines: list[str] = []
    for var in spec.env:
        if current.get(var.name):
            continue
        if os.environ.get(var.name):
            if var.generate:
                added.in_environment.append(var.name)
            continue
        if var.generate:
            lines.append(f"{var.name}={secrets.token_urlsafe(32)}")
            added.generated.append(var.name)
        elif var.name not in _OPTIONAL:
            added.missing.append(var.name)
    if not lines:
        return
    gap = "\n" if path.exists() and path.stat().st_size > 0 and not _ends_with_newline(path) else ""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(gap)
        fh.write(f"# {added.kind} channel (fastagent add {added.kind})\n" + "\n".join(lines) + "\n")


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def _append_example(path: Path, kind: str, env: tuple[EnvVar, ...]) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    missing = [var for var in env if not re.search(rf"^\s*#?\s*{var.name}\s*=", text, re.MULTILINE)]
    if not missing:
        return []
    block = f"# {kind} channel (fastagent add {kind})\n" + "".join(
        f"# {v.hint}\n{v.name}=\n" for v in missing
    )
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + block)
    return [var.name for var in missing]


def _ignore_env(path: Path) -> bool:
    if not path.exists():
        path.write_text(
            "# fastagent: machine state and secrets stay out of git\n" + "\n".join(GITIGNORE_LINES) + "\n"
        )
        return True
    missing = missing_ignores(path)
    if not missing:
        return False
    text = path.read_text(encoding="utf-8")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(
            ("\n" if text and not text.endswith("\n") else "") + "# fastagent\n" + "\n".join(missing) + "\n"
        )
    return True


def set_env_values(agent_dir: Path, values: dict[str, str]) -> None:
    """Set ``values`` in the agent's ``.env`` (replacing a variable's line, else appending it),
    atomically and owner-only: onboarding writes credentials the moment it has them."""
    from fastagent_cli.state.atomic import atomic_write_text

    path = agent_dir / ".env"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    remaining = dict(values)
    out: list[str] = []
    for line in lines:
        name = line.split("=", 1)[0].strip().removeprefix("export ").strip()
        if "=" in line and not line.lstrip().startswith("#") and name in remaining:
            out.append(f"{name}={remaining.pop(name)}")
        else:
            out.append(line)
    out += [f"{name}={value}" for name, value in remaining.items()]
    try:
        atomic_write_text(path, "\n".join(out) + "\n", mode=0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
