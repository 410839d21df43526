"""The lines ``start`` / ``dev`` print once listening (features G15, I28)::

    [fastagent] agent:     /srv/app/fastagent
    [fastagent] workspace: /srv/app
    [fastagent] config:    /srv/app/fastagent/fastagent.toml
    [fastagent] model:     openai/gpt-4.1-mini (from fastagent.toml)
    [fastagent] auth:      OPENAI_API_KEY
    ...
    [fastagent] channels:  (none: built-in /invoke)
    [fastagent] routes:    /invoke, GET /health
    [fastagent] http host on 127.0.0.1:8787
    [fastagent] try it: curl -sN http://127.0.0.1:8787/invoke -H 'content-type: application/json' ...
    [fastagent] web chat: http://127.0.0.1:8787/#token=...      (dev; start names where the token is)

Findings (a tool file skipped, a skill collision...) come back as separate warnings, and so does
the loud one for an ``/invoke`` others can reach without a token while the agent has bash, write or
edit (:func:`~fastagent_cli.serving.invoke_auth.exposure_warning`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from fastagent_cli.assembly import format_row
from fastagent_cli.serving.binding import describe_listen, local_base_url
from fastagent_cli.serving.control import CONTROL_FILE, CONTROL_TOKEN_ENV, control_exposure_warning
from fastagent_cli.serving.invoke_auth import TOKEN_ENV, InvokeToken, exposure_warning
from fastagent_cli.serving.notices import NoticeHost
from fastagent_cli.serving.service import INVOKE_KEY, AgentService
from fastagent_cli.serving.webchat import WEB_CHAT_KEY, WEB_CHAT_PREFIX, web_chat_url

__all__ = ["StartupReport", "auth_line", "curl_line", "startup_report", "web_chat_line"]

_TRY_BODY = '{"session":"s1","text":"hello"}'


@dataclass(slots=True)
class StartupReport:
    lines: list[str] = field(default_factory=list)
    """Info lines, each without the ``[fastagent] `` prefix."""
    warnings: list[str] = field(default_factory=list)
    serving: list[str] = field(default_factory=list)
    """Where it listens and how to try it: printed last, after any warning."""


def _row(label: str, value: str) -> str:
    return format_row((label, value))


def auth_line(service: AgentService) -> str:
    """Where the model's API key comes from (never the key itself)."""
    return _row("auth", service.opened.auth_summary())


def _channels_line(service: AgentService) -> str:
    loaded = service.loaded
    if not loaded.enabled:
        return _row("channels", f"(none: built-in {INVOKE_KEY})")
    kinds = {file: "long connection" for file, _ in loaded.long_connections}
    shown = []
    for path in loaded.enabled:
        file = f"channels/{path.name}"
        shown.append(f"{path.name} ({kinds[file]})" if file in kinds else path.name)
    return _row("channels", ", ".join(shown))


def curl_line(host: str | None, port: int, token: InvokeToken | None = None) -> str:
    """A paste-ready ``curl``; with a token it reads it from the variable (never prints it)."""
    url = f"{local_base_url(host, port)}{INVOKE_KEY}"
    auth = ""
    if token is not None:
        value = f"${TOKEN_ENV}" if token.source == TOKEN_ENV else "<your [http] token>"
        auth = f' -H "authorization: Bearer {value}"'
    return f"try it: curl -sN {url}{auth} -H 'content-type: application/json' -d {shlex.quote(_TRY_BODY)}"


def web_chat_line(service: AgentService, host: str | None, port: int, *, reveal_token: bool) -> str:
    """Where the page is. ``reveal_token`` (``dev``, with a token minted for it): an address that
    signs the page in; otherwise where to find the token (never the token itself)."""
    base = local_base_url(host, port)
    access = service.control
    assert access is not None  # the page is served only with the plane
    if reveal_token and access.minted:
        return f"web chat: {web_chat_url(base, access.token)}"
    where = f"${CONTROL_TOKEN_ENV}" if not access.minted else f"the token in {CONTROL_FILE}"
    return f"web chat: {web_chat_url(base)} (sign in with {where})"


def startup_report(
    service: AgentService,
    host: str | None,
    port: int,
    *,
    tunnel: bool = False,
    reveal_token: bool = False,
    on_start: bool = False,
) -> StartupReport:
    """Everything worth saying about a service listening on ``host:port`` (``tunnel``: it is also
    reachable through a public tunnel; ``reveal_token``: ``dev`` prints the web chat's address
    with the control token in it)."""
    report = StartupReport()
    for row in service.opened.summary():
        report.lines.append(format_row(row))
        if row[0] == "model":
            report.lines.append(auth_line(service))
    report.warnings += service.opened.diagnostics()
    missing_key = service.opened.missing_key()
    if missing_key is not None:
        report.warnings.append(missing_key)
    report.lines.append(_row("state", service.opened.backend.describe()))
    report.lines.append(_channels_line(service))
    by_faces = {key for face in service.faces for key in face.routes}
    routes = [
        key
        for key in service.routes
        if (key != WEB_CHAT_KEY or not service.web_chat.served) and key not in by_faces
    ]
    if service.web_chat.served:
        routes.append(f"{WEB_CHAT_KEY} and {WEB_CHAT_PREFIX}/* (web chat)")
    if service.control is not None:
        routes.append(f"{service.control.prefix}/* (session control)")
    for face in service.faces:
        routes.extend(f"{key} ({face.name})" for key in face.served())
    report.lines.append(_row("routes", ", ".join(routes)))
    if service.channels.long_connections:
        report.lines.append(f"long connections: {', '.join(service.channels.long_connections)}")
    report.lines.extend(NoticeHost.startup_lines_for(service.opened, on_start=on_start))
    if service.schedules is not None:
        report.lines.extend(service.schedules.startup_lines())
        report.warnings.extend(service.schedules.warnings)
    if service.control is not None and not tunnel:  # the tunnel's own warning is louder
        warning = control_exposure_warning(host)
        if warning is not None:
            report.warnings.append(warning)
    report.serving.append(f"http host on {describe_listen(host, port)}")
    if service.channels.builtin_invoke:
        if service.token is not None:
            report.serving.append(f"{INVOKE_KEY} requires a bearer token ({service.token.source})")
        else:
            exposed = exposure_warning(
                host, port, tunnel=tunnel, tools=service.opened.config.coding_tool_names, token=None
            )
            if exposed is not None:
                report.warnings.append(exposed)
        report.serving.append(curl_line(host, port, service.token))
    for face in service.faces:
        report.serving.extend(face.startup(local_base_url(host, port)))
    if service.web_chat.note is not None:
        report.lines.append(service.web_chat.note)
    if service.web_chat.served:
        report.serving.append(web_chat_line(service, host, port, reveal_token=reveal_token))
    return report
