"""``fastagent deploy docker``: a local Docker Compose topology, and ``--run`` to start it.

``<agent>/fastagent.compose.yml`` has one ``agent`` service built from the workspace, its port
published on loopback only (``127.0.0.1:<port>:<port>``), ``PORT`` and the state root on one named
volume (``state:/data``), every secret interpolated from the caller's environment (``NAME:
"${NAME:-}"``, so values never land in the file), ``restart: unless-stopped``. ``--tunnel`` adds
an ephemeral Cloudflare Quick Tunnel service (``tunnel``) dialing ``http://agent:<port>``.

``--run``: Docker CLI, Compose >= 2.3.3 and the daemon are checked, the secret gates applied,
then ``docker compose up -d --build``; the agent must answer ``/health`` within 30 s (polled every
500 ms); with a tunnel, its ``*.trycloudflare.com`` URL is read from the logs and webhooks are
registered there.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from fastagent_cli.deploy.artifacts import MARKER, Artifact
from fastagent_cli.deploy.container import container_artifacts
from fastagent_cli.deploy.facts import DeployFacts
from fastagent_cli.deploy.runner import NOT_FOUND, CliRunner, wait_for_health
from fastagent_cli.deploy.secrets import AUTH_SEED_ENV, assemble_secrets, require_values
from fastagent_cli.deploy.webhooks import register_webhooks
from fastagent_cli.errors import DeployError

__all__ = [
    "CLOUDFLARED_IMAGE",
    "COMPOSE_FILE",
    "MIN_COMPOSE",
    "compose_has_tunnel",
    "docker_artifacts",
    "docker_runbook",
    "project_name",
    "run_docker",
]

COMPOSE_FILE = "fastagent.compose.yml"
CLOUDFLARED_IMAGE = "cloudflare/cloudflared:2026.7.1"
MIN_COMPOSE = (2, 3, 3)
MOUNT = "/data"
STATE_DIR = f"{MOUNT}/.state"
HEALTH_TIMEOUT_S = 30.0
HEALTH_INTERVAL_S = 0.5
_TUNNEL_URL = re.compile(r"https://(?!api\.)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.trycloudflare\.com\b")
_TUNNEL_SERVICE = re.compile(r"^[ \t]+tunnel:[ \t]*(?:#.*)?$", re.M)


def project_name(workspace_name: str) -> str:
    """A Compose project name: lower-case ``[a-z0-9_-]``, starting with an alphanumeric."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", workspace_name.lower()).strip("-_")[:54].rstrip("-_")
    return f"fastagent-{slug or 'agent'}"


def compose_has_tunnel(text: str) -> bool:
    return bool(_TUNNEL_SERVICE.search(text))


def _compose_yaml(facts: DeployFacts, tunnel: bool) -> str:
    port = facts.port
    names = [*dict.fromkeys([*(s.name for s in facts.secrets()), AUTH_SEED_ENV])]
    secret_env = "".join(f'      {name}: "${{{name}:-}}"\n' for name in names)
    context = ".." if facts.agent_prefix else "."
    text = f"""{MARKER} docker`. Edit freely: it is kept unless you pass --force.
# Durable public ingress is yours to add; --tunnel adds an ephemeral Quick Tunnel service.
name: {project_name(facts.workspace.name)}

services:
  agent:
    build:
      context: {context}
      dockerfile: {facts.agent_prefix}Dockerfile
    ports:
      - "127.0.0.1:{port}:{port}"
    environment:
      PORT: "{port}"
      # Machine state (sessions, channel state, the seeded auth.json) on the one volume.
      FASTAGENT_STATE_DIR: "{STATE_DIR}"
{secret_env}    volumes:
      - state:{MOUNT}
    restart: unless-stopped
"""
    if tunnel:
        text += f"""
  # Cloudflare Quick Tunnel: an ephemeral public URL. No restart policy on purpose: a new process
  # gets a new URL, and webhooks must be registered again (re-run fastagent deploy docker --run).
  tunnel:
    image: {CLOUDFLARED_IMAGE}
    command:
      - tunnel
      - --no-autoupdate
      - --url
      - http://agent:{port}
    depends_on:
      - agent
    environment:
      # The origin is Docker-internal: keep an injected HTTP(S)_PROXY away from it.
      NO_PROXY: "agent,localhost,127.0.0.1,${{NO_PROXY:-}}"
      no_proxy: "agent,localhost,127.0.0.1,${{no_proxy:-}}"
    restart: "no"
"""
    return text + "\nvolumes:\n  state:\n"


