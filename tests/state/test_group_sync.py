"""A group of new files made durable by one syncfs; a small group, one fsync each."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fastagent_cli.state import group_sync
from fastagent_cli.state.group_sync import GROUP_SYNC_MIN, stage_files


class Counted:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, result: int = 0) -> None:
        self.syncfs: list[int] = []
        self.fsync = 0
        self.result = result
        real_fsync = os.fsync

        def fsync(fd: int) -> None:
            self.fsync += 1
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(group_sync, "_syncfs", self._call)
        monkeypatch.setattr(group_sync, "_errno", lambda: 28)

    def _call(self, fd: int) -> int:
        self.syncfs.append(fd)
        return self.result


def group(tmp_path: Path, n: int) -> tuple[list[Path], list[bytes]]:
    return [tmp_path / f"r{i}.jsonl" for i in range(n)], [f'{{"n":{i}}}\n'.encode() for i in range(n)]


def test_a_large_group_is_made_durable_by_one_syncfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = Counted(monkeypatch)
    paths, data = group(tmp_path, GROUP_SYNC_MIN + 2)
    out = stage_files(paths, data, mode=0o600)
    assert len(counted.syncfs) == 1 and counted.fsync == 0
    for temp, body, path in zip(out, data, paths, strict=True):
        assert (
            isinstance(temp, Path) and temp.parent == path.parent and temp.name.startswith(f".{path.name}.")
        )
        assert temp.read_bytes() == body
        assert temp.stat().st_mode & 0o777 == 0o600


def test_a_small_group_gets_an_fsync_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = Counted(monkeypatch)
    paths, data = group(tmp_path, GROUP_SYNC_MIN - 1)
    out = stage_files(paths, data)
    assert counted.syncfs == [] and counted.fsync == GROUP_SYNC_MIN - 1
    assert [temp.read_bytes() for temp in out if isinstance(temp, Path)] == data


def test_without_syncfs_a_large_group_gets_an_fsync_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted(monkeypatch)
    monkeypatch.setattr(group_sync, "_syncfs", None)  # not Linux, or no such call in its libc
    paths, data = group(tmp_path, GROUP_SYNC_MIN * 2)
    out = stage_files(paths, data)
    assert counted.fsync == len(paths) and all(isinstance(temp, Path) for temp in out)


def test_a_failed_syncfs_fails_the_group_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Counted(monkeypatch, result=-1)
    paths, data = group(tmp_path, GROUP_SYNC_MIN)
    out = stage_files(paths, data)
    assert all(isinstance(o, OSError) and o.errno == 28 for o in out)
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_cannot_be_written_is_its_own_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Counted(monkeypatch)
    paths, data = group(tmp_path, GROUP_SYNC_MIN)
    paths[3] = tmp_path / "missing" / "r3.jsonl"
    out = stage_files(paths, data)
    assert isinstance(out[3], FileNotFoundError)
    assert all(isinstance(o, Path) and o.exists() for i, o in enumerate(out) if i != 3)


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="syncfs is Linux's")
def test_the_real_syncfs_is_found_on_linux(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_sync, "_syncfs", False)
    paths, data = group(tmp_path, GROUP_SYNC_MIN)
    out = stage_files(paths, data)
    assert callable(group_sync._syncfs)
    assert all(isinstance(o, Path) and o.read_bytes() == d for o, d in zip(out, data, strict=True))
