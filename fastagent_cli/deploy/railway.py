"""``fastagent deploy railway``: ``railway.json`` plus the runbook, and ``--run`` to drive ``railway``.

``railway.json`` holds only what Railway reads from a file (build from the agent's Dockerfile,
``/health`` as the deploy health check, restart on failure); the volume, the variables and App
Sleeping are service settings, applied by the runbook (App Sleeping is dashboard-only). The public
domain is minted by ``railway domain``.

``--run`` provisions a new project and so refuses a directory already linked to one unless
``--into-linked`` says to provision into it; secret values go in one ``railway variables set NAME
--stdin`` at a time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from fastagent_cli.deploy.artifacts import RAILWAY_MARKER_KEY, Artifact
from fastagent_cli.deploy.container import container_artifacts
from fastagent_cli.deploy.docker import MOUNT, STATE_DIR, model_auth_lines
from fastagent_cli.deploy.facts import DeployFacts
from fastagent_cli.deploy.runner import NOT_FOUND, CliRunner
from fastagent_cli.deploy.secrets import assemble_secrets, require_values
from fastagent_cli.deploy.webhooks import register_webhooks
from fastagent_cli.errors import DeployError

__all__ = ["railway_artifacts", "railway_runbook", "run_railway", "service_name"]


def service_name(workspace_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]+", "-", workspace_name).strip("-") or "agent"


def _railway_json(facts: DeployFacts) -> str:
    doc = {
        "$schema": "https://railway.com/railway.schema.json",
        RAILWAY_MARKER_KEY: "fastagent deploy railway (delete this key to take ownership)",
        "build": {"builder": "DOCKERFILE", "dockerfilePath": f"{facts.agent_prefix}Dockerfile"},
        "deploy": {"healthcheckPath": "/health", "restartPolicyType": "ON_FAILURE"},
    }
    return json.dumps(doc, indent=2) + "\n"


def railway_artifacts(facts: DeployFacts) -> list[Artifact]:
    return [
        Artifact(f"{facts.agent_prefix}railway.json", _railway_json(facts)),
        *container_artifacts(facts.container),
    ]


def _machinery(facts: DeployFacts) -> list[str]:
    return [f"FASTAGENT_STATE_DIR={STATE_DIR}", f"RAILWAY_DOCKERFILE_PATH=/{facts.agent_prefix}Dockerfile"]


def railway_runbook(facts: DeployFacts, name: str) -> list[str]:
    specs = facts.secrets()
    required = [s for s in specs if s.required]
    optional = [s for s in specs if not s.required]
    lines = [
        "# Deploy to Railway. railway.json and the Dockerfile are generated above (kept when they exist).",
        "# Prereqs: the Railway CLI (https://docs.railway.com/guides/cli) and `railway login`.",
        "",
        "# One-time setup; a redeploy is `railway up` alone (re-running these makes duplicates).",
        "railway init            # or `railway link` to an existing project",
        f"railway add --service {name}",
        f"railway volume add --mount-path {MOUNT}",
        "# Variables before the first deploy (Railway sets PORT itself):",
        "railway variables set " + " ".join(_machinery(facts)),
    ]
    if required:
        lines += [
            "# Required secrets (replace each <value>):",
            *(f"#   {s.name}: {s.hint}" for s in required),
            "railway variables set " + " ".join(f"{s.name}=<value>" for s in required),
        ]
    if optional:
        lines += [
            "# Optional secrets:",
            *(f"#   {s.name}: {s.hint}" for s in optional),
            "# railway variables set " + " ".join(f"{s.name}=<value>" for s in optional),
        ]
    lines += model_auth_lines(facts)
    lines += [
        "",
        "# Upload the workspace and build the Dockerfile on Railway; this is also the whole redeploy.",
        "railway up",
        "",
        f"# Optional: point the service at {facts.agent_prefix}railway.json (Settings -> Config-as-code,",
        "# in the dashboard) so a deploy that fails /health is marked failed instead of going live.",
    ]
    routes = [c.name for c in facts.route_channels]
    if routes:
        lines += [
            "",
            f"# Mint the public domain, then register the webhooks there ({', '.join(routes)}):",
            "railway domain",
        ]
    reasons = facts.keep_running_reasons()
    lines += [
        "",
        f"# Scale to zero: do NOT enable App Sleeping: {'; '.join(reasons)}."
        if reasons
        else "# Scale to zero (optional, dashboard-only): Settings -> Deploy -> Serverless -> App Sleeping.",
        f"# Keep this one service: the {MOUNT} volume belongs to it; replicas would split the state.",
    ]
    return lines


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    return []


def _json_strings(stdout: str) -> list[str]:
    try:
        return _strings(json.loads(stdout))
    except ValueError:
        return []


def _domain(stdout: str) -> str | None:
    for text in _json_strings(stdout) or [stdout]:
        found = re.search(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*\.railway\.app", text, re.I)
        if found:
            return f"https://{found.group(0)}"
    return None


def run_railway(
    facts: DeployFacts, railway: CliRunner, say: Callable[[str], None], *, name: str, into_linked: bool
) -> str:
    """Drive the Railway CLI to a deployed service; returns its public URL."""

    def stop(reason: str) -> DeployError:
        return DeployError(f"deploy stopped: {reason}")

    service = ["--service", name]
    if railway(["--version"], capture=True).code == NOT_FOUND:
        raise stop("railway CLI not found: install it (https://docs.railway.com/guides/cli), then re-run")
    if railway(["whoami"], capture=True).code != 0:
        raise stop("not logged in to Railway: run `railway login` (or set RAILWAY_API_KEY), then re-run")
    secrets = assemble_secrets(facts)
    require_values(secrets)
    status = railway(["status", "--json"], capture=True)
    linked = status.stdout.strip() != ""
    if linked and not into_linked:
        raise stop(
            "this directory is already linked to a Railway project: --run provisions a NEW project and will "
            "not deploy into another one. Redeploy with `railway up`, provision into the linked project with "
            "--into-linked, or `railway unlink` first"
        )
    if linked:
        say("[fastagent] provisioning into the linked project (--into-linked)")
    else:
        if into_linked:
            say("[fastagent] warn: --into-linked, but this directory is not linked: creating a project")
        say(f"[fastagent] creating project {name}...")
        if railway(["init", "--name", name]).code != 0:
            raise stop(
                "`railway init` failed: see the railway output above "
                "(several workspaces? run it once yourself)"
            )
        say(f"[fastagent] creating service {name}...")
        if railway(["add", "--service", name]).code != 0:
            raise stop(
                f"`railway add --service {name}` failed after `railway init` linked this directory: "
                "finish with that command, then re-run with --into-linked"
            )
    say(
        "[fastagent] setting FASTAGENT_STATE_DIR, RAILWAY_DOCKERFILE_PATH and "
        f"{len(secrets.values)} secret(s)"
    )
    if railway(["variables", "set", *_machinery(facts), *service]).code != 0:
        raise stop("`railway variables set` failed: see the railway output above")
    for key, value in secrets.values.items():
        if railway(["variables", "set", key, "--stdin", *service], input=value).code != 0:
            raise stop(f"`railway variables set {key}` failed: see the railway output above")
    volumes = railway(["volume", "list", "--json"], capture=True)
    if MOUNT in _json_strings(volumes.stdout):
        say(f"[fastagent] volume at {MOUNT} exists, skipping")
    else:
        say(f"[fastagent] creating the volume at {MOUNT}...")
        if railway(["volume", "add", "--mount-path", MOUNT]).code != 0:
            raise stop("`railway volume add` failed: see the railway output above")
    say("[fastagent] deploying (railway up)...")
    if railway(["up", "--ci", *service]).code != 0:
        raise stop("`railway up` failed: see the railway output above, fix it and re-run")
    url = _domain(railway(["domain", "--json", *service], capture=True).stdout)
    if url is None:
        raise stop(
            "could not read a domain from `railway domain`: run it yourself, then register any webhook"
        )
    register_webhooks(facts, url, say, "re-run with --into-linked to retry")
    say(f"[fastagent] deployed -> {url}")
    return url
