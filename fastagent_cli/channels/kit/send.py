"""What every scaffolded send tool checks before it sends (``slack_send``, ``telegram_send``,
``feishu_send`` / ``lark_send``), so the agent reads the same sentence for the same mistake.

A bad call is a :class:`ValueError` naming what to change (no token, neither or both of ``text``
and ``path``, empty text, a relative or unreadable file); :func:`sending` turns a platform API
failure into a :class:`RuntimeError` carrying the platform's one-line description, and closes the
client in every case.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from fastagent_cli.errors import ChannelApiError

__all__ = ["bot_token", "check_text", "exactly_one", "read_upload", "sending"]


class _Closes(Protocol):
    async def aclose(self) -> Any: ...


def bot_token(explicit: str | None, env: str, where: str) -> str:
    """``explicit``, else ``$env``; neither is a :class:`ValueError` saying ``where`` it comes from."""
    token = explicit or os.environ.get(env, "")
    if not token:
        raise ValueError(f"{env} is not set ({where})")
    return token


def exactly_one(text: str | None, path: str | None) -> None:
    if (text is None) == (path is None):
        raise ValueError("pass exactly one of `text` (a message) or `path` (a file)")


def check_text(text: str) -> None:
    if not text.strip():
        raise ValueError("`text` is empty")


async def read_upload(path: Path) -> bytes:
    """The bytes of the file a tool sends (an absolute path), read off the event loop."""
    if not path.is_absolute():
        raise ValueError(f"`path` must be absolute, not {path}")
    try:
        return await asyncio.to_thread(path.read_bytes)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None


@contextlib.asynccontextmanager
async def sending(api: _Closes) -> AsyncIterator[None]:
    """The calls a send tool makes on ``api``: a platform failure is a :class:`RuntimeError` with
    its description (the tool's caller reads one line), and the client is closed afterwards."""
    try:
        yield
    except ChannelApiError as exc:
        raise RuntimeError(str(exc)) from None
    finally:
        await api.aclose()
