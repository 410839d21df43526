"""``fastagent add github|telegram``: files written once, never clobbered, secrets generated into
``.env`` (0600), placeholders in ``.env.example``, ``.env`` gitignored, next steps printed."""

from __future__ import annotations

import stat
from pathlib import Path

from fastagent_cli.definition.dotenv import parse_dotenv
from tests.conftest import AgentFactory, RunCli


def test_add_telegram_writes_the_channel_the_tool_and_a_secret(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent()
    (agent / ".env").write_text("OPENAI_API_KEY=sk-x")  # no trailing newline
    result = run_cli("add", "telegram", str(agent))
    assert result.returncode == 0, result.stderr
    assert "created channels/telegram.py" in result.stdout
    assert "created tools/telegram_send.py" in result.stdout
    assert "  .env: generated TELEGRAM_SECRET_TOKEN" in result.stdout
    assert "put its token in" in result.stdout and "fastagent dev --tunnel" in result.stdout
    env = parse_dotenv((agent / ".env").read_text())
    assert env["OPENAI_API_KEY"] == "sk-x"
    assert len(env["TELEGRAM_SECRET_TOKEN"]) >= 32
    assert set(env["TELEGRAM_SECRET_TOKEN"]) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    )
    example = (agent / ".env.example").read_text()
    assert "TELEGRAM_BOT_TOKEN=\n" in example and "TELEGRAM_SECRET_TOKEN=\n" in example
    assert ".env" in (agent / ".gitignore").read_text().splitlines()
    assert "telegram_channel(" in (agent / "channels" / "telegram.py").read_text()


def test_the_new_files_load_as_a_channel_and_a_tool(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    assert run_cli("add", "telegram", str(agent)).returncode == 0
    assert run_cli("add", "github", str(agent)).returncode == 0
    info = run_cli("info", str(agent), "--json")
    assert info.returncode == 0, info.stderr
    assert '"telegram_send"' in info.stdout
    assert '"github"' in info.stdout and '"telegram"' in info.stdout


def test_adding_again_keeps_files_and_secrets(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    assert run_cli("add", "github", str(agent)).returncode == 0
    channel = agent / "channels" / "github.py"
    channel.write_text("# my own\n")
    secret = parse_dotenv((agent / ".env").read_text())["GITHUB_WEBHOOK_SECRET"]
    again = run_cli("add", "github", str(agent))
    assert again.returncode == 0
    assert "kept    channels/github.py (it exists; not overwritten)" in again.stdout
    assert channel.read_text() == "# my own\n"
    assert parse_dotenv((agent / ".env").read_text())["GITHUB_WEBHOOK_SECRET"] == secret
    assert (agent / ".env.example").read_text().count("GITHUB_WEBHOOK_SECRET=") == 1
    assert stat.S_IMODE((agent / ".env").stat().st_mode) == 0o600


def test_a_secret_in_the_environment_is_not_shadowed(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    result = run_cli("add", "github", str(agent), env={"GITHUB_WEBHOOK_SECRET": "from-ci"})
    assert result.returncode == 0
    assert not (agent / ".env").exists()
    assert "GITHUB_WEBHOOK_SECRET is set in the environment, so .env was left alone" in result.stderr


def test_add_outside_an_agent_fails_with_one_line(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("add", "telegram", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.startswith("Error: ") and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "channels").exists()


def test_an_unknown_channel_is_a_usage_error(make_agent: AgentFactory, run_cli: RunCli) -> None:
    result = run_cli("add", "slackk", str(make_agent()))
    assert result.returncode == 2


def test_add_github_offers_the_optional_token_for_approvals(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent()
    result = run_cli("add", "github", str(agent), env={"GITHUB_TOKEN": ""})
    assert result.returncode == 0, result.stderr
    example = (agent / ".env.example").read_text()
    assert "GITHUB_TOKEN=\n" in example and "Pull requests: read and write" in example
    assert "GITHUB_TOKEN" not in parse_dotenv((agent / ".env").read_text())  # optional: never required
    assert "put GITHUB_TOKEN into" in result.stdout
