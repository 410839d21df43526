"""Saving a turn's attached file under the channel's state: a private directory, then the bytes
written to a temporary name and renamed into place (a reader never sees half a file)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from fastagent_cli.state.atomic import FILE_MODE, make_private_dir

__all__ = ["save_attachment"]


async def save_attachment(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (mode ``FILE_MODE``, its folder private) off the event loop."""

    def write() -> None:
        make_private_dir(path.parent)
        tmp = path.with_name(f".{path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)

    await asyncio.to_thread(write)
