"""Model names checked before the first request, and ``fastagent models`` inside an agent, as a
user runs them: a typo'd catalog id warns with the closest one, an id a models.json provider does
not list is an error, a typo'd provider gets its "did you mean"."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import AgentFactory, RunCli

MODELS = {
    "providers": {
        "myvllm": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "models": [{"id": "qwen"}],
        }
    }
}


def agent_with_models_json(make_agent: AgentFactory) -> Path:
    return make_agent({"models.json": json.dumps(MODELS)}, config="coding_tools = false\n")


def test_a_typo_in_a_catalog_id_warns_before_the_request(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "hi", str(make_agent()), "-m", "anthropic/claude-sonet-4-5")
    assert done.returncode == 1  # no key here: the turn fails, but the warning came first
    warning = next(line for line in done.stderr.splitlines() if "not in the catalog" in line)
    assert warning == (
        '[fastagent] warn: model "anthropic/claude-sonet-4-5" is not in the catalog: did you mean '
        '"anthropic/claude-sonnet-4-5"? (it is sent as written; `fastagent models anthropic` lists '
        "the known ones)"
    )
    assert done.stderr.index("not in the catalog") < done.stderr.index("failed")
    listed = run_cli("invoke", "hi", str(make_agent()), "-m", "anthropic/claude-sonnet-4-5")
    assert "not in the catalog" not in listed.stderr


def test_an_id_a_models_json_provider_does_not_list_is_an_error(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = agent_with_models_json(make_agent)
    done = run_cli("invoke", "hi", str(agent), "-m", "myvllm/qwen2")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'Error: model "qwen2" is not among the models of provider "myvllm" in models.json '
        '(providers.myvllm.models: qwen). Did you mean "myvllm/qwen"? Add it there, or pick a listed one'
    )
    assert not (agent / ".fastagent" / "sessions").exists()  # refused before any request or record


def test_a_typo_in_the_provider_says_did_you_mean(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "hi", str(make_agent()), "-m", "antropic/claude-sonnet-4-5")
    assert done.returncode == 1
    assert 'unknown provider "antropic" in model "antropic/claude-sonnet-4-5". Did you mean ' in done.stderr
    assert '"anthropic/claude-sonnet-4-5"?' in done.stderr


def test_models_lists_the_agents_models_json_and_marks_keys(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = agent_with_models_json(make_agent)
    lines = run_cli("models", cwd=agent, env={"OPENAI_API_KEY": "sk-test"}).stdout.splitlines()
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in lines}
    assert rows["myvllm/qwen"] == "no key needed · models.json"
    assert rows["openai/gpt-4.1-mini"] == "key"
    assert rows["anthropic/claude-sonnet-4-5"] == "needs a key"
    doc = json.loads(run_cli("models", "qwen", "-j", cwd=agent).stdout)
    mine = next(row for row in doc if row["spec"] == "myvllm/qwen")
    assert (mine["source"], mine["key"]) == ("models.json", "not needed")
    nowhere = agent.parent / "elsewhere"
    nowhere.mkdir()
    outside = run_cli("models", "qwen", cwd=nowhere).stdout
    assert "myvllm/qwen" not in outside
