"""Credential files are read per model request: parsed again only when they change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fastagent_cli.models import credentials
from fastagent_cli.models.credentials import credential_files, resolve_credential
from fastagent_cli.models.types import ModelInfo

MODEL = ModelInfo("openai", "gpt", "openai-completions", api_key_env=("OPENAI_API_KEY",))


def write_key(path: Path, key: str) -> None:
    """A credential file as ``fastagent login`` leaves it (temp + rename)."""
    staged = path.with_suffix(".tmp")
    staged.write_text(json.dumps({"openai": {"type": "api_key", "key": key}}))
    os.replace(staged, path)


def test_an_unchanged_file_is_parsed_once_and_a_replaced_one_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credentials, "_SETTLE_NS", 0)  # the rename's ctime is now: trust it at once
    auth = tmp_path / "auth.json"
    write_key(auth, "sk-one")
    reads: list[Path] = []
    real = credentials.read_auth_file
    monkeypatch.setattr(credentials, "read_auth_file", lambda path: reads.append(path) or real(path))
    for _ in range(3):
        assert resolve_credential(MODEL, auth, env={}).key == "sk-one"
    assert reads == [auth]
    write_key(auth, "sk-two")  # a new inode: read again, whatever its times say
    assert resolve_credential(MODEL, auth, env={}).key == "sk-two"
    auth.unlink()
    assert resolve_credential(MODEL, auth, env={}).key is None
    assert len(reads) == 2


def test_a_file_changed_in_place_within_the_clock_tick_is_not_trusted(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    auth.write_text(json.dumps({"openai": {"type": "api_key", "key": "sk-aaa"}}))
    assert resolve_credential(MODEL, auth, env={}).key == "sk-aaa"
    stamp = auth.stat()
    auth.write_text(json.dumps({"openai": {"type": "api_key", "key": "sk-bbb"}}))  # same size
    os.utime(auth, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # and, say, the same mtime tick
    assert resolve_credential(MODEL, auth, env={}).key == "sk-bbb"


def test_one_file_under_two_names_is_read_once(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    write_key(auth, "sk-one")
    (tmp_path / "link").symlink_to(tmp_path)
    assert credential_files(auth, tmp_path / "link" / "auth.json") == [auth]
    other = tmp_path / "global.json"
    assert credential_files(auth, other) == [auth, other]  # the global one missing: kept
    write_key(other, "sk-global")
    assert credential_files(auth, other) == [auth, other]
    assert resolve_credential(MODEL, auth, env={}, global_path=other).key == "sk-one"