def docker_artifacts(facts: DeployFacts, tunnel: bool) -> list[Artifact]:
    return [
        Artifact(f"{facts.agent_prefix}{COMPOSE_FILE}", _compose_yaml(facts, tunnel)),
        *container_artifacts(facts.container),
    ]


def docker_runbook(facts: DeployFacts, tunnel: bool) -> list[str]:
    compose_path = f"{facts.agent_prefix}{COMPOSE_FILE}"
    compose = f"docker compose -f {compose_path}"
    lines = [
        f"# Run the agent in local Docker. {compose_path} and the Dockerfile are generated above (kept",
        "# when they exist: edit them freely).",
        "# Prereqs: Docker Engine/Desktop with Compose >= 2.3.3 (`docker compose version`).",
    ]
    lines += _secret_lines(facts, "put them in the agent's .env or export them")
    lines += [
        "# Run from the workspace root"
        + (
            f" (the directory containing {facts.agent_prefix})."
            if facts.agent_prefix
            else " (this directory)."
        ),
        "",
        f"# Build and (re)start; re-running it is the whole redeploy. State stays on the volume at {MOUNT}.",
        f"{compose} up -d --build",
        f"curl --fail http://127.0.0.1:{facts.port}/health",
        "",
        "# Operate it:",
        f"{compose} logs -f agent",
        f"{compose} ps",
        f"{compose} down        # stops the containers, keeps the state volume",
        f"# {compose} down -v   # DESTRUCTIVE: also deletes sessions, channel state and the seeded auth",
    ]
    routes = [c.name for c in facts.route_channels]
    if tunnel:
        lines += [
            "",
            "# Quick Tunnel: `fastagent deploy docker --run` starts it, reads its ephemeral URL from the",
            "# logs and registers the webhooks. Re-run it after the tunnel container restarts (new URL).",
            f"{compose} logs -f tunnel",
        ]
    elif routes:
        lines += [
            "",
            "# Public ingress is yours to add (a tunnel, a reverse proxy with TLS); then point the route",
            f"# channels' platforms at it ({', '.join(routes)}), or use --tunnel for an ephemeral URL.",
        ]
    lines.append("# Keep one agent replica: the state volume belongs to one process.")
    return lines


def _secret_lines(facts: DeployFacts, where: str) -> list[str]:
    specs = facts.secrets()
    lines: list[str] = []
    required = [s for s in specs if s.required]
    optional = [s for s in specs if not s.required]
    if required:
        lines += [f"# Required values ({where}):", *(f"#   {s.name}: {s.hint}" for s in required)]
    if optional:
        lines += ["# Optional values:", *(f"#   {s.name}: {s.hint}" for s in optional)]
    lines += model_auth_lines(facts)
    return lines


def model_auth_lines(facts: DeployFacts) -> list[str]:
    auth = facts.model_auth
    if auth.kind == "stored":
        return [
            "# Model auth: a stored credential (auth.json); --run carries it as FASTAGENT_AUTH_SEED, which",
            "# fastagent start writes to the box's auth path when none exists there.",
        ]
    if auth.kind == "none" and auth.global_file is not None:
        return [
            f"# Model auth: only in {auth.global_file} here, which deploy does not carry: store one for",
            "# this agent (`fastagent login <provider> <agent dir>`) or set the key in .env before --run.",
        ]
    if auth.kind == "none":
        return [f"# Model auth: none found here: {auth.needs} before --run."]
    if auth.kind == "definition":
        return [
            "# Model auth: models.json carries the key (a literal or a !command): it travels in the image."
        ]
    return []


