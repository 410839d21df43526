"""Start-up and per-invoke figures for the spine (prints figures; not a test).

    python bench/startup.py [--runs 10]

* ``fastagent --version`` wall time;
* ``fastagent invoke`` on the scripted model: wall time and peak RSS;
* per-invoke wall time with 0 and 1 000 stored sessions (it must not grow: lookup by id is direct).

Targets on the 2-core dev machine: --version <= 60 ms, invoke <= 350 ms, peak RSS <= 80 MB,
no growth with stored sessions. (The TypeScript original: 50 ms, 1.69 s, 191 MB.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FASTAGENT = [sys.executable, "-m", "fastagent_cli"]
if shutil.which("fastagent") and Path(shutil.which("fastagent") or "").parent == Path(sys.executable).parent:
    FASTAGENT = [str(Path(sys.executable).parent / "fastagent")]


def timed(args: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall ms, peak RSS MB) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run([*FASTAGENT, *args], cwd=cwd, capture_output=True, text=True, check=False)
    wall = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{args} failed: {proc.stderr}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024


def peak_rss_mb(args: list[str], cwd: Path) -> float:
    """Peak RSS of a fresh child, measured in a fresh grandparent so earlier runs do not mask it."""
    code = (
        "import resource,subprocess,sys;"
        f"subprocess.run({[*FASTAGENT, *args]!r},cwd={str(cwd)!r},capture_output=True,check=True);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return int(out) / 1024


def median(values: list[float]) -> float:
    return statistics.median(values)


def seed_sessions(sessions: Path, workspace: Path, count: int) -> None:
    """``count`` one-message records in pi's layout, as the store writes them."""
    from fastagent_cli.sessions.layout import encode_id, record_name, workspace_dirname

    records = sessions / workspace_dirname(str(workspace.resolve()))
    records.mkdir(parents=True, exist_ok=True)
    stamp = "2026-01-01T00:00:00.000Z"
    turn = (
        '{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
        '"message":{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":0}}\n'
    )
    for i in range(count):
        header = json.dumps(
            {"type": "session", "version": 3, "id": encode_id(f"seed-{i}"), "timestamp": stamp, "cwd": "/"}
        )
        (records / record_name(stamp, f"seed-{i}")).write_text(header + "\n" + turn)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent"
        agent.mkdir()
        (agent / "fastagent.toml").write_text('model = "scripted/echo"\n')
        timed(["--version"])  # warm caches (.pyc)
        timed(["invoke", "warm", str(agent)])
        version = median([timed(["--version"])[0] for _ in range(runs)])
        invoke = [timed(["invoke", "hello", str(agent)])[0] for _ in range(runs)]
        rss = max(peak_rss_mb(["invoke", "hello", str(agent)], agent) for _ in range(3))
        print(f"fastagent --version        {version:7.1f} ms (median of {runs})   target <= 60 ms")
        print(f"fastagent invoke (scripted) {median(invoke):6.1f} ms (median of {runs})   target <= 350 ms")
        print(f"fastagent invoke peak RSS  {rss:7.1f} MB                    target <= 80 MB")
        sessions = agent / ".fastagent" / "sessions"
        shutil.rmtree(sessions, ignore_errors=True)
        empty = median([timed(["invoke", "hi", str(agent), "--session", "bench"])[0] for _ in range(runs)])
        seed_sessions(sessions, agent, 1000)
        full = median([timed(["invoke", "hi", str(agent), "--session", "bench"])[0] for _ in range(runs)])
        print(f"invoke --session, 0 stored sessions     {empty:7.1f} ms")
        print(f"invoke --session, 1000 stored sessions  {full:7.1f} ms   (growth {full - empty:+.1f} ms)")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
