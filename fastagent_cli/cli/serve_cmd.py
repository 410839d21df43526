"""``fastagent start [dir]`` and ``fastagent dev [dir]``: serve the agent over HTTP.

``start`` serves in this process (log level info). ``dev`` (log level debug) runs a supervisor
that serves from a worker process and restarts it when the agent's code changes; ``--no-watch``
serves once, in this process. Port: ``--port`` > ``PORT`` (``start`` only) > ``[http] port`` >
8787. Bind: ``--bind`` > ``HOST`` > ``[http] host`` > 127.0.0.1. SIGINT / SIGTERM stop within a second;
the signal is re-raised once everything is closed, so a parent sees how the server ended.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from fastagent_cli.cli.common import (
    auth_path_option,
    dir_argument,
    log_format_option,
    model_option,
    run_async,
    sessions_dir_option,
)
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import UsageError

if TYPE_CHECKING:
    from fastagent_cli.assembly import AgentSurface
    from fastagent_cli.serving.binding import ServeOptions
    from fastagent_cli.serving.runner import Outcome
    from fastagent_cli.serving.worker_link import WorkerLink

__all__ = ["dev", "start"]


def _serve_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for decorator in reversed(
        [
            dir_argument,
            click.option("--port", metavar="N", help="Port to listen on (0 picks a free one; default 8787)."),
            click.option(
                "--bind",
                metavar="ADDR",
                help="Address to bind (default 127.0.0.1, this machine only; 0.0.0.0 for every interface).",
            ),
            model_option,
            sessions_dir_option,
            auth_path_option,
            click.option(
                "--tunnel", is_flag=True, help="Expose the server through a cloudflared Quick Tunnel."
            ),
            click.option("--no-input", is_flag=True, help="Never prompt (fail instead of picking a model)."),
            log_format_option,
        ]
    ):
        fn = decorator(fn)
    return fn


def _options(
    command: Literal["start", "dev"], port: str | None, bind: str | None, **rest: Any
) -> ServeOptions:
    from fastagent_cli.serving.binding import (
        ServeOptions,
        check_tunnel_bind,
        host_from_env,
        parse_bind,
        parse_port,
        port_from_env,
    )

    try:
        flag_port = None if port is None else parse_port(port, "--port")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    options = ServeOptions(
        command=command,
        port=flag_port,
        bind=None if bind is None else parse_bind(bind),
        env_port=port_from_env() if command == "start" and flag_port is None else None,
        env_host=host_from_env() if bind is None else None,
        **rest,
    )
    if options.bind is not None:
        check_tunnel_bind(options, None)  # a --bind / --tunnel conflict is a usage error (exit 2)
    return options


def _finish(outcome: Outcome) -> None:
    """Exit as the server ended: re-raise the signal that stopped it, or exit with its code."""
    if outcome.signal is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(outcome.signal, signal.SIG_DFL)
        os.kill(os.getpid(), outcome.signal)
    if outcome.code:
        raise SystemExit(outcome.code)


def _read(options: ServeOptions, no_input: bool, *, seed: bool = False) -> AgentSurface:
    """The one read of the agent directory in this process, with a model named (or picked)."""
    from fastagent_cli.assembly import inspect_agent_dir
    from fastagent_cli.cli.model_picker import ensure_model

    surface = inspect_agent_dir(
        options.directory, model=options.model, sessions_dir=options.sessions_dir, auth_path=options.auth_path
    )
    if seed:
        _seed_auth(surface.auth_path)  # before the model check: a deployed box's first start
    ensure_model(surface, no_input)
    return surface


def _serve_here(options: ServeOptions, link: WorkerLink | None = None, *, seed: bool = False) -> None:
    from fastagent_cli.schedules.host import prepare_schedule_host
    from fastagent_cli.serving.runner import serve_foreground

    surface = _read(options, options.no_input or link is not None, seed=seed)  # a worker never prompts
    _finish(run_async(serve_foreground(options, surface, link, scheduler=prepare_schedule_host)))


@click.command("start", epilog=examples("start"))
@_serve_options
def start(directory: str, port: str | None, bind: str | None, **rest: Any) -> None:
    """Serve the agent in DIR (default .) over HTTP: POST /invoke (SSE) and GET /health."""
    from fastagent_cli.logging_setup import configure_logging

    configure_logging("info")
    _serve_here(_options("start", port, bind, directory=directory, **rest), seed=True)


def _seed_auth(path: Path) -> None:
    """A deployed box's first start: write the credential ``deploy --run`` carried (FASTAGENT_AUTH_SEED)."""
    from fastagent_cli.auth.seed import seed_auth_file

    if seed_auth_file(path):
        logging.getLogger("fastagent.host").info("[fastagent] auth: wrote %s from FASTAGENT_AUTH_SEED", path)


