"""Start-up of the PyInstaller binary, one-file against one-directory (prints figures; not a test).

    python bench/binary_startup.py [--runs 10] [--no-build]

Builds both layouts with scripts/build-binary.sh (unless --no-build), then measures, for each:

* ``fastagent --version`` wall time (a one-file binary unpacks itself into a temp dir first);
* ``fastagent invoke`` on the scripted model (an agent directory, a real turn, a session written);
* the size on disk (one-file: the file; one-directory: the whole directory) and, for one-directory,
  the size of the release tarball scripts/release.sh would ship.

Goal: --version <= 150 ms from the shipped artifact. The shipped layout is one-directory
(see README "Install").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARIES = {
    "onefile": ROOT / "build" / "dist" / "onefile" / "fastagent",
    "onedir": ROOT / "build" / "dist" / "onedir" / "fastagent" / "fastagent",
}


def wall_ms(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{args} failed: {done.stderr}")
    return elapsed


def size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def tarball_mb(directory: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "fastagent.tar.gz"
        with tarfile.open(target, "w:gz") as tar:
            tar.add(directory, arcname="fastagent")
        return target.stat().st_size / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-build", action="store_true", help="measure the binaries already built")
    options = parser.parse_args()
    if not options.no_build:
        for mode in BINARIES:
            env = {**os.environ, "FASTAGENT_BINARY_MODE": mode}
            subprocess.run([str(ROOT / "scripts" / "build-binary.sh"), "--no-smoke"], env=env, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent"
        agent.mkdir()
        (agent / "fastagent.toml").write_text('model = "scripted/echo"\n')
        for mode, binary in BINARIES.items():
            if not binary.exists():
                print(f"{mode:8} not built ({binary})")
                continue
            wall_ms([str(binary), "--version"], agent)  # warm the page cache
            version = statistics.median(
                wall_ms([str(binary), "--version"], agent) for _ in range(options.runs)
            )
            invoke = statistics.median(
                wall_ms([str(binary), "invoke", "hello", str(agent)], agent) for _ in range(options.runs)
            )
            where = binary if mode == "onefile" else binary.parent
            extra = f", release tarball {tarball_mb(where):.1f} MB" if mode == "onedir" else ""
            print(
                f"{mode:8} --version {version:7.1f} ms   invoke {invoke:7.1f} ms   "
                f"(median of {options.runs})   {size_mb(where):6.1f} MB on disk{extra}"
            )
    print(
        f"goal: --version <= 150 ms from the shipped artifact; {os.cpu_count()} CPUs, load {os.getloadavg()}"
    )
    print(f"python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
