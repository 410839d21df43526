"""The credential file: ``{"<provider>": {"type": "api_key", "key": "..."}}`` or a subscription
login ``{"<provider>": {"type": "oauth", "refresh": ..., "access": ..., "expires": <epoch ms>}}``
(pi's shape).

Every write:

* creates the directory if needed and re-applies mode 0700 to it (a directory widened by hand is
  tightened again); if that chmod fails, or does not take, the write fails loudly, and a shared
  world-writable directory such as ``/tmp`` is refused rather than locked for everyone;
* takes the cross-process lock ``auth.json.lock`` (``flock``, bounded wait), then reads, changes and
  rewrites the file inside the lock, so concurrent processes never lose each other's entries;
* replaces the file atomically (temp file, fsync, rename) with mode 0600.

Reads take no lock: the rename means a reader sees the old or the new file, never a torn one.
Entries this module does not understand (other tools' keys) are kept as they are.
:meth:`AuthStore.update_async` is the same transaction for a change that awaits (renewing a login
over the network while the lock keeps every other process from spending the same refresh token).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from fastagent_cli.errors import CredentialError
from fastagent_cli.models.credentials import read_auth_file
from fastagent_cli.state.atomic import DIR_MODE, FILE_MODE, atomic_write_text
from fastagent_cli.state.locks import FileLock, LockTimeoutError

__all__ = ["DIR_MODE", "FILE_MODE", "AuthStore"]

LOCK_TIMEOUT = 10.0

T = TypeVar("T")


class AuthStore:
    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout

    # reading ---------------------------------------------------------------------------------

    def read(self) -> dict[str, dict[str, Any]]:
        """The provider entries (objects only); ``{}`` when the file does not exist."""
        return read_auth_file(self.path)

    def providers(self) -> list[str]:
        """Providers with a stored API key, sorted."""
        return sorted(name for name, entry in self.read().items() if _api_key(entry))

    def get_key(self, provider: str) -> str | None:
        return _api_key(self.read().get(provider))

    def logins(self) -> dict[str, str]:
        """Every stored credential fastagent uses, by provider: ``"api_key"`` or ``"oauth"``."""
        out: dict[str, str] = {}
        for name, entry in sorted(self.read().items()):
            if _api_key(entry):
                out[name] = "api_key"
            elif entry.get("type") == "oauth" and isinstance(entry.get("access"), str):
                out[name] = "oauth"
        return out

    # writing ---------------------------------------------------------------------------------

    def set_api_key(self, provider: str, key: str) -> None:
        if not key:
            raise CredentialError(f"refusing to store an empty key for {provider}")

        def change(doc: dict[str, Any]) -> None:
            doc[provider] = {"type": "api_key", "key": key}

        self.update(change)

    def set_oauth(self, provider: str, entry: dict[str, Any]) -> None:
        """Store a subscription login (``refresh``, ``access``, ``expires`` and provider extras)."""
        if not entry.get("access") or not entry.get("refresh"):
            raise CredentialError(f"refusing to store an incomplete {provider} login")

        def change(doc: dict[str, Any]) -> None:
            doc[provider] = {"type": "oauth", **entry}

        self.update(change)

    def remove(self, provider: str) -> bool:
        """Drop the provider's entry; ``False`` (and no write) when there was none."""

        def change(doc: dict[str, Any]) -> bool:
            return doc.pop(provider, None) is not None

        return self.update(change, write_if=bool)

    def update(
        self, change: Callable[[dict[str, Any]], T], *, write_if: Callable[[T], bool] | None = None
    ) -> T:
        """Read-modify-write under the lock. ``change`` edits the document in place."""
        self._secure_directory()
        with self._errors(self.lock_timeout), FileLock(self.lock_path, timeout=self.lock_timeout):
            doc = self._load_raw()
            result = change(doc)
            if write_if is None or write_if(result):
                self._write(doc)
        return result

    async def update_async(
        self,
        change: Callable[[dict[str, Any]], Awaitable[T]],
        *,
        write_if: Callable[[T], bool] | None = None,
        lock_timeout: float | None = None,
    ) -> T:
        """:meth:`update` for a change that awaits. The lock is waited for in a thread (the event
        loop keeps running); the file is read only once the lock is held, so a change sees what
        the previous holder wrote. Cancelling the caller does not leak the lock."""
        timeout = self.lock_timeout if lock_timeout is None else lock_timeout
        self._secure_directory()
        lock = FileLock(self.lock_path, timeout=timeout)
        with self._errors(timeout):
            await _acquire(lock)
        try:
            with self._errors(timeout):
                doc = self._load_raw()
            result = await change(doc)
            if write_if is None or write_if(result):
                with self._errors(timeout):
                    self._write(doc)
        finally:
            lock.release()
        return result

    @contextmanager
    def _errors(self, timeout: float) -> Iterator[None]:
        try:
            yield
        except LockTimeoutError:
            raise CredentialError(
                f"timed out after {timeout:g}s waiting for {self.lock_path}: another fastagent "
                "process is writing credentials; try again"
            ) from None
        except OSError as exc:
            raise CredentialError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def _write(self, doc: dict[str, Any]) -> None:
        self._secure_directory()  # re-applied on every write, a login renewal mid-run included
        text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
        atomic_write_text(self.path, text, mode=FILE_MODE)
        self._check_mode(self.path, FILE_MODE)

    def _load_raw(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        if not text.strip():
            return {}
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CredentialError(
                f"{self.path} is not valid JSON (line {exc.lineno}): fix or delete it; nothing was written"
            ) from None
        if not isinstance(doc, dict):
            raise CredentialError(f"{self.path} must hold a JSON object; nothing was written")
        return doc

    def _secure_directory(self) -> None:
        directory = self.path.parent
        try:
            shared = directory.is_dir() and os.stat(directory).st_mode & (stat.S_ISVTX | stat.S_IWOTH)
        except OSError:
            shared = False
        if shared:  # chmod 0700 on /tmp (or any world-writable dir) would break it for everyone
            raise CredentialError(
                f"{directory} is a shared (world-writable) directory: credentials need a directory of "
                "their own that can be restricted to 0700; point --auth-path at a file inside one"
            )
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
            os.chmod(directory, DIR_MODE)
            self._check_mode(directory, DIR_MODE)
        except OSError as exc:
            raise CredentialError(
                f"cannot restrict {directory} to mode 0700 ({exc.strerror or exc}); credentials were not "
                "written: point --auth-path at a file in a directory you own"
            ) from None

    @staticmethod
    def _check_mode(path: Path, wanted: int) -> None:
        actual = stat.S_IMODE(os.stat(path).st_mode)
        if actual != wanted:
            raise CredentialError(
                f"{path} has mode {actual:04o} after chmod {wanted:04o} (does this filesystem ignore "
                "permissions?); refusing to keep credentials there"
            )


async def _acquire(lock: FileLock) -> None:
    """Wait for ``lock`` in a worker thread; if the waiter is cancelled, a lock the thread still
    obtains is released at once instead of being held until the process exits."""
    waiter = asyncio.ensure_future(asyncio.to_thread(lock.acquire))
    try:
        await asyncio.shield(waiter)
    except asyncio.CancelledError:
        waiter.add_done_callback(
            lambda done: None if done.cancelled() or done.exception() else lock.release()
        )
        raise


def _api_key(entry: Any) -> str | None:
    if isinstance(entry, dict) and entry.get("type", "api_key") == "api_key":
        key = entry.get("key")
        if isinstance(key, str) and key:
            return key
    return None
