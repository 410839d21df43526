"""Where a channel's state lives: the one place its store is opened.

Every stateful channel opens its :class:`~fastagent_cli.state.channel_state.ChannelStateStore`
through :func:`open_channel_state`: the store the agent's state backend provides (``ctx.channel_state``,
the shared database with ``state_backend = "postgres"``), else the file store under
``<state root>/channels/<kind>/`` (single process: two processes must not share it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastagent_cli.errors import ServeError
from fastagent_cli.state.channel_state import ChannelStateStore, FileChannelState, channel_home

__all__ = ["open_channel_state", "state_root_of"]


def state_root_of(ctx: Any) -> Path:
    """The mount context's state root, which must be absolute (a relative one would follow the
    process's working directory)."""
    root = getattr(ctx, "state_root", None)
    if root is None or not Path(root).is_absolute():
        raise ServeError(f"a channel needs an absolute ctx.state_root, not {root!r}")
    return Path(root)


def open_channel_state(ctx: Any, kind: str) -> ChannelStateStore:
    opener = getattr(ctx, "channel_state", None)
    if opener is not None:
        store: ChannelStateStore = opener(kind)
        return store
    return FileChannelState(channel_home(state_root_of(ctx), kind))
