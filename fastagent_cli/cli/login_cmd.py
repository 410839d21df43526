"""``fastagent login [provider]`` and ``fastagent logout [provider]``: API keys and subscription
logins in ``auth.json``.

``login`` offers, per provider, a subscription login (OAuth: Claude Pro/Max for ``anthropic``,
ChatGPT Plus/Pro for ``openai-codex``, GitHub Copilot for ``github-copilot``; see
:mod:`fastagent_cli.cli.oauth_login`) and/or an API key. A key is asked for hidden, verified with
one request (see :mod:`fastagent_cli.auth.verify`) and stored: a rejected key (401/403) is not kept
and the key is asked again; an inconclusive check (network, quota, server error) keeps the key and
prints the provider's message. It needs a terminal: with ``--no-input`` or piped stdin it fails at
once, naming the environment variable to set instead.

Which file: ``--auth-path`` > ``FASTAGENT_AUTH_PATH`` > the ``<state root>/auth.json`` of the agent
in ``DIR`` (default ``.``, like every command); outside any agent, the global
``~/.fastagent/auth.json``, which every agent reads after its own file. Both commands say which
file they act on. Inside an agent but not at its root, both refuse and name the root. ``login
DIR`` with no provider works too: an argument that is no provider's name but a directory is the
directory.

``login mcp:<name>`` logs in to the agent's remote MCP server ``<name>`` with OAuth instead (see
:mod:`fastagent_cli.cli.mcp_login`); ``logout mcp:<name>`` removes that login.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from fastagent_cli.cli.common import run_async, say
from fastagent_cli.cli.completers import agent_dirs
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import CredentialError, UsageError

if TYPE_CHECKING:
    from fastagent_cli.auth.oauth import OAuthProvider
    from fastagent_cli.auth.paths import AuthTarget
    from fastagent_cli.auth.store import AuthStore
    from fastagent_cli.auth.verify import Verdict
    from fastagent_cli.models.registry import ModelRegistry, ProviderInfo

__all__ = [
    "ask",
    "interactive",
    "interactive_login",
    "key_providers",
    "login",
    "login_provider",
    "login_providers",
    "logout",
]

MAX_ATTEMPTS = 5


def interactive() -> bool:
    """Both stdin and stdout are a terminal (prompts need one to read a hidden key)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def ask(message: str, *, secret: bool = False, choices: Sequence[str] = ()) -> str:
    """One line from the terminal (hidden when ``secret``); Ctrl+C / Ctrl+D abort the command."""
    from prompt_toolkit import prompt
    from prompt_toolkit.completion import FuzzyWordCompleter

    completer = FuzzyWordCompleter(list(choices)) if choices else None
    try:
        return prompt(message, is_password=secret, completer=completer, reserve_space_for_menu=0).strip()
    except (EOFError, KeyboardInterrupt):
        raise click.Abort() from None


def _oauth(name: str) -> OAuthProvider | None:
    from fastagent_cli.auth.oauth import OAUTH_PROVIDERS

    return OAUTH_PROVIDERS.get(name)


def key_providers(registry: ModelRegistry) -> dict[str, ProviderInfo]:
    """Providers that take an API key (catalog ones with an env var, custom ones with ``apiKey``);
    GitHub Copilot's variables hold GitHub tokens, not keys, so it logs in only by subscription."""
    out = {}
    for name, info in registry.providers.items():
        oauth = _oauth(name)
        if info.needs_key and (oauth is None or oauth.api_key_login):
            out[name] = info
    return out


def login_providers(registry: ModelRegistry) -> dict[str, ProviderInfo]:
    """Providers ``login`` can store a credential for: key ones and subscription ones."""
    keys = key_providers(registry)
    return {name: p for name, p in registry.providers.items() if name in keys or _oauth(name)}


def _methods(info: ProviderInfo, registry: ModelRegistry) -> list[tuple[str, str]]:
    methods = []
    oauth = _oauth(info.name)
    if oauth is not None:
        methods.append(("oauth", oauth.title))
    if info.name in key_providers(registry):
        methods.append(("api_key", f"{info.title} API key"))
    return methods