def _compose_version(text: str) -> tuple[int, ...] | None:
    found = re.search(r"v?(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(part) for part in found.groups()) if found else None


def run_docker(
    facts: DeployFacts,
    docker: CliRunner,
    say: Callable[[str], None],
    *,
    require_tunnel: bool,
    health_timeout: float = HEALTH_TIMEOUT_S,
    tunnel_attempts: int = 60,
) -> str | None:
    """Drive Docker Compose; returns the local URL (``None`` without a published port)."""
    compose_path = f"{facts.agent_prefix}{COMPOSE_FILE}"
    compose = ["compose", "-f", compose_path]

    def stop(reason: str) -> DeployError:
        return DeployError(f"deploy stopped: {reason}")

    version = docker(["compose", "version"], capture=True)
    if version.code == NOT_FOUND:
        raise stop("Docker CLI not found: install Docker Engine or Desktop, then re-run")
    if version.code != 0:
        raise stop(
            "the Docker Compose plugin is unavailable: install or enable `docker compose`, then re-run"
        )
    found = _compose_version(version.stdout)
    if found is not None and found < MIN_COMPOSE:
        have = ".".join(map(str, found))
        raise stop(f"Docker Compose {have} is too old: deploy needs >= 2.3.3; upgrade it, then re-run")
    secrets = assemble_secrets(facts)
    require_values(secrets)
    env = secrets.values
    if docker(["info"], capture=True).code != 0:
        raise stop("the Docker daemon is unavailable: start Docker Engine or Desktop, then re-run")
    configured = docker([*compose, "config", "--services"], capture=True, env=env)
    if configured.code != 0:
        raise stop(
            f"could not load {compose_path}: fix it (Compose >= 2.3.3 reads the generated one), then re-run"
        )
    services = configured.stdout.split()
    if "agent" not in services:
        raise stop(f'{compose_path} must keep the "agent" service for deploy docker --run')
    has_tunnel = "tunnel" in services
    if require_tunnel and not has_tunnel:
        raise stop(
            f'--tunnel was requested but the kept {compose_path} has no "tunnel" service: edit it, delete it '
            "and regenerate, or pass --force"
        )
    if has_tunnel:
        say("[fastagent] recreating the ephemeral tunnel service...")
        if docker([*compose, "rm", "-s", "-f", "tunnel"], env=env).code != 0:
            raise stop(
                f"could not recreate the tunnel service: inspect `docker compose -f {compose_path} ps`"
            )
    say(f"[fastagent] building and starting {compose_path}...")
    if docker([*compose, "up", "-d", "--build"], env=env).code != 0:
        raise stop("`docker compose up` failed: see the Docker output above, fix it and re-run")
    running = docker([*compose, "ps", "--status", "running", "--services"], capture=True, env=env)
    if running.code != 0 or "agent" not in running.stdout.split():
        raise stop(
            f'the "agent" service is not running: inspect `docker compose -f {compose_path} logs agent`'
        )
    published = docker([*compose, "port", "agent", str(facts.port)], capture=True, env=env)
    port = (
        re.search(r":(\d+)\s*$", published.stdout.strip().splitlines()[0])
        if published.stdout.strip()
        else None
    )
    url = f"http://127.0.0.1:{port.group(1)}" if published.code == 0 and port else None
    if url is None:
        say("[fastagent] agent is running (no published host port: your Compose file owns its ingress)")
    elif not wait_for_health(f"{url}/health", timeout=health_timeout, interval=HEALTH_INTERVAL_S):
        raise stop(
            f"the agent did not answer {url}/health within {health_timeout:g} s: inspect "
            f"`docker compose -f {compose_path} logs agent`"
        )
    say(f"[fastagent] running -> {url}" if url else "[fastagent] running")
    say(f"[fastagent] logs: docker compose -f {compose_path} logs -f agent")
    say(f"[fastagent] stop: docker compose -f {compose_path} down (the state volume is kept)")
    if not has_tunnel:
        return url
    say("[fastagent] waiting for the tunnel service to print its Quick Tunnel URL...")
    public = None
    for attempt in range(tunnel_attempts):
        logs = docker([*compose, "logs", "--no-color", "tunnel"], capture=True, env=env)
        hit = _TUNNEL_URL.search(logs.stdout) if logs.code == 0 else None
        if hit:
            public = hit.group(0)
            break
        if attempt + 1 < tunnel_attempts:
            time.sleep(HEALTH_INTERVAL_S)
    if public is None:
        raise stop(
            f"the tunnel printed no Quick Tunnel URL: inspect `docker compose -f {compose_path} logs tunnel`"
        )
    say(f"[fastagent] public URL -> {public}")
    register_webhooks(facts, public, say, "re-run `fastagent deploy docker --run` to retry")
    say(
        "[fastagent] note: Quick Tunnel URLs are ephemeral: after the tunnel container or the Docker daemon "
        "restarts, re-run this deploy so the webhooks get the new URL"
    )
    return url
