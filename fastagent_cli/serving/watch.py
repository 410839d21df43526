"""What ``dev`` watches: the agent's code inputs, never its live-read definition or its state.

Watched (rooted at the agent dir): ``tools/``, ``channels/``, ``schedules/`` (recursively), and
``fastagent.toml``, ``models.json``, ``.env``. Not watched: ``persona.md``, ``AGENTS.md`` and
``skills/`` (re-read every turn, so an edit is live on the next turn), the state root, and
everything else in the directory (which may be a whole repository in a flat layout).

Two ``watchfiles.awatch`` loops keep inotify off the rest of the tree: one on the agent dir itself,
not recursive (the three files, and a code folder appearing or vanishing), one recursive on the
code folders that exist; it is rebuilt when that set changes. Changes arrive on :attr:`changes`
as lists of agent-relative paths, debounced (~200 ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

__all__ = ["WATCHED_DIRS", "WATCHED_FILES", "CodeWatcher", "watching_line"]

log = logging.getLogger("fastagent.dev")

WATCHED_DIRS = ("tools", "channels", "schedules")
WATCHED_FILES = ("fastagent.toml", "models.json", ".env")
DEBOUNCE_MS = 200
STEP_MS = 50


def watching_line(agent_dir: Path) -> str:
    scope = ", ".join([*(f"{d}/" for d in WATCHED_DIRS), *WATCHED_FILES])
    return (
        f"watching {scope} in {agent_dir} — code edits restart the dev worker (--no-watch to disable); "
        "AGENTS.md/persona.md/skills edits go live next turn without a restart"
    )


class _Loop:
    """One ``awatch`` loop pushing relevant, agent-relative paths."""

    def __init__(
        self, paths: list[Path], recursive: bool, accept: Any, out: asyncio.Queue[list[str]]
    ) -> None:
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(self._run(paths, recursive, accept, out))

    async def _run(
        self, paths: list[Path], recursive: bool, accept: Any, out: asyncio.Queue[list[str]]
    ) -> None:
        from watchfiles import awatch

        try:
            async for batch in awatch(
                *paths,
                watch_filter=accept,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=self.stop,
                recursive=recursive,
            ):
                out.put_nowait(sorted({path for _, path in batch}))
        except Exception as exc:  # a watched folder removed under us: the top loop rebuilds this one
            log.debug("[dev] watcher on %s ended: %s", ", ".join(map(str, paths)), exc)

    async def aclose(self) -> None:
        self.stop.set()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await self.task


class CodeWatcher:
    def __init__(self, agent_dir: Path) -> None:
        from watchfiles import DefaultFilter

        self.agent_dir = agent_dir
        self.changes: asyncio.Queue[list[str]] = asyncio.Queue()
        self._default = DefaultFilter()
        self._raw: asyncio.Queue[list[str]] = asyncio.Queue()
        self._top: _Loop | None = None
        self._code: _Loop | None = None
        self._code_dirs: list[Path] = []
        self._retired: list[_Loop] = []
        self._pump: asyncio.Task[None] | None = None

    def _relative(self, path: str) -> str | None:
        try:
            rel = Path(path).relative_to(self.agent_dir)
        except ValueError:
            return None
        text = rel.as_posix()
        return text if self._default(None, text) else None  # type: ignore[arg-type]

    def _accept_top(self, change: Any, path: str) -> bool:
        rel = self._relative(path)
        return rel is not None and (rel in WATCHED_FILES or rel in WATCHED_DIRS)

    def _accept_code(self, change: Any, path: str) -> bool:
        return self._relative(path) is not None

    def _existing_dirs(self) -> list[Path]:
        return [self.agent_dir / d for d in WATCHED_DIRS if (self.agent_dir / d).is_dir()]

    async def start(self) -> None:
        self._top = _Loop([self.agent_dir], False, self._accept_top, self._raw)
        self._restart_code()
        self._pump = asyncio.create_task(self._forward())

    def _restart_code(self) -> None:
        dirs = self._existing_dirs()
        if dirs == self._code_dirs and self._code is not None:
            return
        old, self._code = self._code, None
        if old is not None:
            old.stop.set()  # it ends within one step; aclose() collects it
            self._retired.append(old)
        self._code_dirs = dirs
        if dirs:
            self._code = _Loop(dirs, True, self._accept_code, self._raw)

    async def _forward(self) -> None:
        while True:
            paths = await self._raw.get()
            rels = [rel for path in paths if (rel := self._relative(path)) is not None]
            if any(rel in WATCHED_DIRS for rel in rels):
                self._restart_code()
            if rels:
                log.debug("[dev] changed: %s", ", ".join(rels))
                self.changes.put_nowait(rels)

    def drain(self) -> list[str]:
        """Every change already queued (a restart covers them all)."""
        found: list[str] = []
        while not self.changes.empty():
            found.extend(self.changes.get_nowait())
        return found

    async def aclose(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        for loop in (self._top, self._code, *self._retired):
            if loop is not None:
                await loop.aclose()