def login_provider(info: ProviderInfo, store: AuthStore, registry: ModelRegistry) -> None:
    """Log in to ``info``: pick the method when it has several, then run it."""
    methods = _methods(info, registry)
    method = methods[0][0]
    if len(methods) > 1:
        click.echo(f"Log in to {info.title} with:")
        for number, (_, title) in enumerate(methods, 1):
            click.echo(f"  {number}  {title}")
        while True:
            answer = ask(f"Method [1-{len(methods)}]: ")
            if answer.isdigit() and 1 <= int(answer) <= len(methods):
                method = methods[int(answer) - 1][0]
                break
            click.echo(f"Type a number from 1 to {len(methods)}.")
    oauth = _oauth(info.name)
    if method == "oauth" and oauth is not None:
        from fastagent_cli.cli.oauth_login import run_oauth_login

        run_oauth_login(oauth, info, store)
    else:
        interactive_login(info, store)


def interactive_login(provider: ProviderInfo, store: AuthStore) -> Verdict:
    """Ask for a key until the provider does not reject it; store it; return the last verdict."""
    from fastagent_cli.auth.verify import verify_key

    for _ in range(MAX_ATTEMPTS):
        key = ask(f"{provider.title} API key (hidden, Ctrl+C to cancel): ", secret=True)
        if not key:
            say("[fastagent] no key entered")
            continue
        say(f"[fastagent] checking the key with {provider.name} …")
        verdict = run_async(verify_key(provider, key))
        if verdict.invalid:
            say(f"[fastagent] {provider.title} rejected this key, it was not saved: {verdict.message}")
            continue
        store.set_api_key(provider.name, key)
        if verdict.valid:
            say(f"[fastagent] {provider.title} key verified and saved to {store.path}")
        else:
            say(
                f"[fastagent] {provider.title} key saved to {store.path}, but it could not be checked: "
                f"{verdict.message}"
            )
            say(f"[fastagent] {check_later(provider)}")
        return verdict
    raise CredentialError(f"no usable {provider.title} key after {MAX_ATTEMPTS} tries; nothing was saved")


def check_later(provider: ProviderInfo) -> str:
    """How to check a saved key that could not be checked now: one turn with one of its models
    (a rejected key fails it with the provider's 401), or the login again."""
    model = provider.default_model or next(iter(provider.models), None)
    turn = (
        f'`fastagent invoke "hi" --model {provider.name}/{model}`' if model else "one turn of an agent on it"
    )
    return (
        f"check it later with {turn} (a rejected key fails the turn), or run "
        f"`fastagent login {provider.name}` again"
    )


def _arguments(provider: str | None, directory: str | None) -> tuple[str | None, str]:
    """``(provider, directory)``: ``login demo`` names a directory when ``demo`` is no provider."""
    if provider is not None and directory is None and os.path.isdir(os.path.expanduser(provider)):
        from fastagent_cli.models.registry import ModelRegistry

        if provider not in ModelRegistry().providers:
            return None, provider
    return provider, directory or "."


def _open(directory: str, auth_path: str | None) -> tuple[AuthTarget, AuthStore, ModelRegistry]:
    from fastagent_cli.assembly import login_target
    from fastagent_cli.auth.store import AuthStore
    from fastagent_cli.models.registry import ModelRegistry

    target = login_target(directory, auth_path)
    return target, AuthStore(target.path), ModelRegistry(target.models_json)


def _where_note(target: AuthTarget) -> None:
    """Which file this command acts on, and who reads it."""
    if target.is_global:
        say(
            f"[fastagent] no agent here: using the global credential file {target.path} "
            "(every agent reads it after its own .fastagent/auth.json)"
        )
    elif target.placement is not None:
        say(f"[fastagent] credential file of the agent {target.placement.agent_dir}: {target.path}")
    else:
        say(f"[fastagent] credential file ({target.source}): {target.path}")


def _choose_provider(
    providers: dict[str, ProviderInfo], store: AuthStore, registry: ModelRegistry
) -> ProviderInfo:
    stored = store.logins()
    names = list(providers)
    click.echo("Log in to which provider?")
    for number, (name, info) in enumerate(providers.items(), 1):
        kinds = [kind for kind, _ in _methods(info, registry)]
        how = " or ".join({"oauth": "subscription", "api_key": "API key"}[kind] for kind in kinds)
        env = ", ".join(info.api_key_env) or ("" if kinds == ["oauth"] else "models.json apiKey")
        found = next((v for v in info.api_key_env if os.environ.get(v)), "")
        status = {"api_key": "stored", "oauth": "logged in"}.get(stored.get(name, ""), found)
        click.echo(f"  {number:>2}  {name:<15} {how:<23} {env:<44} {status}".rstrip())
    while True:
        answer = ask(f"Provider [1-{len(names)} or name]: ", choices=names)
        if answer.isdigit() and 1 <= int(answer) <= len(names):
            return providers[names[int(answer) - 1]]
        if answer in providers:
            return providers[answer]
        click.echo(f"Not a provider: {answer!r}. Type a number from the list or a name.")


