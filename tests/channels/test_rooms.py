"""One channel, one shape: every chat platform folder under ``channels/`` holds the same rooms, each
named for its step, and the steps every platform needs live in the kit, not in a platform.

The rooms (GitHub, a webhook with no chat answer to render, holds only the rooms it needs: its
``channel``, ``ingress``, ``runner``, ``api``, ``parse`` and ``approvals``):

========== =====================================================================================
channel    the factory a ``channels/*.py`` file calls, and its options
ingress    the webhook: the request preamble, the platform's authentication, then the intake
intake     what an accepted event causes (a turn, a context line, a stop), durable before the ack
runtime    the state stores, the runner and its queue, and their start and stop
runner     one durable turn, on ``kit/lifecycle.run_durable_turn``
deliver    the answer as the platform shows it (live preview, stream or card)
register   pointing the platform at a public URL (``register_webhook``)
api        the platform API client, on ``kit/api.PlatformClient``
parse      pure reading of the platform's payloads, and the default route
send       the send tool's function
========== =====================================================================================
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import fastagent_cli.channels as channels_pkg
from fastagent_cli.channels.kit.api import PlatformClient
from fastagent_cli.channels.kit.lifecycle import run_durable_turn

ROOT = Path(channels_pkg.__file__).resolve().parent
PLATFORMS = ("telegram", "slack", "feishu")
ROOMS = {
    "channel", "ingress", "intake", "runtime", "runner", "deliver", "register", "api", "parse", "send",
    "approvals",
}  # fmt: skip
OWN = {
    # Format modules, named for their format, and steps only one platform has.
    "telegram": {"html", "media"},
    "slack": {
        "markdown",
        "classic",
        "verify",
        "bot_auth",
        "config_token",
        "manifest",
        "onboard",
        "setup_server",
    },
    "feishu": {"card", "crypto", "cloud", "frames", "owned", "ws", "onboard"},
}
CLASS_PREFIX = {"telegram": "Telegram", "slack": "Slack", "feishu": "Feishu"}
MAX_LINES = 350


def modules(platform: str) -> set[str]:
    return {p.stem for p in (ROOT / platform).glob("*.py") if p.stem != "__init__"}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_each_platform_folder_holds_the_same_rooms(platform: str) -> None:
    found = modules(platform)
    assert ROOMS - found == set(), f"{platform}/ lacks the rooms {sorted(ROOMS - found)}"
    unexpected = found - ROOMS - OWN[platform]
    assert unexpected == set(), (
        f"{platform}/ has modules in no room: {sorted(unexpected)} (name them for a step)"
    )


@pytest.mark.parametrize("platform", PLATFORMS)
def test_each_room_does_the_same_job_on_every_platform(platform: str) -> None:
    prefix = CLASS_PREFIX[platform]
    base = f"fastagent_cli.channels.{platform}"
    runtime = getattr(importlib.import_module(f"{base}.runtime"), f"{prefix}Runtime")
    intake = getattr(importlib.import_module(f"{base}.intake"), f"{prefix}Intake")
    ingress = getattr(importlib.import_module(f"{base}.ingress"), f"{prefix}Ingress")
    assert issubclass(intake, runtime)
    assert inspect.iscoroutinefunction(intake.accept)
    assert inspect.iscoroutinefunction(runtime.start) and inspect.iscoroutinefunction(runtime.aclose)
    assert inspect.iscoroutinefunction(ingress.handle) and callable(ingress.routes)
    assert "intake" in inspect.signature(ingress.__init__).parameters
    clients = [
        obj
        for obj in vars(importlib.import_module(f"{base}.api")).values()
        if inspect.isclass(obj) and issubclass(obj, PlatformClient) and obj is not PlatformClient
    ]
    assert clients, f"{platform}/api.py has no client on kit/api.PlatformClient"
    runner = importlib.import_module(f"{base}.runner")
    assert getattr(runner, "run_durable_turn", None) is run_durable_turn


def test_no_channels_module_is_over_350_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_github_holds_rooms_only_and_its_client_is_on_the_kit() -> None:
    assert modules("github") <= ROOMS, f"github/ has modules in no room: {sorted(modules('github') - ROOMS)}"
    api = importlib.import_module("fastagent_cli.channels.github.api")
    assert issubclass(api.GithubApi, PlatformClient)


@pytest.mark.parametrize("platform", (*PLATFORMS, "github"))
def test_no_platform_writes_its_own_api_error_or_retry_policy(platform: str) -> None:
    for path in sorted((ROOT / platform).glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                bases = {ast.unparse(b) for b in node.bases}
                assert not bases & {"Exception", "BaseException"}, (
                    f"{platform}/{path.name}: {node.name} is an error class on bare Exception "
                    "(use errors.ChannelApiError, through kit/api)"
                )
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert node.value.lower() != "retry-after", (
                    f"{platform}/{path.name} reads Retry-After itself (kit/api does)"
                )
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                assert not (node.func.attr == "_sleep" or "429" in ast.unparse(node)), (
                    f"{platform}/{path.name}: a retry loop of its own (kit/api owns the policy)"
                )
