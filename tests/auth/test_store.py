"""The credential store: permissions, atomic locked read-modify-write, loud failures."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fastagent_cli.auth.store import AuthStore
from fastagent_cli.errors import CredentialError
from fastagent_cli.models.credentials import resolve_credential
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.state.locks import FileLock


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_set_creates_0600_file_in_0700_directory(tmp_path: Path) -> None:
    store = AuthStore(tmp_path / "secrets" / "nested" / "auth.json")
    store.set_api_key("openai", "sk-1")
    assert mode(store.path) == 0o600
    assert mode(store.path.parent) == 0o700
    assert json.loads(store.path.read_text()) == {"openai": {"type": "api_key", "key": "sk-1"}}
    assert store.get_key("openai") == "sk-1"
    assert store.providers() == ["openai"]


def test_every_write_retightens_directory_and_file(tmp_path: Path) -> None:
    store = AuthStore(tmp_path / "state" / "auth.json")
    store.set_api_key("openai", "sk-1")
    os.chmod(store.path.parent, 0o755)
    os.chmod(store.path, 0o644)
    store.set_api_key("groq", "gsk-2")
    assert mode(store.path.parent) == 0o700
    assert mode(store.path) == 0o600


def test_write_keeps_entries_it_does_not_understand(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    oauth = {"type": "oauth", "refresh": "r", "access": "a", "expires": 1}
    path.write_text(json.dumps({"anthropic": oauth, "note": "kept"}))
    store = AuthStore(path)
    store.set_api_key("openai", "sk-1")
    doc = json.loads(path.read_text())
    assert doc == {"anthropic": oauth, "note": "kept", "openai": {"type": "api_key", "key": "sk-1"}}
    assert store.providers() == ["openai"]  # only api-key entries count as stored keys


def test_remove(tmp_path: Path) -> None:
    store = AuthStore(tmp_path / "auth.json")
    store.set_api_key("openai", "sk-1")
    store.set_api_key("groq", "gsk-2")
    assert store.remove("openai") is True
    assert store.remove("openai") is False
    assert store.read() == {"groq": {"type": "api_key", "key": "gsk-2"}}


def test_invalid_json_is_an_error_and_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    path.write_text('{"openai": ')
    with pytest.raises(CredentialError, match="not valid JSON.*nothing was written"):
        AuthStore(path).set_api_key("groq", "gsk-2")
    assert path.read_text() == '{"openai": '


def test_chmod_failure_is_loud_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = AuthStore(tmp_path / "shared" / "auth.json")
    real_chmod = os.chmod

    def refuse(path: object, *args: object, **kwargs: object) -> None:
        if Path(str(path)) == store.path.parent:
            raise PermissionError(1, "Operation not permitted")
        real_chmod(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "chmod", refuse)
    with pytest.raises(
        CredentialError, match=r"cannot restrict .*shared to mode 0700 \(Operation not permitted\)"
    ):
        store.set_api_key("openai", "sk-1")
    assert not store.path.exists()


def test_lock_wait_is_bounded(tmp_path: Path) -> None:
    store = AuthStore(tmp_path / "auth.json", lock_timeout=0.3)
    with FileLock(store.lock_path), pytest.raises(CredentialError, match="timed out after 0.3s waiting"):
        store.set_api_key("openai", "sk-1")
    store.set_api_key("openai", "sk-1")  # the lock is free again
    assert store.get_key("openai") == "sk-1"


def test_no_temp_files_left_behind(tmp_path: Path) -> None:
    store = AuthStore(tmp_path / "auth.json")
    for n in range(5):
        store.set_api_key(f"p{n}", f"k{n}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["auth.json", "auth.json.lock"]


def test_stored_key_is_what_the_resolver_reads(tmp_path: Path) -> None:
    store = AuthStore(tmp_path / "auth.json")
    store.set_api_key("openai", "sk-stored")
    model = ModelRegistry().resolve("openai/gpt-5-mini")
    credential = resolve_credential(model, store.path, env={"OPENAI_API_KEY": "sk-env"})
    assert (credential.key, credential.source) == ("sk-stored", f"stored credential ({store.path})")


def test_concurrent_threads_lose_no_writes(tmp_path: Path) -> None:
    store = AuthStore(tmp_path / "auth.json")
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(20):
                AuthStore(store.path).set_api_key(f"t{n}-{i}", f"key-{n}-{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert len(store.providers()) == 6 * 20


WRITER = """
import sys
from fastagent_cli.auth.store import AuthStore
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = AuthStore(path, lock_timeout=60)
for i in range(count):
    store.set_api_key(f"{name}-{i}", f"key-{name}-{i}")
    if i % 3 == 2:
        store.remove(f"{name}-{i - 1}")
"""


def test_concurrent_processes_lose_no_writes(tmp_path: Path) -> None:
    """Many real processes read-modify-write the same file; every surviving entry is there."""
    path = tmp_path / "state" / "auth.json"
    writers, count = 8, 30
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"w{n}", str(count)], stderr=subprocess.PIPE
        )
        for n in range(writers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    removed = {i - 1 for i in range(count) if i % 3 == 2}
    expected = {f"w{n}-{i}" for n in range(writers) for i in range(count) if i not in removed}
    doc = json.loads(path.read_text())
    assert set(doc) == expected
    assert all(doc[name] == {"type": "api_key", "key": f"key-{name}"} for name in expected)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700


def test_a_shared_world_writable_directory_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    with pytest.raises(CredentialError, match="shared .world-writable. directory"):
        AuthStore(shared / "auth.json").set_api_key("openai", "sk-1")
    assert mode(shared) == 0o1777
    assert not (shared / "auth.json").exists()
