"""Host-neutral preflight: the warnings every deploy prints, and the gates that stop ``--run``.

A gate in plan mode is a ``[fastagent] warn:`` line (the artifacts are still written: the user may
deploy elsewhere); under ``--run`` it raises ``deploy stopped: <gate>`` before any side effect.

Gates: the model does not travel (not in ``fastagent.toml``, or cannot be resolved); a kept
``.dockerignore`` that drops the agent or would ship credentials (``BAKE SECRETS INTO THE IMAGE``);
an ``[http] host`` that a hand-written Dockerfile would bind inside the container.
Warnings and notes: ``session_control`` exposes ``/control/*``; the image is a snapshot; custom
channels; what keeps a machine running.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from fastagent_cli.deploy.artifacts import is_generated
from fastagent_cli.deploy.container import PIP_SPEC
from fastagent_cli.deploy.dockerignore import DockerIgnore
from fastagent_cli.deploy.facts import CHANNEL_SECRETS, DeployFacts
from fastagent_cli.errors import DeployError

__all__ = ["Preflight", "loopback_urls", "preflight"]

_WILDCARDS = ("0.0.0.0", "::")


@dataclass(slots=True)
class Preflight:
    run: bool
    say: Callable[[str], None]

    def warn(self, text: str) -> None:
        self.say(f"[fastagent] warn: {text}")

    def note(self, text: str) -> None:
        self.say(f"[fastagent] note: {text}")

    def gate(self, text: str) -> None:
        """Stop ``--run`` here; a warning otherwise."""
        if self.run:
            raise DeployError(f"deploy stopped: {text}")
        self.warn(text)


def preflight(facts: DeployFacts, *, run: bool, force: bool, say: Callable[[str], None]) -> Preflight:
    check = Preflight(run, say)
    _model(facts, check)
    _bind(facts, check)
    for rel in (".dockerignore", f"{facts.agent_prefix}Dockerfile.dockerignore"):
        _dockerignore(facts, check, rel, force)
    if facts.config.session_control or facts.config.http.web_chat:
        what = "session_control = true" if facts.config.session_control else "[http] web_chat = true"
        check.warn(
            f"{what}: the deployed box serves /control/* at its public URL, protected only "
            "by a bearer token minted inside the container (<state>/control.json on the box); read it "
            "there and pass it with attach --url <public-url> --token ..., or front the endpoint with "
            "real auth"
        )
    for channel in facts.channels:
        if channel.name not in CHANNEL_SECRETS:
            check.note(
                f'long-connection channel "{channel.name}" is custom: configure its secrets yourself '
                "([deploy] secrets); it keeps the process running and has no webhook to register"
                if channel.long_connection
                else f'route channel "{channel.name}" is custom: configure its secrets ([deploy] secrets) '
                "and its webhook yourself (or give it a register_webhook(public_url) hook)"
            )
    _fastagent(facts, check, force)
    for where, url in loopback_urls(facts):
        check.warn(
            f"{where} is {url}: inside the container that is the container itself, not this machine. "
            "Point it at an address the box can reach (local Docker: host.docker.internal, which on "
            'Linux needs extra_hosts: ["host.docker.internal:host-gateway"] on the agent service)'
        )
    reasons = facts.keep_running_reasons()
    if reasons:
        check.note(f"keep one machine running: {'; '.join(reasons)}")
    _apt(facts, check)
    check.note(
        "the whole directory is baked into the image as the agent's workspace (what you see is what "
        "ships); "
        + (
            "the agent's requirements.txt is installed. "
            if facts.container.has_requirements
            else "the agent has no requirements.txt, so only fastagent and its dependencies are installed. "
        )
        + (
            ".git ships and git is installed, so the agent can pull and push; un-pushed changes on the "
            "box do not survive a redeploy"
            if facts.ships_git
            else "no .git here: changes made on the box do not survive a redeploy"
        )
    )
    return check


def _fastagent(facts: DeployFacts, check: Preflight, force: bool) -> None:
    source = facts.fastagent
    if source.kind == "binary":
        check.warn(
            f"this fastagent is the standalone binary: the image installs {PIP_SPEC} from the package "
            "index; if the index lacks it, build with --build-arg FASTAGENT_PIP_SPEC=<wheel or git URL>"
        )
        return
    if facts.container.wheel is None:
        return
    check.note(
        f"the image installs the fastagent this machine runs ({source.version}, from {source.where}; "
        f"no package index has it): deploy ships it as {facts.container.wheel} in the build context. "
        "Re-run deploy after changing fastagent"
    )
    rel = f"{facts.agent_prefix}Dockerfile"
    text = _read(facts.workspace / rel)
    if (
        text is not None
        and f'FASTAGENT_PIP_SPEC="{PIP_SPEC}"' in text
        and not (force and is_generated(rel, text))
    ):
        check.gate(
            f"your kept {rel} installs {PIP_SPEC} from the package index, which does not have it: "
            + (
                "re-run with --force to regenerate it"
                if is_generated(rel, text)
                else f"install {facts.container.wheel} instead (COPY it in, then pip install it)"
            )
        )


def loopback_urls(facts: DeployFacts) -> list[tuple[str, str]]:
    """``(where, url)`` of every provider URL that ships and names this machine's loopback: the
    agent's ``models.json`` providers, and the travelling model's provider."""
    found: list[tuple[str, str]] = []
    try:
        doc = json.loads((facts.agent_dir / "models.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {}
    providers = doc.get("providers") if isinstance(doc, dict) else None
    for name, provider in (providers or {}).items() if isinstance(providers, dict) else ():
        url = provider.get("baseUrl") if isinstance(provider, dict) else None
        if isinstance(url, str) and _loopback(url):
            found.append((f"models.json providers.{name} baseUrl", url))
    model = facts.travelling_model
    listed = {where for where, _ in found}
    if (
        model is not None
        and model.base_url
        and _loopback(model.base_url)
        and f"models.json providers.{model.provider} baseUrl" not in listed
    ):
        found.append((f"the model {model.spec}'s provider URL", model.base_url))
    return found


def _loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _model(facts: DeployFacts, check: Preflight) -> None:
    if not facts.model:
        if facts.local_model:
            check.gate(
                f'model "{facts.local_model}" is set by --model or FASTAGENT_MODEL (or .env), not in '
                f"fastagent.toml, so it will not reach the deployed box: add "
                f'model = "{facts.local_model}" to fastagent.toml'
            )
        else:
            check.gate(
                "no model in fastagent.toml, so the deployed box cannot resolve one: "
                'add model = "provider/model"'
            )
    elif facts.model_error:
        check.gate(f'the model in fastagent.toml ("{facts.model}") cannot be resolved: {facts.model_error}')
    elif facts.local_model and facts.local_model != facts.model:
        check.note(
            f'the deployed box uses fastagent.toml\'s model "{facts.model}"; "{facts.local_model}" '
            "(--model or FASTAGENT_MODEL) applies only on this machine"
        )


def _bind(facts: DeployFacts, check: Preflight) -> None:
    host = facts.config.http.host
    if host in _WILDCARDS:
        return
    dockerfile = facts.workspace / f"{facts.agent_prefix}Dockerfile"
    text = _read(dockerfile)
    ours = text is None or is_generated(dockerfile.name, text)
    if ours or "--bind" in (text or ""):
        if host is not None:
            check.note(
                f'fastagent.toml sets [http] host = "{host}"; the image passes --bind 0.0.0.0, which wins '
                "in the container (keep the setting for local runs)"
            )
        return
    if host is None:  # start binds 127.0.0.1 unless told otherwise
        check.gate(
            "your Dockerfile (kept) does not pass --bind, and fastagent start binds 127.0.0.1 by default: "
            "nothing outside the container could reach the server. Add --bind 0.0.0.0 to its fastagent "
            "start command"
        )
        return
    check.gate(
        f'fastagent.toml sets [http] host = "{host}" and your Dockerfile (kept) does not pass --bind: '
        "it travels into the image, where nothing outside the container could reach the server. "
        "Add --bind 0.0.0.0 to its fastagent start command, or drop the setting"
    )


def _dockerignore(facts: DeployFacts, check: Preflight, rel: str, force: bool) -> None:
    text = _read(facts.workspace / rel)
    if text is None:
        return
    ours = is_generated(rel, text)
    if ours and force:
        return  # regenerated by this very run
    ignore = DockerIgnore(text)

    def remedy(paths: list[str]) -> str:
        if ours:
            return "Re-run with --force to regenerate it."
        return f"Add {' and '.join(f'`/{p}`' for p in paths)} to it before deploying."

    prefix = facts.agent_prefix
    if prefix and ignore.excludes(f"{prefix}fastagent.toml"):
        check.gate(
            f"your {rel} (kept) excludes `{prefix.rstrip('/')}`: the build context would ship WITHOUT the "
            "agent (the box has no config and crash-loops). Remove that rule before deploying."
        )
    leaks = [p for p in _secret_files(facts) if not ignore.excludes(p)]
    if leaks:
        check.gate(
            f"your {rel} (kept) does not exclude {', '.join(f'`{p}`' for p in leaks)}: the build context "
            f"would BAKE SECRETS INTO THE IMAGE. {remedy(leaks)}"
        )
    sessions = _in_context(facts.workspace, facts.state_root / "sessions")
    if sessions and (facts.workspace / sessions).exists() and not ignore.excludes(f"{sessions}/x.jsonl"):
        check.warn(
            f"your {rel} (kept) does not exclude `{sessions}`: this machine's sessions would ship in the "
            f"image. {remedy([sessions.rsplit('/', 1)[0] if '/' in sessions else sessions])}"
        )
    venvs = [v for v in (".venv", f"{prefix}.venv") if (facts.workspace / v).is_dir()]
    shipped = [v for v in dict.fromkeys(venvs) if not ignore.excludes(f"{v}/pyvenv.cfg")]
    if shipped:
        check.warn(
            f"your {rel} does not exclude {' or '.join(f'`{v}`' for v in shipped)}: this machine's "
            f"virtual environment would be uploaded into the image. {remedy(shipped)}"
        )
    if (facts.workspace / ".git").exists() and ignore.excludes(".git/HEAD"):
        check.note(
            f"your {rel} excludes .git: the image ships without history, so the agent cannot pull or push "
            "(it can still git clone its repository)"
        )


def _secret_files(facts: DeployFacts) -> list[str]:
    """Credential files that exist inside the build context: the auth file, ``.env`` files of the
    workspace root and the agent directory."""
    found: list[str] = []
    auth = _in_context(facts.workspace, facts.auth_path)
    if auth and facts.auth_path.is_file():
        found.append(auth)
    for folder in dict.fromkeys([facts.workspace, facts.agent_dir]):
        try:
            names = sorted(p.name for p in folder.iterdir() if p.is_file())
        except OSError:
            continue
        for name in names:
            if (name == ".env" or name.startswith(".env.")) and name != ".env.example":
                rel = _in_context(facts.workspace, folder / name)
                if rel and rel not in found:
                    found.append(rel)
    return found


def _apt(facts: DeployFacts, check: Preflight) -> None:
    packages = facts.config.deploy.apt
    dockerfile = f"{facts.agent_prefix}Dockerfile"
    text = _read(facts.workspace / dockerfile)
    if packages and text is not None and not is_generated(dockerfile, text):
        check.warn(
            f"kept your hand-written {dockerfile}: [deploy] apt ({', '.join(packages)}) is NOT applied; "
            "install those packages in your Dockerfile"
        )


def _in_context(workspace: Path, path: Path) -> str | None:
    try:
        rel = path.resolve().relative_to(workspace)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
