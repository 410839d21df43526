"""The creation counter of :mod:`fastagent_cli.sessions.files`: rewritten in place (no truncation,
which ext4 flushes on close), fixed width, moved before the record is linked."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions import files as files_module
from fastagent_cli.sessions.store import FileSessionStore


def counter(root: Path) -> Path:
    return root / ".locks" / "create.generation"


async def test_the_counter_is_rewritten_in_place_at_a_fixed_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    await store.open_or_create("first")
    inode = counter(tmp_path).stat().st_ino
    opened: list[int] = []
    real_open = os.open

    def spying_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("create.generation"):
            opened.append(flags)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(files_module.os, "open", spying_open)
    for name in ("second", "third"):
        await store.open_or_create(name)
    assert counter(tmp_path).read_bytes() == b"00000000000000000003\n"
    assert counter(tmp_path).stat().st_ino == inode
    assert len(opened) == 2 and not any(flags & os.O_TRUNC for flags in opened)
    other = FileSessionStore(tmp_path, tmp_path)  # another process: sees all three
    assert [await other.open_if_exists(n) is not None for n in ("first", "second", "third")] == [True] * 3


async def test_a_counter_of_an_older_version_or_a_longer_one_is_continued(tmp_path: Path) -> None:
    counter(tmp_path).parent.mkdir(parents=True)
    counter(tmp_path).write_bytes(b"7")  # an older version's: no padding
    await FileSessionStore(tmp_path, tmp_path).open_or_create("a")
    assert counter(tmp_path).read_bytes() == b"00000000000000000008\n"
    counter(tmp_path).write_bytes(b"12\n" + b" " * 60)  # longer than ours: cut to our width
    await FileSessionStore(tmp_path, tmp_path).open_or_create("b")
    assert counter(tmp_path).read_bytes() == b"00000000000000000013\n"


async def test_the_counter_moves_before_the_record_is_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    await store.open_or_create("first")

    def failing_link(*_: Any, **__: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files_module.os, "link", failing_link)
    with pytest.raises(SessionError):
        await store.open_or_create("second")
    # A creation that dies between the two leaves a counter that moved: others list once more.
    assert int(counter(tmp_path).read_bytes()) == 2
    monkeypatch.undo()
    assert await FileSessionStore(tmp_path, tmp_path).open_if_exists("second") is None


async def test_a_creation_after_the_record_directories_were_removed_makes_them_again(tmp_path: Path) -> None:

    store = FileSessionStore(tmp_path, tmp_path)
    await store.open_or_create("first")
    shutil.rmtree(store.files.staging)
    shutil.rmtree(store.files.own)  # a cleanup between two turns of a running server
    record = await store.open_or_create("second")
    assert record.session == "second"
    assert [path.parent for path in store.files.paths()] == [store.files.own]
    assert oct(store.files.own.stat().st_mode & 0o777) == "0o700"
