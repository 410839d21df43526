"""``apiKey: "!command"`` (``models.json``): the key a shell command prints, run once per process.

* The command runs in a thread of its own, never on the event loop, in a session of its own so
  that a timeout (:data:`COMMAND_TIMEOUT_S`) kills it and whatever it started.
* Its key is kept for the life of the process. A failure (non-zero exit, timeout, nothing printed
  is not a failure: no key) is kept too and repeated without running the command again until a
  backoff passes (:data:`FIRST_BACKOFF_S`, doubling up to :data:`MAX_BACKOFF_S`); then the next
  request runs it again.
* Concurrent requests share one run. Async callers :func:`prime` it (awaiting the thread);
  synchronous callers off the loop wait for it; on the event loop an unsettled command is started
  in the background and reported as still running, never waited for.
* A failure is one line naming the command: ``apiKey command 'pass show x' exited with 1: ...``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

from fastagent_cli.errors import CredentialError, one_line

__all__ = ["COMMAND_TIMEOUT_S", "FIRST_BACKOFF_S", "MAX_BACKOFF_S", "command_key", "forget_all", "prime"]

COMMAND_TIMEOUT_S = 30.0
FIRST_BACKOFF_S = 2.0
MAX_BACKOFF_S = 60.0


@dataclass(slots=True)
class _Settled:
    key: str | None
    error: CredentialError | None
    retry_at: float
    """For a failure: when the command may run again (monotonic)."""
    failures: int


_lock = threading.Lock()
_settled: dict[str, _Settled] = {}
_running: dict[str, concurrent.futures.Future[str | None]] = {}


def _fresh(command: str) -> _Settled | None:
    outcome = _settled.get(command)
    if outcome is None or (outcome.error is not None and time.monotonic() >= outcome.retry_at):
        return None
    return outcome


def _answer(outcome: _Settled) -> str | None:
    if outcome.error is not None:
        raise outcome.error
    return outcome.key


def _start(command: str) -> concurrent.futures.Future[str | None]:
    """The run of ``command`` under way, or a new one (call with :data:`_lock` held)."""
    future = _running.get(command)
    if future is None:
        future = concurrent.futures.Future()
        _running[command] = future
        threading.Thread(target=_run, args=(command, future), name="apiKey command", daemon=True).start()
    return future


def _run(command: str, future: concurrent.futures.Future[str | None]) -> None:
    key: str | None = None
    error: CredentialError | None = None
    try:
        key = _execute(command)
    except CredentialError as exc:
        error = exc
    with _lock:
        previous = _settled.get(command)
        failures = (previous.failures + 1 if previous is not None else 1) if error is not None else 0
        backoff = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** max(0, failures - 1))
        _settled[command] = _Settled(key, error, time.monotonic() + backoff, failures)
        _running.pop(command, None)
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(key)


def _failure(command: str, what: str, public: str = "failed") -> CredentialError:
    return CredentialError(
        one_line(f"apiKey command {command!r} {what}", 400),
        public=f"the models.json apiKey command {public}",
    )


def _execute(command: str) -> str | None:
    try:
        process = subprocess.Popen(
            command,
            shell=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        raise _failure(command, f"could not start: {exc.strerror or exc}") from None
    try:
        out, err = process.communicate(timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise _failure(command, f"timed out after {COMMAND_TIMEOUT_S:g} s", "timed out") from None
    if process.returncode != 0:
        detail = err.strip().splitlines()[-1] if err.strip() else "no error output"
        code = process.returncode
        raise _failure(command, f"exited with {code}: {detail}", f"exited with {code}")
    return out.strip() or None


def command_key(command: str) -> str | None:
    """The key ``command`` prints (CredentialError naming it when it fails). Off the event loop
    this waits for the run; on it, an unsettled command is started and reported as running."""
    with _lock:
        outcome = _fresh(command)
        if outcome is None:
            future = _start(command)
    if outcome is not None:
        return _answer(outcome)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return future.result()
    raise CredentialError(
        f"apiKey command {command!r} is still running (it runs once, in the background)",
        public="the models.json apiKey command is still running",
    )


async def prime(command: str) -> None:
    """Settle ``command`` without blocking the loop (its failure is kept for :func:`command_key`)."""
    with _lock:
        if _fresh(command) is not None:
            return
        future = _start(command)
    with contextlib.suppress(CredentialError):
        await asyncio.shield(asyncio.wrap_future(future))


def forget_all() -> None:
    """Drop every kept key and failure (tests; a process that changed its ``models.json``)."""
    with _lock:
        _settled.clear()
