"""fastagent.toml and .env as a user meets them: the real process, its exit code and its one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastagent_cli.definition.dotenv import parse_dotenv
from tests.conftest import RunCli


def _agent(tmp_path: Path, toml: str, env_file: str | None = None) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text(toml)
    if env_file is not None:
        (agent / ".env").write_text(env_file)
    return agent


def _error(run_cli: RunCli, agent: Path, *args: str) -> str:
    done = run_cli("info", str(agent), *args)
    assert done.returncode == 1, done.stdout
    assert done.stdout == "" and done.stderr.count("\n") == 1
    return done.stderr.strip()


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            'model = "x"\nthinkingLevel = "high"\n',
            "unknown key 'thinkingLevel'; did you mean 'thinking_level'? (valid keys: model, thinking_level,"
            " coding_tools, tools, http, self_schedule, session_control, deploy, mcp_servers, engine,"
            " compaction, approval, limits, telemetry, code_mode, claude_code_sessions, state_backend,"
            " database, output, name)",
        ),
        (
            "[http]\nprot = 1\n",
            "unknown key 'http.prot'; did you mean 'port'? "
            "(valid keys: port, host, token, web_chat, allowed_hosts, allowed_origins, openai, mcp, a2a)",
        ),
        (
            '[mcp_servers.fs]\ncommand = "x"\nargv = []\n',
            "unknown key 'mcp_servers.fs.argv'; did you mean 'args'? (valid keys: command, args, env, cwd,"
            " watch, watch_debounce_ms, code_mode, url, headers, transport, timeout, oauth)",
        ),
        ('agent_dir = "bot"\n', "key 'agent_dir' is retired (placement is structural"),
        (
            "[code_mode]\ntimelimit = 3\n",
            "unknown key 'code_mode.timelimit'; did you mean 'time_limit'? (valid keys: enabled, time_limit,",
        ),
        ('code_mode = "yes"\n', 'code_mode: must be true, false or a [code_mode] table, not "yes"'),
        (
            "[code_mode]\nmemory_mb = 4\n",
            "code_mode.memory_mb: Input should be greater than or equal to 8, not 4",
        ),
        (
            'coding_tools = ["read", "grep"]\n',
            "coding_tools: unknown coding tool 'grep' (valid: read, bash, edit, write)",
        ),
        ('coding_tools = ["read", "read"]\n', "coding_tools: coding tool 'read' is listed twice"),
        ('thinking_level = "extreme"\n', "thinking_level: Input should be 'off', 'minimal', 'low', 'medium'"),
        ('tools = ["not a ref"]\n', "tools: 'not a ref' is not an import ref"),
        ("[http]\nport = 70000\n", "http.port: Input should be less than or equal to 65535"),
        # strict types: nothing is coerced, so a wrong type never turns something on
        (
            'coding_tools = "yes"\n',
            "coding_tools: must be true, false or a list of coding tool names (read, bash, edit, write), "
            'not "yes"',
        ),
        ("coding_tools = 1\n", "coding_tools: must be true, false or a list of coding tool names"),
        ('session_control = "false"\n', 'session_control: Input should be a valid boolean, not "false"'),
        ('[http]\nport = "8787"\n', 'http.port: Input should be a valid integer, not "8787"'),
        (
            "[engine]\nmax_tool_rounds = 2.5\n",
            "engine.max_tool_rounds: Input should be a valid integer, not 2.5",
        ),
        ('[engine]\ntool_timeout = "30"\n', 'engine.tool_timeout: Input should be a valid number, not "30"'),
        ('tools = ["a:b", 3]\n', "tools[1]: Input should be a valid string, not 3"),
        (
            '[mcp_servers.x]\ncommand = "c"\nargs = "a b"\n',
            'mcp_servers.x.args: Input should be a valid list, not "a b"',
        ),
    ],
)
def test_config_errors_name_the_file_and_the_key(
    tmp_path: Path, run_cli: RunCli, toml: str, expected: str
) -> None:
    agent = _agent(tmp_path, toml)
    line = _error(run_cli, agent)
    assert line.startswith(f"Error: {agent.resolve() / 'fastagent.toml'}: ")
    assert expected in line


def test_toml_syntax_error_names_line_and_column(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path, 'model = "x"\nthinking_level = = "high"\n')
    line = _error(run_cli, agent)
    assert "fastagent.toml: TOML syntax error at line 2, column 18" in line


def test_coding_tools_selection_is_what_mounts(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path, 'coding_tools = ["write", "read"]\n')
    doc = json.loads(run_cli("info", str(agent), "--json").stdout)
    assert doc["codingTools"] == ["read", "write"]  # canonical order
    assert [t["name"] for t in doc["tools"]] == ["read", "write"]
    agent_none = tmp_path / "none"
    agent_none.mkdir()
    (agent_none / "fastagent.toml").write_text("coding_tools = false\n")
    assert json.loads(run_cli("info", str(agent_none), "--json").stdout)["tools"] == []


def test_dotenv_is_loaded_and_real_environment_wins(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path, "", env_file='# comment\nexport FASTAGENT_MODEL="scripted/echo"\n')
    doc = json.loads(run_cli("info", str(agent), "--json").stdout)
    assert (doc["model"], doc["modelSource"]) == ("scripted/echo", "FASTAGENT_MODEL")
    done = run_cli("invoke", "hello", str(agent))
    assert done.returncode == 0 and done.stdout == "echo: hello\n"
    real = run_cli("info", str(agent), "--json", env={"FASTAGENT_MODEL": "scripted/other"})
    assert json.loads(real.stdout)["model"] == "scripted/other"


def test_model_precedence_flag_env_config(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path, 'model = "scripted/from-config"\n')

    def model(*args: str, env: dict[str, str] | None = None) -> tuple[str, str]:
        doc = json.loads(run_cli("info", str(agent), "--json", *args, env=env).stdout)
        return doc["model"], doc["modelSource"]

    assert model() == ("scripted/from-config", "fastagent.toml")
    assert model(env={"FASTAGENT_MODEL": "scripted/from-env"}) == ("scripted/from-env", "FASTAGENT_MODEL")
    flagged = model("--model", "scripted/flag", env={"FASTAGENT_MODEL": "scripted/from-env"})
    assert flagged == ("scripted/flag", "--model")


def test_dotenv_dialect() -> None:
    parsed = parse_dotenv("A=1\nB = 'two words'\nC=\"x # y\"\nD=plain # comment\n#E=no\nbad line\nA=last\n")
    assert parsed == {"A": "last", "B": "two words", "C": "x # y", "D": "plain"}


def test_engine_tool_timeout_is_read(tmp_path: Path) -> None:
    from fastagent_cli.definition.config import load_config

    path = _agent(tmp_path, "[engine]\ntool_timeout = 30\n") / "fastagent.toml"
    assert load_config(path).engine.tool_timeout == 30.0


def test_models_json_types_are_strict(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path, 'model = "local/m"\n')
    provider = {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "models": [{"id": "m"}]}
    provider["models"] = [{"id": "m", "reasoning": "no"}]
    (agent / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    done = run_cli("invoke", "hi", str(agent))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.endswith(
        'models.json: providers.local.models[m]: reasoning must be true or false, not "no"\n'
    )


def test_environment_problems_are_one_line_naming_the_setting(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path, 'model = "scripted/echo"\n')
    not_a_dir = tmp_path / "state-file"
    not_a_dir.write_text("")
    for value in (str(not_a_dir), str(not_a_dir / "below")):
        done = run_cli("invoke", "hi", str(agent), env={"FASTAGENT_STATE_DIR": value})
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr == f"Error: FASTAGENT_STATE_DIR={value}: {not_a_dir} is not a directory\n"

    (agent / ".env").write_bytes(b"A=1\nNAME=caf\xe9\n")
    done = run_cli("invoke", "hi", str(agent))
    assert done.returncode == 1
    assert (
        done.stderr
        == f"Error: {agent.resolve() / '.env'} is not UTF-8 text (byte 0xe9 on line 2); save it as UTF-8\n"
    )
