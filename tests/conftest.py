"""Shared fixtures: an isolated environment for every test, agent directories, the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

_SCRUB_PREFIXES = ("FASTAGENT_",)
_SCRUB_NAMES = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OAUTH_TOKEN",
    "COPILOT_GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "MISTRAL_API_KEY",
    "XAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "LOCAL_API_KEY",
    "PORT",
    "NO_COLOR",
)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """No test sees the developer's keys, state overrides or home directory."""
    for name in list(os.environ):
        if name.startswith(_SCRUB_PREFIXES) or name in _SCRUB_NAMES:
            monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    yield home


AgentFactory = Callable[..., Path]


@pytest.fixture
def make_agent(tmp_path: Path) -> AgentFactory:
    """Write an agent directory: ``make_agent({"persona.md": "..."}, model="scripted/echo")``."""

    def make(
        files: Mapping[str, str] | None = None,
        *,
        model: str | None = "scripted/echo",
        name: str = "agent",
        config: str = "",
    ) -> Path:
        root = tmp_path / name
        root.mkdir(parents=True, exist_ok=True)
        toml = (f'model = "{model}"\n' if model else "") + config
        (root / "fastagent.toml").write_text(toml, encoding="utf-8")
        for rel, text in (files or {}).items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root

    return make


def cli_command() -> list[str]:
    return [sys.executable, "-m", "fastagent_cli"]


RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli() -> RunCli:
    """Run the real ``fastagent`` process; returns the completed process (text mode)."""

    def run(
        *args: str,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.run(
            [*cli_command(), *args],
            cwd=cwd,
            env=full_env,
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


def record_files(sessions_dir: Path) -> list[Path]:
    """Every session record under a sessions directory: the spec's layout
    (``agent-session/*.jsonl``), then the older one (``--<workspace>--/*.jsonl``)."""
    return sorted(sessions_dir.glob("agent-session/*.jsonl")) + sorted(sessions_dir.glob("--*--/*.jsonl"))


def find_record(sessions_dir: Path, session: str) -> Path | None:
    """The record file of ``session`` (its name ends in ``_<encoded id>.jsonl``, spelled as its
    layout spells ids), if there is one."""
    from fastagent_cli.sessions.layout import OWN_RECORDS_DIR, record_key, spec_key

    def named(path: Path) -> bool:
        key = spec_key(session) if path.parent.name == OWN_RECORDS_DIR else record_key(session)
        return path.name.endswith(f"_{key}.jsonl")

    found = [path for path in record_files(sessions_dir) if named(path)]
    assert len(found) <= 1, found
    return found[0] if found else None


def record_file(sessions_dir: Path, session: str) -> Path:
    path = find_record(sessions_dir, session)
    assert path is not None, f"no record of {session!r} in {sessions_dir}: {record_files(sessions_dir)}"
    return path


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """One real PostgreSQL server per test process (xdist worker), started on first use."""
    from tests.pg_server import PgServer, pg_missing_reason

    problem = pg_missing_reason()
    if problem is not None:
        pytest.skip(problem)
    server = PgServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def database_url(pg_server: object) -> Iterator[str]:
    """A fresh, empty database on the worker's server (dropped after the test)."""
    from tests.pg_server import PgServer

    assert isinstance(pg_server, PgServer)
    url = pg_server.create_database()
    try:
        yield url
    finally:
        pg_server.drop_database(url)
