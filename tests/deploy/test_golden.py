"""The generated artifacts of a reference agent, byte for byte (golden files in golden/).

Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest tests/deploy/test_golden.py``
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fastagent_cli._version import __version__
from tests.conftest import RunCli
from tests.deploy.conftest import ROUTE_CHANNEL, write_workspace

GOLDEN = Path(__file__).parent / "golden"
CONFIG = """model = "openai/gpt-4.1-mini"

[http]
port = 9000

[deploy]
secrets = ["GH_TOKEN"]
apt = ["ripgrep"]
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return write_workspace(
        tmp_path / "shop",
        CONFIG,
        {
            "fastagent/requirements.txt": "requests\n",
            "fastagent/schedules/daily.toml": 'cron = "0 9 * * *"\nprompt = "report"\n',
            "fastagent/channels/telegram.py": ROUTE_CHANNEL % "telegram",
        },
        git=True,
    )


def _check(path: Path, golden: str) -> None:
    text = path.read_text(encoding="utf-8").replace(__version__, "{version}")
    expected = GOLDEN / golden
    if os.environ.get("UPDATE_GOLDEN"):
        expected.write_text(text, encoding="utf-8")
    assert text == expected.read_text(encoding="utf-8"), golden


@pytest.mark.parametrize(
    ("host", "extra", "artifacts"),
    [
        ("docker", ["--tunnel"], {"fastagent/fastagent.compose.yml": "fastagent.compose.yml"}),
        ("fly", [], {"fastagent/fly.toml": "fly.toml"}),
        ("railway", [], {"fastagent/railway.json": "railway.json"}),
    ],
)
def test_golden_artifacts(
    shop: Path, run_cli: RunCli, host: str, extra: list[str], artifacts: dict[str, str]
) -> None:
    done = run_cli("deploy", host, str(shop), "--no-input", *extra, env={"OPENAI_API_KEY": "sk-x"})
    assert done.returncode == 0, done.stderr
    artifacts = {
        **artifacts,
        "fastagent/Dockerfile": "Dockerfile",
        "fastagent/Dockerfile.dockerignore": "dockerignore",
        ".dockerignore": "dockerignore",
    }
    for rel, golden in artifacts.items():
        _check(shop / rel, golden)
    assert sorted(p.name for p in shop.iterdir()) == [
        ".dockerignore",
        ".git",
        "fastagent",
    ]  # one write outside
