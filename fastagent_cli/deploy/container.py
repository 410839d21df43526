"""The portable container: ``Dockerfile`` and its ``.dockerignore``, the same for every host.

The image bakes the whole workspace at ``/app`` (what you see is what ships), installs this
version of fastagent on a slim Python base, from the package index, or, when this machine's
fastagent came from elsewhere (a checkout, a local wheel), from the wheel deploy ships in the build
context (:mod:`.wheel`); ``--build-arg FASTAGENT_PIP_SPEC=...`` points it elsewhere (a wheel URL,
a git URL, a private index). Then the agent's own ``requirements.txt``
when it has one, and runs ``fastagent start /app --bind 0.0.0.0`` on ``$PORT``. The bind is
explicit: a container is reached through its published port, never its loopback.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastagent_cli._version import __version__
from fastagent_cli.deploy.artifacts import MARKER, Artifact

__all__ = ["BASE_IMAGE", "PIP_SPEC", "ContainerFacts", "container_artifacts", "dockerignore_text"]

BASE_IMAGE = "python:3.12-slim"
PIP_SPEC = f"fastagent-cli=={__version__}"
REQUIREMENTS = "requirements.txt"


@dataclass(frozen=True, slots=True)
class ContainerFacts:
    agent_prefix: str
    """Where the agent sits in the build context: ``"fastagent/"``, or ``""`` when it is the workspace."""
    port: int
    apt: tuple[str, ...] = ()
    """``[deploy] apt``, plus git when the workspace ships a ``.git``."""
    has_requirements: bool = False
    """``<agent>/requirements.txt`` exists: the image installs it."""
    machinery_paths: tuple[str, ...] = ()
    """State or credential paths inside the context that the name rules miss (a relocated
    ``FASTAGENT_STATE_DIR`` / ``FASTAGENT_AUTH_PATH``); excluded by path."""
    wheel: str | None = None
    """The fastagent wheel deploy ships in the context (its path there), when no index has it."""


def _dockerfile(facts: ContainerFacts) -> str:
    prefix = facts.agent_prefix
    layout = (
        f"The whole directory is the agent's workspace; the agent itself lives in {prefix}"
        if prefix
        else "The directory is the agent and its own workspace."
    )
    lines = [
        f"{MARKER}`. {layout}",
        "# Delete the line above to take ownership (deploy then keeps this file byte for byte).",
        f"FROM {BASE_IMAGE}",
    ]
    if facts.apt:
        lines += [
            "RUN apt-get update \\",
            f" && apt-get install -y --no-install-recommends {' '.join(facts.apt)} \\",
            " && rm -rf /var/lib/apt/lists/*",
        ]
    lines.append("ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1")
    if facts.wheel is not None:
        name = facts.wheel.rsplit("/", 1)[-1]
        lines += [
            "# fastagent as the machine that generated this file runs it (no package index has it): the",
            "# wheel deploy wrote into the build context. Its dependencies come from the index.",
            f"COPY {facts.wheel} /tmp/fastagent-dist/",
            f'ARG FASTAGENT_PIP_SPEC="/tmp/fastagent-dist/{name}"',
        ]
    else:
        lines += [
            "# fastagent, pinned to the version that generated this file.",
            f'ARG FASTAGENT_PIP_SPEC="{PIP_SPEC}"',
        ]
    lines += ['RUN pip install "$FASTAGENT_PIP_SPEC"', "WORKDIR /app"]
    if prefix:  # the agent this image is for, even when the workspace holds several
        lines.append(f"ENV FASTAGENT_AGENT={prefix.rstrip('/')}")
    if facts.has_requirements:
        lines += [
            f"COPY {prefix}{REQUIREMENTS} ./{prefix}",
            f"RUN pip install -r {prefix}{REQUIREMENTS}",
        ]
    lines += [
        "COPY . .",
        f"EXPOSE {facts.port}",
        'CMD ["fastagent", "start", "/app", "--bind", "0.0.0.0", "--no-input"]',
    ]
    return "\n".join(lines) + "\n"


_IGNORE_BASE = f"""{MARKER}`. Delete this line to take ownership (deploy then keeps your file).
# Machine state (sessions, auth.json) lives on the host's volume; secrets travel as host secrets.
**/.fastagent
**/.env
**/.env.*
!**/.env.example
# Build-machine leftovers.
**/.venv
**/venv
**/__pycache__
**/*.py[co]
**/.mypy_cache
**/.pytest_cache
**/.ruff_cache
**/.cache
**/node_modules
**/*.log
# .git is shipped on purpose: the agent can pull to freshen content and push its work back (the
# generated image installs git when a .git ships). For a smaller image, add a ".git" line here.
"""


def dockerignore_text(facts: ContainerFacts) -> str:
    extra = "".join(
        f"# relocated state/credentials (FASTAGENT_STATE_DIR / FASTAGENT_AUTH_PATH)\n/{path}\n"
        for path in facts.machinery_paths
    )
    return _IGNORE_BASE + extra


def container_artifacts(facts: ContainerFacts) -> list[Artifact]:
    """``<agent>/Dockerfile``, ``<agent>/Dockerfile.dockerignore`` (what BuildKit reads for that
    Dockerfile) and the workspace-root ``.dockerignore`` (what flyctl's and railway's packers read;
    the only file deploy writes outside the agent directory)."""
    ignore = dockerignore_text(facts)
    return [
        Artifact(f"{facts.agent_prefix}Dockerfile", _dockerfile(facts)),
        Artifact(f"{facts.agent_prefix}Dockerfile.dockerignore", ignore),
        Artifact(".dockerignore", ignore),
    ]
