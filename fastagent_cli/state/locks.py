"""Cross-process advisory locks on a side file (``<target>.lock``), released by the kernel when a
process dies, so a crash never leaves a stale lock behind."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from fastagent_cli.state.atomic import make_private_dir

__all__ = ["FileLock", "LockTimeoutError"]


class LockTimeoutError(TimeoutError):
    pass


class FileLock:
    """An exclusive ``flock`` held for the life of a ``with`` block.

    ``timeout`` bounds the wait (retrying with backoff from 10 ms up to 200 ms); ``None`` waits
    forever; ``0`` tries once. :meth:`try_acquire` never waits (a lease held until released).
    """

    def __init__(self, path: str | os.PathLike[str], timeout: float | None = 10.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it; ``False`` at once otherwise."""
        make_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def acquire(self) -> None:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        delay = 0.01
        while not self.try_acquire():
            if deadline is not None and time.monotonic() >= deadline:
                raise LockTimeoutError(f"timed out waiting for lock {self.path}")
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def release(self) -> None:
        """Release the lock (a second call does nothing)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
