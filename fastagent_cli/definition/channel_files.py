"""``channels/*.py`` as files: which are enabled, and what each one's ``channel`` is.

Every ``channels/*.py`` file is enabled; ``<name>.py.disabled`` is disabled; dot files and
``__init__.py`` are not channels. Importing a file yields its ``channel`` attribute, which is a
long connection when it is an object with a callable ``connect`` (a plain function is a route
channel). Serving mounts them (:mod:`fastagent_cli.serving.channels`); ``deploy`` only needs to
know which kind each one is (:func:`inspect_channels`).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastagent_cli.errors import ServeError, one_line

__all__ = [
    "CHANNELS_DIR",
    "ChannelFiles",
    "InspectedChannel",
    "channel_files",
    "connection_name",
    "import_channel",
    "inspect_channels",
    "is_long_connection",
    "module_name",
]

CHANNELS_DIR = "channels"
_SUFFIX = ".py"
_DISABLED_SUFFIX = ".py.disabled"


@dataclass(slots=True)
class ChannelFiles:
    enabled: list[Path] = field(default_factory=list)
    disabled: list[Path] = field(default_factory=list)


def channel_files(agent_dir: Path) -> ChannelFiles:
    found = ChannelFiles()
    folder = agent_dir / CHANNELS_DIR
    if not folder.is_dir():
        return found
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.name == "__init__.py" or not path.is_file():
            continue
        if path.name.endswith(_DISABLED_SUFFIX):
            found.disabled.append(path)
        elif path.name.endswith(_SUFFIX):
            found.enabled.append(path)
    return found


def import_channel(path: Path, agent_dir: Path) -> Any:
    """The ``channel`` attribute of the module at ``path``; ServeError (one line) when it cannot load."""
    if str(agent_dir) not in sys.path:
        sys.path.insert(0, str(agent_dir))  # a channel may import helpers living in the agent dir
    name = module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ServeError("cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if not isinstance(exc, Exception):
            raise
        raise ServeError(f"cannot load: {describe_exception(exc)}") from None
    if not hasattr(module, "channel"):
        raise ServeError(
            "defines no `channel` (a function (ctx) -> routes, or an object with name and connect(ctx, stop))"
        )
    return module.channel


def module_name(path: Path) -> str:
    """The name a channel file is imported under (``sys.modules`` key)."""
    return f"fastagent_agent_channels.{path.name[: -len(_SUFFIX)]}"


def is_long_connection(channel: Any) -> bool:
    return callable(getattr(channel, "connect", None)) and not inspect.isfunction(channel)


def connection_name(channel: Any) -> str:
    name = getattr(channel, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise ServeError("a long-connection channel needs a non-empty string `name`")
    return name


def describe_exception(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}", 300)


@dataclass(frozen=True, slots=True)
class InspectedChannel:
    """One enabled channel file, classified without mounting it."""

    name: str
    """The file's stem (``channels/telegram.py`` -> ``telegram``)."""
    long_connection: bool
    channel: Any
    register_webhook: Any = None
    """The channel's (or else its module's) ``register_webhook(public_url)``, when it has one."""


def inspect_channels(agent_dir: Path) -> tuple[list[InspectedChannel], list[str]]:
    """``(channels, failures)``: every enabled file imported and classified; a failure is
    ``"channels/<file>: <message>"``."""
    channels: list[InspectedChannel] = []
    failures: list[str] = []
    for path in channel_files(agent_dir).enabled:
        try:
            channel = import_channel(path, agent_dir)
        except ServeError as exc:
            failures.append(f"{CHANNELS_DIR}/{path.name}: {exc.message}")
            continue
        stem = path.name[: -len(_SUFFIX)]
        module = sys.modules.get(module_name(path))
        hook = getattr(channel, "register_webhook", None) or getattr(module, "register_webhook", None)
        channels.append(InspectedChannel(stem, is_long_connection(channel), channel, hook))
    return channels, failures
