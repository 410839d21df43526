"""``fastagent deploy docker|fly|railway [dir]``: generate the deploy, or drive it with ``--run``.

Plan mode (the default) writes the artifacts into the agent directory (plus the workspace-root
``.dockerignore``), prints the runbook on stdout and warnings on stderr, and exits 0. ``--run``
drives the host CLI (``docker compose``, ``fly``, ``railway``); a gate stops it first with
``Error: deploy stopped: <gate>`` (exit 1). See :mod:`fastagent_cli.deploy`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fastagent_cli.cli.common import auth_path_option, dir_argument, model_option, say
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import UsageError

if TYPE_CHECKING:
    from fastagent_cli.deploy.facts import DeployFacts

__all__ = ["HOSTS", "deploy"]

HOSTS = ("docker", "fly", "railway")


@click.command(epilog=examples("deploy"))
@click.argument("host", type=click.Choice(HOSTS))
@dir_argument
@click.option("--run", is_flag=True, help="Drive the host CLI instead of printing the runbook.")
@click.option("--tunnel", is_flag=True, help="docker: add an ephemeral Cloudflare Quick Tunnel service.")
@click.option("--force", is_flag=True, help="Regenerate files deploy generated (never files you own).")
@click.option("--stop", is_flag=True, help='fly: auto_stop_machines = "stop" instead of "suspend".')
@click.option("--no-scale-to-zero", is_flag=True, help="fly: keep one machine running.")
@click.option("--into-linked", is_flag=True, help="railway --run: provision into the already linked project.")
@model_option
@auth_path_option
@click.option("--no-input", is_flag=True, help="Never prompt (no first-run model picker).")
def deploy(
    host: str,
    directory: str,
    run: bool,
    tunnel: bool,
    force: bool,
    stop: bool,
    no_scale_to_zero: bool,
    into_linked: bool,
    model: str | None,
    auth_path: str | None,
    no_input: bool,
) -> None:
    """Deploy the agent in DIR (default .) to HOST: docker (local Compose), fly (Fly.io) or railway.

    Writes a Dockerfile, its .dockerignore and the host's config into the agent directory, then
    prints the runbook; --run carries out the runbook with the host's CLI. Only the model in
    fastagent.toml travels; secrets travel as host secrets, never in the image.
    """
    from fastagent_cli.assembly import inspect_agent_dir
    from fastagent_cli.deploy.facts import facts_of
    from fastagent_cli.deploy.preflight import preflight
    from fastagent_cli.logging_setup import configure_logging

    configure_logging("info")  # what channels' register_webhook hooks say reaches the terminal
    if tunnel and host != "docker":
        raise UsageError("--tunnel works only with `fastagent deploy docker`")
    surface = inspect_agent_dir(directory, model=model, auth_path=auth_path)  # the one read
    if not no_input and model is None and sys.stdin.isatty() and sys.stdout.isatty():
        from fastagent_cli.cli.model_picker import ensure_model

        ensure_model(surface)  # a pick is written to fastagent.toml
    facts = facts_of(surface)
    preflight(facts, run=run, force=force, say=say)
    if facts.container.wheel is not None:  # this fastagent is on no index: ship it
        from fastagent_cli.deploy.wheel import write_wheel

        write_wheel(facts.workspace, facts.container.wheel, facts.fastagent, say)
    if host != "fly" and (stop or no_scale_to_zero):
        say(f"[fastagent] warn: --stop and --no-scale-to-zero are for fly; ignored for {host}")
    if host != "railway" and into_linked:
        say(f"[fastagent] warn: --into-linked is for railway; ignored for {host}")
    if host == "docker":
        lines = _docker(facts, run=run, tunnel=tunnel, force=force)
    elif host == "fly":
        lines = _fly(facts, run=run, force=force, stop=stop, scale_to_zero=not no_scale_to_zero)
    else:
        lines = _railway(facts, run=run, force=force, into_linked=into_linked)
    if lines:
        click.echo("\n".join(lines))


def _existing(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _docker(facts: DeployFacts, *, run: bool, tunnel: bool, force: bool) -> list[str]:
    from fastagent_cli.deploy.artifacts import is_generated, write_artifacts
    from fastagent_cli.deploy.docker import (
        COMPOSE_FILE,
        compose_has_tunnel,
        docker_artifacts,
        docker_runbook,
        run_docker,
    )
    from fastagent_cli.deploy.runner import CliRunner

    wants_tunnel = tunnel and (not facts.channels or bool(facts.route_channels))
    if tunnel and not wants_tunnel:
        say("[fastagent] note: --tunnel skipped: every channel is a long connection (nothing to expose)")
    compose = f"{facts.agent_prefix}{COMPOSE_FILE}"
    kept = _existing(facts.workspace / compose)
    shaped = wants_tunnel
    if kept is not None and not (force and is_generated(compose, kept)):
        shaped = compose_has_tunnel(kept)  # the file on disk is authoritative
    write_artifacts(facts.workspace, docker_artifacts(facts, shaped), force=force, say=say)
    if run:
        run_docker(facts, CliRunner("docker", facts.workspace), say, require_tunnel=wants_tunnel)
        return []
    if wants_tunnel and not shaped:
        say(
            f"[fastagent] warn: --tunnel was requested but the kept {compose} has no "
            '"tunnel" service: edit it, delete it and regenerate, or pass --force'
        )
    return docker_runbook(facts, shaped)


def _fly(facts: DeployFacts, *, run: bool, force: bool, stop: bool, scale_to_zero: bool) -> list[str]:
    from fastagent_cli.deploy.artifacts import is_generated, write_artifacts
    from fastagent_cli.deploy.fly import (
        DEFAULT_REGION,
        app_name,
        fly_artifacts,
        fly_runbook,
        parse_fly_toml,
        run_fly,
    )
    from fastagent_cli.deploy.runner import CliRunner
    from fastagent_cli.errors import DeployError

    rel = f"{facts.agent_prefix}fly.toml"
    existing = _existing(facts.workspace / rel)
    kept = existing is not None and not (force and is_generated(rel, existing))
    parsed = parse_fly_toml(existing) if kept and existing is not None else {}
    app = parsed.get("app") or app_name(facts.workspace.name)
    region = parsed.get("primary_region") or DEFAULT_REGION
    if parsed.get("app"):
        say(f"[fastagent] app: {app} (from {rel})")
    if existing is not None and not kept:
        say(
            f"[fastagent] warn: --force resets {rel} to the defaults (app, region, VM): "
            "re-apply any hand edits"
        )
    if kept and (stop or not scale_to_zero):
        say(
            f"[fastagent] warn: --stop and --no-scale-to-zero shape a generated {rel} only: yours "
            "was kept; edit auto_stop_machines / min_machines_running in it, or pass --force to regenerate it"
        )
    reasons = facts.keep_running_reasons()
    if kept and reasons and int(parsed.get("min_machines_running", "0")) == 0:
        text = (
            f"your kept {rel} scales to zero (min_machines_running = "
            f"{parsed.get('min_machines_running', 'absent')}), "
            f"but {'; '.join(reasons)}: set min_machines_running = 1"
            + (
                " (--force does not rewrite a fly.toml you own)"
                if not is_generated(rel, existing or "")
                else ", or pass --force"
            )
        )
        if run:
            raise DeployError(f"deploy stopped: {text}")
        say(f"[fastagent] warn: {text}")
    write_artifacts(
        facts.workspace,
        fly_artifacts(facts, app, stop=stop, scale_to_zero=scale_to_zero),
        force=force,
        say=say,
    )
    if run:
        run_fly(facts, CliRunner("fly", facts.workspace), say, app=app, region=region)
        return []
    return fly_runbook(facts, app, region)


def _railway(facts: DeployFacts, *, run: bool, force: bool, into_linked: bool) -> list[str]:
    from fastagent_cli.deploy.artifacts import write_artifacts
    from fastagent_cli.deploy.railway import railway_artifacts, railway_runbook, run_railway, service_name
    from fastagent_cli.deploy.runner import CliRunner

    name = service_name(facts.workspace.name)
    write_artifacts(facts.workspace, railway_artifacts(facts), force=force, say=say)
    if facts.keep_running_reasons():
        say("[fastagent] note: do not enable Railway's App Sleeping for this agent (see the runbook)")
    if run:
        run_railway(facts, CliRunner("railway", facts.workspace), say, name=name, into_linked=into_linked)
        return []
    return railway_runbook(facts, name)
