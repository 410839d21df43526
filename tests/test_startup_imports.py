"""The import count of the CLI's start-up paths is pinned (issue 35): ``fastagent --version`` and a
one-shot ``fastagent invoke`` on the scripted model run in a fresh process, as users run them, and
the modules loaded when the command is done are counted. Two counts per path: the package's own
modules and the third-party ones (the standard library is left out: it differs between Python
versions). Each may grow by a small margin over the baseline in ``tests/startup/``; past it, the
test fails with the modules that are new. A module that must load on the path goes into the
baseline file (regenerate it with ``WRITE_STARTUP_BASELINE=1``), in the same commit
as the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BASELINES = Path(__file__).parent / "startup"
MARGIN = {"own": 4, "third-party": 6}

_PROBE = """
import atexit, json, runpy, sys
def report():
    if {import_httpx}:
        import httpx  # as the first model request of `start` does
    print("MODULES " + json.dumps(sorted(sys.modules)), file=sys.__stderr__, flush=True)
atexit.register(report)
sys.argv = ["fastagent", *sys.argv[1:]]
runpy.run_module("fastagent_cli", run_name="__main__", alter_sys=True)
"""


def loaded(args: list[str], cwd: Path, *, import_httpx: bool = False) -> list[str]:
    """The modules (standard library excluded) loaded by ``fastagent ARGS`` once it is done."""
    code = _PROBE.format(import_httpx=import_httpx)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COV_", "COVERAGE"))}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    modules: list[str] = json.loads(line.removeprefix("MODULES "))
    stdlib = sys.stdlib_module_names
    return [m for m in modules if m.split(".")[0] not in stdlib and m != "__main__"]


def kind(module: str) -> str:
    return "own" if module.split(".")[0] == "fastagent_cli" else "third-party"


def check(name: str, modules: list[str]) -> None:
    baseline_file = BASELINES / f"{name}.txt"
    if os.environ.get("WRITE_STARTUP_BASELINE"):
        BASELINES.mkdir(exist_ok=True)
        baseline_file.write_text("".join(f"{m}\n" for m in modules))
    baseline = set(baseline_file.read_text().split())
    problems = []
    for group in ("own", "third-party"):
        now = [m for m in modules if kind(m) == group]
        ceiling = sum(1 for m in baseline if kind(m) == group) + MARGIN[group]
        if len(now) > ceiling:
            new = sorted(set(now) - baseline)
            problems.append(
                f"{len(now)} {group} modules (ceiling {ceiling}); not in {baseline_file.name}: {new}"
            )
    assert not problems, f"`fastagent {name}` loads more at start-up:\n" + "\n".join(problems)


@pytest.fixture
def scripted(tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text('model = "scripted/echo"\n')
    return agent


def test_version_imports_stay_pinned(tmp_path: Path) -> None:
    check("version", loaded(["--version"], tmp_path))


def test_invoke_imports_stay_pinned(scripted: Path) -> None:
    check("invoke", loaded(["invoke", "hello", str(scripted)], scripted.parent))


def test_httpx_leaves_its_command_line_client_out(scripted: Path) -> None:
    """httpx's CLI module pulls in rich and pygments (about 80 modules) on the first model request."""
    modules = loaded(["invoke", "hello", str(scripted)], scripted.parent, import_httpx=True)
    assert "httpx" in modules
    assert not {m.split(".")[0] for m in modules} & {"rich", "pygments"}, "httpx._main was imported"
