"""``fastagent invoke`` and the CLI's front door, run as the real process."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import AgentFactory, RunCli, find_record, record_file, record_files

SCRIPT = {
    "rules": [
        {"match": "fail", "steps": [{"error": {"status": 401, "message": "Incorrect API key provided"}}]},
        {"match": "think", "steps": [{"thinking": "pondering", "text": "thought it through"}]},
        {"steps": [{"text": "plain answer"}]},
    ]
}


def scripted_agent(make_agent: AgentFactory) -> Path:
    return make_agent({"scripts/demo.json": json.dumps(SCRIPT)}, model="scripted/demo")


def test_answer_on_stdout_and_diagnostics_on_stderr(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = scripted_agent(make_agent)
    done = run_cli("invoke", "hello", str(agent))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "plain answer\n"
    assert f"[fastagent] invoke: {agent} (workspace {agent}, scripted/demo)" in done.stderr


def test_thinking_never_reaches_stdout(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "think", str(scripted_agent(make_agent)))
    assert done.stdout == "thought it through\n"


def test_a_failed_turn_exits_1_with_the_provider_message(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "please fail", str(scripted_agent(make_agent)))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "[fastagent] failed: scripted: 401 Incorrect API key provided" in done.stderr
    assert "Traceback" not in done.stderr


def test_json_prints_every_event_as_one_line(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = scripted_agent(make_agent)
    done = run_cli("invoke", "think", str(agent), "--json")
    assert done.returncode == 0
    events = [json.loads(line) for line in done.stdout.splitlines()]
    session = re.search(r"^\[fastagent\] session: (\S+)$", done.stderr, re.M)
    assert session is not None
    assert events[0] == {"type": "session", "session": session.group(1), "model": "scripted/demo"}
    assert events[1] == {"type": "thinking", "delta": "pondering"}
    assert events[-1]["type"] == "completed"
    assert "".join(e["delta"] for e in events if e["type"] == "text") == "thought it through"
    failed = run_cli("invoke", "fail", str(agent), "--json")
    assert failed.returncode == 1
    last = json.loads(failed.stdout.splitlines()[-1])
    assert last == {
        "type": "failed",
        "details": "scripted: 401 Incorrect API key provided",
        "retryable": False,
        "code": "model_error",
    }


def test_message_from_stdin(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    assert run_cli("invoke", "-", str(agent), input="from a pipe").stdout == "echo: from a pipe\n"
    assert run_cli("invoke", cwd=agent, input="implicit pipe").stdout == "echo: implicit pipe\n"


def test_each_call_is_a_fresh_session_unless_named(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    run_cli("invoke", "a", str(agent))
    run_cli("invoke", "b", str(agent))
    sessions = agent / ".fastagent" / "sessions"
    assert len(record_files(sessions)) == 2
    run_cli("invoke", "c", str(agent), "--session", "tg:-100")
    run_cli("invoke", "d", str(agent), "--session", "tg:-100")
    record = record_file(sessions, "tg:-100").read_text().splitlines()
    assert len(record) == 5  # header + two user/assistant pairs


def test_sessions_dir_and_state_dir_overrides(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    agent = make_agent()
    run_cli("invoke", "x", str(agent), "--session", "one", "--sessions-dir", str(tmp_path / "elsewhere"))
    assert find_record(tmp_path / "elsewhere", "one") is not None
    run_cli(
        "invoke", "x", str(agent), "--session", "two", env={"FASTAGENT_STATE_DIR": str(tmp_path / "state")}
    )
    assert find_record(tmp_path / "state" / "sessions", "two") is not None
    assert find_record(agent / ".fastagent" / "sessions", "two") is None
    # FASTAGENT_SESSIONS_DIR (environment or .env) moves the sessions alone; --sessions-dir wins
    env = {"FASTAGENT_SESSIONS_DIR": str(tmp_path / "volume")}
    run_cli("invoke", "x", str(agent), "--session", "three", env=env)
    assert find_record(tmp_path / "volume", "three") is not None
    assert find_record(agent / ".fastagent" / "sessions", "three") is None
    run_cli("invoke", "x", str(agent), "--session", "four", "--sessions-dir", str(tmp_path / "flag"), env=env)
    assert find_record(tmp_path / "flag", "four") is not None
    (agent / ".env").write_text("FASTAGENT_SESSIONS_DIR=dotenv-sessions\n")
    run_cli("invoke", "x", str(agent), "--session", "five")
    assert find_record(agent / "dotenv-sessions", "five") is not None  # relative to the workspace
    (tmp_path / "a-file").write_text("")
    failed = run_cli("invoke", "x", str(agent), env={"FASTAGENT_SESSIONS_DIR": str(tmp_path / "a-file")})
    assert failed.returncode == 1 and "FASTAGENT_SESSIONS_DIR=" in failed.stderr  # a ConfigError
    assert "Traceback" not in failed.stderr


def test_model_precedence(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"scripts/demo.json": json.dumps(SCRIPT)}, model="scripted/echo")
    assert run_cli("invoke", "hi", str(agent)).stdout == "echo: hi\n"
    env = {"FASTAGENT_MODEL": "scripted/demo"}
    assert run_cli("invoke", "hi", str(agent), env=env).stdout == "plain answer\n"
    flagged = run_cli("invoke", "hi", str(agent), "--model", "scripted/echo", env=env)
    assert flagged.stdout == "echo: hi\n"


def test_no_model_is_a_one_line_error(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "hi", str(make_agent(model=None)))
    assert done.returncode == 1
    assert done.stderr.startswith("Error: missing model: set --model, FASTAGENT_MODEL, or model")
    assert len(done.stderr.strip().splitlines()) == 1


def test_bad_model_specs(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    unknown = run_cli("invoke", "hi", str(agent), "--model", "nope/model")
    assert unknown.returncode == 1
    assert 'Error: unknown provider "nope" in model "nope/model"' in unknown.stderr
    script = run_cli("invoke", "hi", str(agent), "--model", "scripted/missing")
    assert script.returncode == 1 and 'scripted model "missing": no script found' in script.stderr


def test_missing_key_fails_the_turn_readably(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "hi", str(make_agent(model="anthropic/claude-sonnet-4-5")))
    assert done.returncode == 1
    assert "no API key for provider anthropic: set ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY" in done.stderr


def test_broken_config_names_file_line_and_column(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent(model=None, config='model = "scripted/echo"\nthinking_level = \n')
    done = run_cli("invoke", "hi", str(agent))
    assert done.returncode == 1
    assert f"Error: {agent / 'fastagent.toml'}: TOML syntax error at line 2, column" in done.stderr
    unknown = make_agent(model=None, config='model = "scripted/echo"\nmodle = "x"\n', name="other")
    done = run_cli("invoke", "hi", str(unknown))
    assert "unknown key 'modle'" in done.stderr and "valid keys: model, thinking_level" in done.stderr


def test_version_help_and_usage_errors(run_cli: RunCli) -> None:
    for flag in ("--version", "-v"):
        done = run_cli(flag)
        assert done.returncode == 0 and done.stdout.startswith("fastagent ")
    top = run_cli("--help")
    assert top.returncode == 0 and "invoke" in top.stdout and "models" in top.stdout
    sub = run_cli("invoke", "--help")
    assert sub.returncode == 0 and "--session" in sub.stdout and "--json" in sub.stdout
    typo = run_cli("invok", "x")
    assert typo.returncode == 2 and "Did you mean invoke?" in typo.stderr
    bad_flag = run_cli("invoke", "x", "--nope")
    assert bad_flag.returncode == 2 and "No such option" in bad_flag.stderr
    empty = run_cli("invoke", input="   \n")
    assert empty.returncode == 2 and "Error: the message is empty" in empty.stderr


def test_models_lists_sorted_specs(run_cli: RunCli) -> None:
    done = run_cli("models")
    specs = [line.split()[0] for line in done.stdout.splitlines()]
    assert done.returncode == 0 and specs == sorted(specs)
    providers = {s.split("/", 1)[0] for s in specs}
    assert {
        "openai",
        "anthropic",
        "openrouter",
        "groq",
        "deepseek",
        "mistral",
        "xai",
        "google",
        "ollama",
        "local",
    } <= providers
    claude = [line.split()[0] for line in run_cli("models", "CLAUDE").stdout.splitlines()]
    assert claude and all("claude" in s for s in claude)
    rows = json.loads(run_cli("models", "gpt-4.1-mini", "--json").stdout)
    assert rows[0]["spec"] == "openai/gpt-4.1-mini" and rows[0]["contextWindow"] > 0
    assert rows[0]["apiKeyEnv"] == ["OPENAI_API_KEY"]


def test_models_search_without_a_match_says_so_and_exits_1(run_cli: RunCli) -> None:
    for args in (("models", "no-such-model-zz"), ("models", "no-such-model-zz", "--json")):
        done = run_cli(*args)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.startswith("Error: no model matches 'no-such-model-zz' (providers: ")


def test_hint_when_the_parent_looks_like_the_workspace(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    (agent.parent / "AGENTS.md").write_text("# repo rules\n")
    done = run_cli("invoke", "hi", str(agent))
    assert done.returncode == 0
    assert f"hint: {agent.parent} has AGENTS.md" in done.stderr
    assert "hint:" not in run_cli("invoke", "hi", str(agent.parent)).stderr


NOISY_TOOL = '''
import subprocess
import sys

from fastagent_cli import tool


@tool
def noisy() -> str:
    """Print while working."""
    print("NOISE from print")
    sys.stdout.write("NOISE from sys.stdout\\n")
    subprocess.run(["echo", "NOISE from a child process"], check=True)
    return "done"
'''
NOISY_SCRIPT = {"steps": [{"toolCalls": [{"name": "noisy", "args": {}}]}, {"text": "the answer"}]}


def test_what_a_tool_prints_goes_to_stderr_not_into_the_answer(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent(
        {"tools/noisy.py": NOISY_TOOL, "scripts/noisy.json": json.dumps(NOISY_SCRIPT)}, model="scripted/noisy"
    )
    plain = run_cli("invoke", "go", str(agent))
    assert (plain.returncode, plain.stdout) == (0, "the answer\n"), plain.stderr
    for noise in ("NOISE from print", "NOISE from sys.stdout", "NOISE from a child process"):
        assert noise in plain.stderr
    events = run_cli("invoke", "go", str(agent), "--json")
    kinds = [json.loads(line)["type"] for line in events.stdout.splitlines()]  # every line is JSON
    assert [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k] == [
        "session",
        "tool_started",
        "tool_ended",
        "text",
        "completed",
    ]
    assert "NOISE from a child process" in events.stderr


def test_broken_tool_files_are_warned_about(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"tools/broken.py": "import not_a_real_module_xyz\n"})
    done = run_cli("invoke", "hi", str(agent))
    assert (done.returncode, done.stdout) == (0, "echo: hi\n")
    assert re.search(r"^\[fastagent\] warn: tools/broken\.py: .*not_a_real_module_xyz", done.stderr, re.M)
    quiet = run_cli("invoke", "hi", str(agent), "--json")
    assert "[fastagent] warn: tools/broken.py" in quiet.stderr  # --json keeps stderr for diagnostics


def test_a_scripted_function_that_raises_is_one_line(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent(
        {"model.py": "def reply(request):\n    raise ValueError('the script is wrong')\n"},
        model="scripted/model:reply",
    )
    done = run_cli("invoke", "hi", str(agent))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert (
        "[fastagent] failed: scripted: the model function model:reply raised ValueError: the script is "
        "wrong (at model.py:2)\n"
    ) in done.stderr


def test_swapped_arguments_get_a_hint(make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path) -> None:
    make_agent(name="demo")
    done = run_cli("invoke", "demo", "Hello there", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        "no such directory: Hello there; MESSAGE comes first, then DIR: fastagent invoke 'Hello there' demo"
    ) in done.stderr
    missing = run_cli("invoke", "hello", "nowhere", cwd=tmp_path)
    assert missing.returncode == 1 and "no such directory: nowhere" in missing.stderr
    assert "MESSAGE comes first" not in missing.stderr


def test_json_lines_share_one_compact_style(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "think", str(scripted_agent(make_agent)), "--json")
    lines = done.stdout.splitlines()
    assert lines[0].startswith('{"type":"session","session":"')
    for line in lines:
        assert line == json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":")), line