@click.command("dev", epilog=examples("dev"))
@_serve_options
@click.option("--no-watch", is_flag=True, help="Serve once in this process; do not restart on edits.")
@click.option(
    "--drain",
    "drain_s",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="How long a reload lets running answers finish before ending them (retryably).",
)
def dev(
    directory: str, port: str | None, bind: str | None, no_watch: bool, drain_s: float, **rest: Any
) -> None:
    """Serve the agent in DIR (default .) and restart it when its code changes.

    Watches tools/, channels/, schedules/, fastagent.toml, models.json and .env; persona.md,
    AGENTS.md and skills are re-read every turn, so their edits need no restart. A reload never
    cuts a running answer: new requests go to the new worker while the old one finishes its turns
    (for at most --drain seconds; then each still running ends with a retryable failure).
    """
    from fastagent_cli.logging_setup import configure_logging
    from fastagent_cli.serving.worker_link import WorkerLink

    environment = dict(os.environ)  # before any .env is loaded: every worker re-reads it
    configure_logging("debug")
    options = _options("dev", port, bind, directory=directory, **rest)
    link = WorkerLink.claim()
    if no_watch or link is not None:
        _serve_here(options, link)
        return
    _supervise(options, environment, drain_s)


def _supervise(options: ServeOptions, environment: dict[str, str], drain_s: float) -> None:
    from fastagent_cli.serving.binding import check_tunnel_bind, resolve_bind, resolve_port
    from fastagent_cli.serving.control import CONTROL_TOKEN_ENV, DEV_CONTROL_TOKEN_ENV, mint_control_token
    from fastagent_cli.serving.supervisor import DevSupervisor

    surface = _read(options, options.no_input)
    config = surface.config
    check_tunnel_bind(options, config.http.host)
    # One control token for every worker: an open web chat page (or attach) survives a reload.
    # FASTAGENT_CONTROL_TOKEN (environment or .env) still wins in the worker.
    if not environment.get(CONTROL_TOKEN_ENV):
        environment[DEV_CONTROL_TOKEN_ENV] = mint_control_token()
    web_chat = config.http.web_chat is True or (
        config.http.web_chat is None and not config.session_control_refused
    )
    if options.tunnel and (config.session_control or web_chat):
        from fastagent_cli.serving.runner import SESSION_CONTROL_TUNNEL_WARNING

        logging.getLogger("fastagent.dev").warning("[fastagent] %s", SESSION_CONTROL_TUNNEL_WARNING)
    if options.tunnel:  # the workers serve loopback; the tunnel the supervisor opens is public
        _warn_if_exposed(surface)
    model = surface.model_spec if surface.model_source == "--model" else None  # a pick saved nowhere
    supervisor = DevSupervisor(
        worker_args=_worker_args(options, model),
        env=environment,
        agent_dir=surface.agent_dir,
        host=resolve_bind(options, config.http.host),
        listen_port=resolve_port(options, config.http.port),
        tunnel=options.tunnel,
        drain_timeout=drain_s,
    )
    _finish(run_async(supervisor.run()))


def _warn_if_exposed(surface: AgentSurface) -> None:
    from fastagent_cli.assembly import channel_files
    from fastagent_cli.serving.invoke_auth import exposure_warning, resolve_invoke_token

    if channel_files(surface.agent_dir).enabled:
        return  # channel files replace the built-in /invoke
    token = resolve_invoke_token(surface.config.http.token)  # the read loaded .env already
    warning = exposure_warning(None, 0, tunnel=True, tools=surface.config.coding_tool_names, token=token)
    if warning is not None:
        logging.getLogger("fastagent.dev").warning("[fastagent] %s", warning)


def _worker_args(options: ServeOptions, model: str | None) -> list[str]:
    """The worker's command line: ``dev`` with the same options, minus what the supervisor owns."""
    args = ["dev", options.directory, "--no-input"]
    for flag, value in (
        ("--port", options.port),
        ("--bind", options.bind),
        ("--model", model),
        ("--sessions-dir", options.sessions_dir),
        ("--auth-path", options.auth_path),
    ):
        if value is not None:
            args += [flag, str(value)]
    return args
