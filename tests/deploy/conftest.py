"""Fake ``docker``, ``fly`` and ``railway`` executables, and the agent directories deploy tests use.

The fakes are real executables first on ``PATH``: each call appends ``{bin, argv, cwd, env,
stdin}`` as one JSON line to a log, then answers from a script of rules (the first rule whose
``args`` is a prefix of its argv gives ``stdout`` and ``code``; no rule: exit 0, no output).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

FAKE = """#!{python}
import json, os, sys
name = os.path.basename(sys.argv[0])
stdin = sys.stdin.read() if sys.stdin is not None and not sys.stdin.isatty() else ""
with open(os.environ["FAKE_CLI_LOG"], "a", encoding="utf-8") as log:
    call = {{"bin": name, "argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ), "stdin": stdin}}
    log.write(json.dumps(call) + "\\n")
try:
    with open(os.environ["FAKE_CLI_SCRIPT"], encoding="utf-8") as fh:
        rules = json.load(fh).get(name, [])
except FileNotFoundError:
    rules = []
for rule in rules:
    if sys.argv[1 : len(rule["args"]) + 1] == rule["args"]:
        sys.stdout.write(rule.get("stdout", ""))
        sys.exit(rule.get("code", 0))
sys.exit(0)
"""


class FakeClis:
    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bin = root / "fake-bin"
        self.bin.mkdir()
        self.log = root / "fake-cli.jsonl"
        self.script_path = root / "fake-cli-script.json"
        self.rules: dict[str, list[dict[str, Any]]] = {}
        for name in ("docker", "fly", "railway"):
            path = self.bin / name
            path.write_text(FAKE.format(python=sys.executable), encoding="utf-8")
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        monkeypatch.setenv("FAKE_CLI_LOG", str(self.log))
        monkeypatch.setenv("FAKE_CLI_SCRIPT", str(self.script_path))

    def answer(self, binary: str, args: list[str], stdout: str = "", code: int = 0) -> None:
        self.rules.setdefault(binary, []).append({"args": args, "stdout": stdout, "code": code})
        self.script_path.write_text(json.dumps(self.rules), encoding="utf-8")

    def calls(self, binary: str | None = None) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        entries = [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]
        return [e for e in entries if binary is None or e["bin"] == binary]

    def argvs(self, binary: str) -> list[list[str]]:
        return [e["argv"] for e in self.calls(binary)]


@pytest.fixture
def fake_clis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeClis:
    return FakeClis(tmp_path, monkeypatch)


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        healthy = self.path == "/health"
        self.send_response(200 if healthy else 404)
        self.end_headers()
        self.wfile.write(b"ok\n" if healthy else b"")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[int]:
    """A local server answering ``GET /health`` (the agent a fake ``docker compose up`` started)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def write_workspace(
    root: Path, config: str, files: dict[str, str] | None = None, *, git: bool = False
) -> Path:
    """``root/`` as a workspace with the agent in ``root/fastagent/``."""
    agent = root / "fastagent"
    agent.mkdir(parents=True)
    (agent / "fastagent.toml").write_text(config, encoding="utf-8")
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if git:
        (root / ".git").mkdir()
        (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


ROUTE_CHANNEL = """
def channel(ctx):
    async def hook(request):
        return None
    return {"POST /%s": hook}
"""

HOOKED_CHANNEL = (
    ROUTE_CHANNEL % "hooky"
    + """
import os, pathlib

def register_webhook(public_url):
    pathlib.Path(os.environ["HOOK_LOG"]).write_text(public_url)
    return os.environ.get("HOOK_OUTCOME", "registered")
"""
)

LONG_CHANNEL = """
class _Socket:
    name = "socket"

    def connect(self, ctx, stop):
        raise NotImplementedError

channel = _Socket()
"""
