"""A tool file that imports a package fastagent does not carry, as ``invoke`` reports it: from
the pip install (where to install it) and from the release binary (which carries a fixed set of
packages, so the way out is the pip install). The binary is stood in for by the same interpreter
with ``sys.frozen`` set, as PyInstaller sets it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import AgentFactory, RunCli

TOOL = """import surely_not_installed_pkg

from fastagent_cli import tool


@tool
def x() -> str:
    return ""
"""
FROZEN = "import sys; sys.frozen = True; from fastagent_cli.cli.main import main; main()"


def agent_with_the_tool(make_agent: AgentFactory) -> Path:
    return make_agent({"tools/lookup.py": TOOL}, config="coding_tools = false\n")


def warning(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if "tools/lookup.py" in line)


def test_from_the_pip_install_it_says_where_to_install(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "hi", str(agent_with_the_tool(make_agent)))
    assert done.returncode == 0, done.stderr
    line = warning(done.stderr)
    assert "ModuleNotFoundError: No module named 'surely_not_installed_pkg'" in line
    assert f"`{sys.executable} -m pip install <the package>`" in line


def test_from_the_binary_it_names_the_pip_install(make_agent: AgentFactory) -> None:
    agent = agent_with_the_tool(make_agent)
    done = subprocess.run(
        [sys.executable, "-c", FROZEN, "invoke", "hi", str(agent)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    line = warning(done.stderr)
    assert "the fastagent binary carries a fixed set of packages" in line
    assert "`pip install fastagent-cli <the package that provides surely_not_installed_pkg>`" in line
