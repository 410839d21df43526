"""How a file system's refusal reads: ``cannot <read|write> the session store: <reason>``.

One :class:`~fastagent_cli.errors.SessionError` per refusal (read-only, full, permission denied),
retryable when the cause may pass by itself (a full disk), with the file in ``path`` for the
server log only.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from fastagent_cli.errors import SessionError

__all__ = ["store_error"]

_TRANSIENT = {errno.ENOSPC, errno.EDQUOT, errno.EAGAIN, errno.EINTR, errno.EMFILE, errno.ENFILE}
"""Causes that may pass by themselves: a turn failing with them is worth retrying."""


def store_error(action: str, exc: OSError, path: Path) -> SessionError:
    """``cannot <action> the session store: <reason>``, the file kept for the log."""
    reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
    return SessionError(
        f"cannot {action} the session store: {reason}", retryable=exc.errno in _TRANSIENT, path=str(path)
    )
