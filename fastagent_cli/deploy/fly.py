"""``fastagent deploy fly``: ``fly.toml`` plus the runbook, and ``--run`` to drive ``fly``.

``fly.toml``: ``auto_stop_machines = "suspend"`` (``--stop``: ``"stop"``), ``min_machines_running``
0, or 1 when something needs a running machine (GitHub, schedules, self-scheduling, a long
connection) or with ``--no-scale-to-zero``; ``primary_region = "iad"``; the state root on the
``data`` volume at ``/data``; ``internal_port``; one 512 MB VM.

``--run`` is idempotent and resumable: the app and the volume are created only when missing,
secrets go in over stdin (``fly secrets import --stage``), ``fly deploy`` builds remotely, then
webhooks are registered at ``https://<app>.fly.dev``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from fastagent_cli.deploy.artifacts import MARKER, Artifact
from fastagent_cli.deploy.container import container_artifacts
from fastagent_cli.deploy.docker import STATE_DIR, model_auth_lines
from fastagent_cli.deploy.facts import DeployFacts
from fastagent_cli.deploy.runner import NOT_FOUND, CliRunner
from fastagent_cli.deploy.secrets import assemble_secrets, require_values
from fastagent_cli.deploy.webhooks import register_webhooks
from fastagent_cli.errors import DeployError

__all__ = ["DEFAULT_REGION", "app_name", "fly_artifacts", "fly_runbook", "parse_fly_toml", "run_fly"]

DEFAULT_REGION = "iad"


def app_name(workspace_name: str) -> str:
    """A Fly app name: lower-case letters, digits and dashes, starting with a letter."""
    slug = re.sub(r"[^a-z0-9]+", "-", workspace_name.lower()).strip("-")
    return slug if re.match(r"[a-z]", slug) else f"app-{slug or 'agent'}"


def parse_fly_toml(text: str) -> dict[str, str]:
    """``app``, ``primary_region`` and ``min_machines_running`` of a kept ``fly.toml`` (as text)."""
    out: dict[str, str] = {}
    for key in ("app", "primary_region"):
        found = re.search(rf"^\s*{key}\s*=\s*[\"']([^\"']+)[\"']", text, re.M)
        if found:
            out[key] = found.group(1)
    found = re.search(r"^\s*min_machines_running\s*=\s*(\d+)", text, re.M)
    if found:
        out["min_machines_running"] = found.group(1)
    return out


def _fly_toml(facts: DeployFacts, app: str, *, stop: bool, scale_to_zero: bool) -> str:
    reasons = facts.keep_running_reasons()
    if reasons:
        minimum = f"  min_machines_running = 1         # {reasons[0]}"
    elif not scale_to_zero:
        minimum = "  min_machines_running = 1         # kept running (--no-scale-to-zero)"
    else:
        minimum = "  min_machines_running = 0         # scale to zero when idle"
    auto_stop = (
        '  auto_stop_machines = "stop"      # stop when idle (cold start on the next request)'
        if stop
        else '  auto_stop_machines = "suspend"   # suspend when idle (resumes in ~hundreds of ms)'
    )
    return f"""{MARKER} fly`. Edit freely: it is not regenerated unless you pass --force.
app = "{app}"
primary_region = "{DEFAULT_REGION}"  # your region (`fly platform regions`); the volume must be there too

[build]

[env]
  FASTAGENT_STATE_DIR = "{STATE_DIR}"  # sessions, channel state, the seeded auth.json
  PORT = "{facts.port}"

[http_service]
  internal_port = {facts.port}
  force_https = true
{auto_stop}
  auto_start_machines = true
{minimum}

[mounts]
  source = "data"
  destination = "/data"

[[vm]]
  size = "shared-cpu-1x"
  memory = "512mb"                 # suspend is not recommended above 2 GB
"""


def fly_artifacts(facts: DeployFacts, app: str, *, stop: bool, scale_to_zero: bool) -> list[Artifact]:
    return [
        Artifact(
            f"{facts.agent_prefix}fly.toml", _fly_toml(facts, app, stop=stop, scale_to_zero=scale_to_zero)
        ),
        *container_artifacts(facts.container),
    ]


def _deploy_args(facts: DeployFacts, app: str) -> list[str]:
    prefix = facts.agent_prefix
    return [
        "deploy",
        ".",
        "--app",
        app,
        "--config",
        f"{prefix}fly.toml",
        "--dockerfile",
        f"{prefix}Dockerfile",
    ]


def fly_runbook(facts: DeployFacts, app: str, region: str) -> list[str]:
    specs = facts.secrets()
    required = [s for s in specs if s.required]
    optional = [s for s in specs if not s.required]
    lines = [
        f'# Deploy "{app}" to Fly.io. fly.toml and the Dockerfile are generated above (kept if they exist).',
        "# Prereqs: flyctl (https://fly.io/docs/flyctl/install) and `fly auth login`.",
        "",
        "# One-time setup (skip on a redeploy: a second volume would split the state).",
        "# App names are global: if this one is taken, set another `app` in fly.toml and re-run deploy.",
        f"fly apps create {app}",
        f"# The volume holds {STATE_DIR}; its region must equal primary_region in fly.toml.",
        f"fly volumes create data --app {app} --region {region} --size 1",
    ]
    if required:
        lines += [
            "",
            "# Required secrets (replace each <value>):",
            *(f"#   {s.name}: {s.hint}" for s in required),
            f"fly secrets set --app {app} " + " ".join(f"{s.name}=<value>" for s in required),
        ]
    if optional:
        lines += [
            "",
            "# Optional secrets:",
            *(f"#   {s.name}: {s.hint}" for s in optional),
            f"# fly secrets set --app {app} " + " ".join(f"{s.name}=<value>" for s in optional),
        ]
    lines += model_auth_lines(facts)
    lines += [
        "",
        "# Build (remotely) and ship from the workspace root; a redeploy is this step alone.",
        "fly " + " ".join(_deploy_args(facts, app)),
    ]
    routes = [c.name for c in facts.route_channels]
    if routes:
        lines += [
            "",
            f"# Then register the webhooks at https://{app}.fly.dev ({', '.join(routes)});",
            "# `fastagent deploy fly --run` does it for channels with a register_webhook hook.",
        ]
    lines += [
        "",
        "# Keep this one machine: the /data volume belongs to it; more machines would split the state.",
    ]
    return lines


def _names(stdout: str) -> set[str]:
    try:
        doc = json.loads(stdout)
    except ValueError:
        return set()
    items = doc if isinstance(doc, list) else []
    return {str(item.get("Name") or item.get("name")) for item in items if isinstance(item, dict)}


def run_fly(facts: DeployFacts, fly: CliRunner, say: Callable[[str], None], *, app: str, region: str) -> str:
    """Drive flyctl to a deployed app; returns its public URL."""

    def stop(reason: str) -> DeployError:
        return DeployError(f"deploy stopped: {reason}")

    if fly(["version"], capture=True).code == NOT_FOUND:
        raise stop("flyctl not found: install it (https://fly.io/docs/flyctl/install), then re-run")
    if fly(["auth", "whoami"], capture=True).code != 0:
        raise stop("not logged in to Fly: run `fly auth login` (or set FLY_API_TOKEN), then re-run")
    secrets = assemble_secrets(facts)
    require_values(secrets)
    apps = fly(["apps", "list", "--json"], capture=True)
    if apps.code != 0:
        raise stop("`fly apps list` failed: see the flyctl output above, fix it and re-run")
    if app in _names(apps.stdout):
        say(f"[fastagent] app {app} exists, skipping create")
    else:
        say(f"[fastagent] creating app {app}...")
        if fly(["apps", "create", app]).code != 0:
            raise stop(
                f"`fly apps create {app}` failed: app names are global and it may be taken; set another "
                "`app` in fly.toml and re-run"
            )
    volumes = fly(["volumes", "list", "--app", app, "--json"], capture=True)
    if volumes.code != 0:
        raise stop("`fly volumes list` failed: see the flyctl output above, fix it and re-run")
    if "data" in _names(volumes.stdout):
        say("[fastagent] volume data exists, skipping create")
    else:
        say(f"[fastagent] creating volume data in {region}...")
        create = ["volumes", "create", "data", "--app", app, "--region", region, "--size", "1", "--yes"]
        if fly(create).code != 0:
            raise stop("`fly volumes create` failed: see the flyctl output above")
    if secrets.values:
        say(f"[fastagent] setting {len(secrets.values)} secret(s): {', '.join(secrets.values)}")
        stdin = "".join(f"{name}={value}\n" for name, value in secrets.values.items())
        if fly(["secrets", "import", "--stage", "--app", app], input=stdin).code != 0:
            raise stop("`fly secrets import` failed: see the flyctl output above")
    say("[fastagent] deploying (remote build)...")
    if fly([*_deploy_args(facts, app), "--remote-only", "--yes", "--ha=false"]).code != 0:
        raise stop("`fly deploy` failed: see the flyctl output above, fix it and re-run")
    url = f"https://{app}.fly.dev"
    register_webhooks(facts, url, say, "re-run `fastagent deploy fly --run` (done steps are skipped)")
    say(f"[fastagent] deployed -> {url}")
    return url