@click.command(epilog=examples("login"))
@click.argument("provider", required=False)
@click.argument("directory", required=False, metavar="[DIR]", shell_complete=agent_dirs)
@click.option("--auth-path", help="Credential file to write (default <state>/auth.json of the agent in DIR).")
@click.option("--no-input", is_flag=True, help="Never prompt (login then fails: it needs a terminal).")
@click.option("--no-browser", is_flag=True, help="mcp:<name>: print the URL to open, do not open a browser.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=300.0,
    show_default=True,
    help="mcp:<name>: seconds to wait for the browser to come back.",
)
def login(
    provider: str | None,
    directory: str | None,
    auth_path: str | None,
    no_input: bool,
    no_browser: bool,
    timeout: float,
) -> None:
    """Log in with a subscription (Claude Pro/Max, ChatGPT Plus/Pro, GitHub Copilot) or store a
    provider's API key, verified at once with one request; or log in to a remote MCP server of
    the agent with OAuth (PROVIDER mcp:<name>).

    The credential goes to the .fastagent/auth.json of the agent in DIR (default .); outside any
    agent it goes to ~/.fastagent/auth.json, which every agent reads after its own file.
    """
    if provider is not None and provider.startswith("mcp:"):
        from fastagent_cli.cli.mcp_login import login_mcp_server

        name = provider.removeprefix("mcp:")
        if not name:
            raise UsageError("name the MCP server: `fastagent login mcp:<name>`")
        login_mcp_server(name, directory or ".", auth_path, browser=not no_browser, timeout=timeout)
        return
    provider, where = _arguments(provider, directory)
    target, store, registry = _open(where, auth_path)
    providers = login_providers(registry)
    if provider is not None and provider not in providers:
        reason = "takes no API key" if provider in registry.providers else "is not a known provider"
        raise UsageError(f'"{provider}" {reason}; providers you can log in to: {", ".join(providers)}')
    if no_input or not interactive():
        raise CredentialError(_no_terminal(providers.get(provider or ""), no_input, target))
    _where_note(target)
    info = providers[provider] if provider else _choose_provider(providers, store, registry)
    login_provider(info, store, registry)


def _no_terminal(info: ProviderInfo | None, no_input: bool, target: AuthTarget) -> str:
    why = " (--no-input)" if no_input else ""
    if info is not None and not info.api_key_env and _oauth(info.name) is not None:
        return (
            f"login opens a browser and reads from a terminal{why}; {info.name} has no environment "
            f"variable: run `fastagent login {info.name}` in a terminal (it saves to {target.path}, "
            "which FASTAGENT_AUTH_PATH can point other agents at)"
        )
    envs = (", ".join(info.api_key_env) if info else "") or "the provider's variable"
    return (
        f"login reads the key from a terminal{why}; without one, "
        f"set {envs} in the environment or the agent's .env instead"
    )


@click.command(epilog=examples("logout"))
@click.argument("provider", required=False)
@click.argument("directory", required=False, metavar="[DIR]", shell_complete=agent_dirs)
@click.option("--auth-path", help="Credential file to edit (default <state>/auth.json of the agent in DIR).")
def logout(provider: str | None, directory: str | None, auth_path: str | None) -> None:
    """Remove a stored credential (PROVIDER may be omitted when only one is stored)."""
    provider, where = _arguments(provider, directory)
    target, store, registry = _open(where, auth_path)
    _where_note(target)
    stored = list(store.logins()) if store.path.exists() else []
    if provider is None:
        if not stored:
            raise CredentialError(f"no stored credentials in {store.path}")
        if len(stored) > 1:
            raise UsageError(
                f"several credentials are stored in {store.path} ({', '.join(stored)}): name one, "
                f"e.g. `fastagent logout {stored[0]}`"
            )
        provider = stored[0]
    if not (store.path.exists() and store.remove(provider)):
        listing = f" (stored: {', '.join(stored)})" if stored else ""
        raise CredentialError(f'no stored credential for "{provider}" in {store.path}{listing}')
    say(f"[fastagent] removed the {provider} credential from {store.path}")
    info = registry.providers.get(provider)
    still = [v for v in (info.api_key_env if info else ()) if os.environ.get(v)]
    if still:
        say(f"[fastagent] note: {still[0]} is still set in the environment and will be used")
