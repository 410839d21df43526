"""``fastagent info --check``: a preflight for CI, one line per problem, exit 1 when any."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import AgentFactory, RunCli

MODELS = {
    "providers": {
        "myvllm": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKey": "$MYVLLM_API_KEY",
            "models": [{"id": "qwen3"}],
        }
    }
}


def _broken_agent(make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path) -> Path:
    agent = make_agent(
        {
            "models.json": json.dumps(MODELS),
            "tools/broken.py": "import nosuchmodule_xyz\n",
            "schedules/daily.toml": 'cron = "not a cron"\nprompt = "report"\n',
        },
        model="myvllm/qwen3",
        config='\n[mcp_servers.files]\ncommand = "nosuch-command-xyz"\n',
    )
    done = run_cli("add", "telegram", str(agent))
    assert done.returncode == 0, done.stderr
    return agent


def test_check_reports_each_problem_on_one_line_and_exits_1(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    agent = _broken_agent(make_agent, run_cli, tmp_path)
    done = run_cli("info", "--check", str(agent))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(
        "key: no API key for provider myvllm (myvllm/qwen3): MYVLLM_API_KEY is not set "
        "(models.json providers.myvllm apiKey)"
    )
    assert lines[1].startswith(
        "tools: tools/broken.py: ModuleNotFoundError: No module named 'nosuchmodule_xyz' (install it"
    )
    assert lines[1].endswith(" (skipped)")
    assert lines[2].startswith('mcp: mcp server "files": cannot start: command not found: nosuch-command-xyz')
    assert lines[3].startswith("schedules: schedules/daily.toml: ")
    assert (
        lines[4]
        == "channels: channels/telegram.py: TELEGRAM_BOT_TOKEN is not set (from @BotFather -> /newbot)"
    )
    assert len(lines) == 5
    assert f"5 problems found in {agent.resolve()}" in done.stderr

    as_json = run_cli("info", "--check", "--json", str(agent))
    assert as_json.returncode == 1
    kinds = [p["kind"] for p in json.loads(as_json.stdout)["problems"]]
    assert kinds == ["key", "tools", "mcp", "schedules", "channels"]


def test_invoke_with_a_broken_tool_still_exits_0_but_check_fails(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent({"tools/broken.py": "raise RuntimeError('boom')\n"})
    turn = run_cli("invoke", "hi", str(agent))
    assert turn.returncode == 0, turn.stderr  # the turn ran
    assert "tools/broken.py" in turn.stderr
    done = run_cli("info", "--check", str(agent))
    assert done.returncode == 1
    assert done.stdout.startswith("tools: tools/broken.py: RuntimeError: boom")


def test_a_healthy_agent_passes(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    done = run_cli("info", "--check", str(agent))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"no problems found in {agent.resolve()}"


def test_the_variables_set_clear_the_problems(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"models.json": json.dumps(MODELS)}, model="myvllm/qwen3")
    assert run_cli("add", "telegram", str(agent)).returncode == 0
    env = {"MYVLLM_API_KEY": "k", "TELEGRAM_BOT_TOKEN": "123:abc"}
    done = run_cli("info", "--check", str(agent), env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_missing_model_is_a_problem(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent(model=None)
    done = run_cli("info", "--check", str(agent))
    assert done.returncode == 1
    assert done.stdout.startswith("model: missing model")


def test_plain_info_keeps_exiting_0(make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path) -> None:
    agent = _broken_agent(make_agent, run_cli, tmp_path)
    done = run_cli("info", str(agent))
    assert done.returncode == 0, done.stderr
