"""A session store the file system refuses (read-only, full, no permission) ends the turn with one
``failed`` event naming the problem; iterating never raises and a full disk is retryable."""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import types
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, Failed
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.state import atomic as atomic_module
from tests.conformance.suite import drain


def agent_on(directory: Path) -> EngineAgent:
    model = ScriptedModel.from_script({"steps": [{"text": "an answer"}]})
    return create_agent(
        model=model, sessions=FileSessionStore(directory, directory.parent), cwd=directory.parent
    )


def only_failed(events: list[Any]) -> Failed:
    assert len(events) == 1 and isinstance(events[0], Failed), events
    return events[0]


async def test_a_read_only_state_directory_is_one_failed_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_mkdir = os.mkdir

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if str(path).startswith(str(tmp_path)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    agent = agent_on(tmp_path / "sessions")
    failed = only_failed(await drain(agent.invoke("s1", "hello")))
    assert failed.details == "cannot write the session store: read-only file system"
    assert failed.retryable is False and failed.code == "session_store_error"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
async def test_a_state_directory_without_write_permission_is_one_failed_event(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    sessions.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        failed = only_failed(await drain(agent_on(sessions).invoke("s1", "hello")))
    finally:
        sessions.chmod(0o700)
    assert failed.details == "cannot write the session store: permission denied"
    assert str(tmp_path) not in failed.details and failed.retryable is False


async def test_a_full_disk_mid_turn_is_retryable_and_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = tmp_path / "sessions"
    agent = agent_on(sessions)
    assert isinstance((await drain(agent.invoke("s1", "first")))[-1], Completed)
    path = agent.config.sessions.location("s1")
    assert path is not None
    before = path.read_bytes()
    written: list[int] = []

    def half_then_full(fd: int, data: Any) -> int:
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(len(data) // 2)
        return os.write(fd, bytes(data[: len(data) // 2]))

    patched = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
    patched.write = half_then_full
    monkeypatch.setattr(atomic_module, "os", patched)
    failed = only_failed([e for e in await drain(agent.invoke("s1", "second")) if isinstance(e, Failed)])
    assert failed.details == "cannot write the session store: no space left on device"
    assert failed.retryable is True and failed.code == "session_store_error"
    assert path.read_bytes() == before  # the half-written line was taken back

    monkeypatch.setattr(atomic_module, "os", os)  # space again: the session goes on
    assert isinstance((await drain(agent.invoke("s1", "third")))[-1], Completed)
    texts = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    users = [e["message"]["content"][0]["text"] for e in texts if e.get("message", {}).get("role") == "user"]
    assert users == ["first", "third"]


async def test_a_full_disk_while_tool_results_are_recorded_is_a_retryable_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from fastagent_cli import tool

    patched = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    @tool
    async def fill_disk(n: int) -> str:
        """Uses up the disk."""
        patched.write = full  # the disk fills while the calls run: their results cannot be written
        return f"filled {n}"

    calls = [{"name": "fill_disk", "args": {"n": n}} for n in (1, 2)]  # parallel: a task group
    model = ScriptedModel.from_script({"steps": [{"toolCalls": calls}, {"text": "done"}]})
    sessions = tmp_path / "sessions"
    agent = create_agent(
        model=model, tools=[fill_disk], sessions=FileSessionStore(sessions, tmp_path), cwd=tmp_path
    )
    monkeypatch.setattr(atomic_module, "os", patched)
    caplog.set_level(logging.WARNING, "fastagent.agent")
    failed = [e for e in await drain(agent.invoke("s1", "fill it")) if isinstance(e, Failed)]
    assert failed == [
        Failed("cannot write the session store: no space left on device", True, "session_store_error")
    ]
    assert not any(r.exc_info for r in caplog.records)  # one line, no traceback
    assert "Traceback" not in caplog.text and "ExceptionGroup" not in caplog.text
