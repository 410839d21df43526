"""A ``$VAR`` apiKey in models.json that is not set: every command names the variable."""

from __future__ import annotations

import json

from tests.conftest import AgentFactory, RunCli
from tests.serving.serving_proc import ServerProcess

NAMED = "MYVLLM_API_KEY is not set (models.json providers.myvllm apiKey)"


def _models(api_key: str | None) -> str:
    provider: dict[str, object] = {
        "baseUrl": "http://127.0.0.1:9/v1",
        "api": "openai-completions",
        "models": [{"id": "qwen3"}],
    }
    if api_key is not None:
        provider["apiKey"] = api_key
    return json.dumps({"providers": {"myvllm": provider}})


def test_invoke_names_the_unset_variable(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"models.json": _models("$MYVLLM_API_KEY")}, model="myvllm/qwen3")
    done = run_cli("invoke", "hi", str(agent))
    assert done.returncode == 1
    assert f"no API key for provider myvllm: {NAMED}" in done.stderr
    assert "set an apiKey in models.json" not in done.stderr


def test_braced_reference_and_info(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"models.json": _models("${MYVLLM_API_KEY}")}, model="myvllm/qwen3")
    done = run_cli("info", "--json", str(agent))
    assert done.returncode == 0, done.stderr
    assert NAMED in json.loads(done.stdout)["credentialSource"]


async def test_start_warns_at_start(make_agent: AgentFactory) -> None:
    agent = make_agent({"models.json": _models("$MYVLLM_API_KEY")}, model="myvllm/qwen3")
    async with ServerProcess.spawn("start", str(agent), "--port", "0") as server:
        line = await server.wait_for(r"^WARN .*no API key for provider myvllm")
        assert NAMED in line.string
        await server.port()


async def test_dev_warns_at_start(make_agent: AgentFactory) -> None:
    agent = make_agent({"models.json": _models("$MYVLLM_API_KEY")}, model="myvllm/qwen3")
    async with ServerProcess.spawn("dev", str(agent), "--port", "0", "--no-watch") as server:
        line = await server.wait_for(r"^WARN .*no API key for provider myvllm")
        assert NAMED in line.string


async def test_start_with_the_variable_set_does_not_warn(make_agent: AgentFactory) -> None:
    agent = make_agent({"models.json": _models("$MYVLLM_API_KEY")}, model="myvllm/qwen3")
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env={"MYVLLM_API_KEY": "k"}) as server:
        await server.port()
        assert "no API key" not in server.text


def test_deploy_names_the_variable_it_needs(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"models.json": _models("$MYVLLM_API_KEY")}, model="myvllm/qwen3")
    done = run_cli("deploy", "docker", str(agent), "--no-input")
    assert done.returncode == 0, done.stderr
    assert "#   MYVLLM_API_KEY: your model provider key (named by models.json providers.myvllm apiKey)" in (
        done.stdout
    )


def test_deploy_of_a_login_only_provider_says_which_login(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent(model="openai-codex/gpt-5.4")
    done = run_cli("deploy", "docker", str(agent), "--no-input")
    assert done.returncode == 0, done.stderr
    assert "the provider's API key" not in done.stdout
    assert (
        "# Model auth: none found here: run `fastagent login openai-codex <agent dir>` before --run."
        in done.stdout
    )
