"""Packaging as a user does it: building the checkout (what ``pip install <checkout>`` runs)
leaves nothing untracked behind, so ``git status`` stays clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _untracked() -> set[str]:
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return {line[3:] for line in done.stdout.splitlines() if line.startswith("??")}


def test_building_the_checkout_leaves_git_status_clean(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    before = _untracked()
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-v",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    assert list(tmp_path.glob("fastagent_cli-*.whl"))
    output = build.stdout + build.stderr
    assert "Successfully built fastagent-cli" in output or "Saved " in output
    assert "deprecat" not in output.lower()  # an SPDX licence string: setuptools has nothing to warn
    assert (ROOT / "build" / "lib" / "fastagent_cli").is_dir()  # what it leaves is ignored, not gone
    assert _untracked() == before
