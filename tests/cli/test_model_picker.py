"""The first-run model picker: the config edit that keeps comments, the one-line error without a
terminal, and the real picker on a pseudo-terminal (ready providers first, inline login)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import fastagent_cli
from fastagent_cli.assembly import MISSING_MODEL, inspect_agent_dir
from fastagent_cli.auth.store import AuthStore
from fastagent_cli.cli.config_model import set_model_text, write_model
from fastagent_cli.cli.model_picker import ensure_model, provider_choices
from fastagent_cli.errors import CredentialError, ModelError
from fastagent_cli.models.registry import ModelRegistry
from tests.auth.fake_key_server import ANSWER, KeyServer
from tests.auth.pty_driver import FASTAGENT, PtyProcess, clean_env

TEMPLATE = """\
# fastagent.toml: this agent's settings. Every key is optional.

# The model, "provider/model" (see `fastagent models`); --model and FASTAGENT_MODEL override it.
# model = "anthropic/claude-sonnet-4-5"   # e.g. openai/gpt-5-mini, scripted/echo (offline)

# How hard the model thinks: off|minimal|low|medium|high|xhigh
# thinking_level = "medium"

# coding_tools = true          # or false, or ["read", "bash"]

[http]
port = 8787                    # `dev` and `start` serve here
# host = "127.0.0.1"

# [mcp_servers.files]
# model = "not this one"
"""

# -- editing fastagent.toml -------------------------------------------------------------------------


def test_template_placeholder_is_uncommented_and_every_other_line_kept() -> None:
    new = set_model_text(TEMPLATE, "openai/gpt-5-mini")
    assert new is not None
    old_lines, new_lines = TEMPLATE.splitlines(), new.splitlines()
    changed = [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b]
    assert changed == [
        (
            '# model = "anthropic/claude-sonnet-4-5"   # e.g. openai/gpt-5-mini, scripted/echo (offline)',
            'model = "openai/gpt-5-mini"   # e.g. openai/gpt-5-mini, scripted/echo (offline)',
        )
    ]
    assert tomllib.loads(new) == {"model": "openai/gpt-5-mini", "http": {"port": 8787}}


def test_the_init_template_gets_its_model_replaced() -> None:
    text = (Path(fastagent_cli.__file__).parent / "data" / "templates" / "fastagent.toml").read_text()
    new = set_model_text(text, "openai/gpt-5-mini")
    assert new is not None
    assert new == text.replace('model = "scripted/demo"', 'model = "openai/gpt-5-mini"', 1)
    assert tomllib.loads(new) == {"model": "openai/gpt-5-mini"}
    without = text.replace('model = "scripted/demo"\n', "", 1)  # a user removed the line: the example
    assert set_model_text(without, "openai/gpt-5-mini") == without.replace(
        '# model = "anthropic/claude-sonnet-4-5"', 'model = "openai/gpt-5-mini"', 1
    )


def test_active_model_line_is_replaced_keeping_its_comment() -> None:
    text = '# top\nmodel = "openai/gpt-4o"  # old choice\nthinking_level = "low"\n'
    assert set_model_text(text, "groq/qwen/qwen3-32b") == (
        '# top\nmodel = "groq/qwen/qwen3-32b"  # old choice\nthinking_level = "low"\n'
    )
    assert set_model_text("'model' = 'x'\n", "a/b") == 'model = "a/b"\n'


def test_without_any_model_line_it_goes_to_the_top_of_the_root_table() -> None:
    header = "# my agent\n# settings below\n\n[http]\nport = 1\n"
    assert set_model_text(header, "scripted/echo") == (
        '# my agent\n# settings below\n\nmodel = "scripted/echo"\n\n[http]\nport = 1\n'
    )
    assert (
        set_model_text("[http]\nport = 1", "scripted/echo") == 'model = "scripted/echo"\n\n[http]\nport = 1\n'
    )
    assert set_model_text('thinking_level = "low"\n', "a/b") == 'model = "a/b"\n\nthinking_level = "low"\n'
    assert set_model_text("", "a/b") == 'model = "a/b"\n'
    assert set_model_text("# only a comment\n", "a/b") == '# only a comment\n\nmodel = "a/b"\n'


def test_keys_of_tables_and_commented_tables_are_not_the_root_model() -> None:
    text = "[http]\nport = 1\n\n[engine]\nmax_tool_rounds = 3\n"
    new = set_model_text(text, "a/b")
    assert new is not None and tomllib.loads(new)["engine"] == {"max_tool_rounds": 3}
    commented_table = '# [mcp_servers.x]\n# model = "no"\n'
    assert set_model_text(commented_table, "a/b") == '# [mcp_servers.x]\n# model = "no"\n\nmodel = "a/b"\n'


def test_crlf_files_stay_crlf() -> None:
    assert set_model_text('# c\r\n# model = "x/y"\r\n[http]\r\nport = 1\r\n', "a/b") == (
        '# c\r\nmodel = "a/b"\r\n[http]\r\nport = 1\r\n'
    )


def test_hand_shaped_values_are_left_alone() -> None:
    assert set_model_text('model = """\nopenai/gpt-4o"""\n', "a/b") is None
    assert set_model_text('model = "a" "b"\n', "a/b") is None  # not TOML: never "fixed" by us


def test_write_model_keeps_mode_and_follows_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text(TEMPLATE)
    os.chmod(real, 0o640)
    link = tmp_path / "fastagent.toml"
    link.symlink_to(real)
    assert write_model(link, "scripted/echo") is True
    assert link.is_symlink()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert tomllib.loads(real.read_text())["model"] == "scripted/echo"
    hand = tmp_path / "hand.toml"
    hand.write_text('model = """x"""\n')
    assert write_model(hand, "a/b") is False
    assert hand.read_text() == 'model = """x"""\n'


# -- the choices ------------------------------------------------------------------------------------


def test_ready_providers_first_with_their_source(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    AuthStore(auth).set_api_key("anthropic", "sk-ant")
    choices = provider_choices(ModelRegistry(), auth, env={"GROQ_API_KEY": "g"})
    notes = [(c.provider.name, c.note) for c in choices]
    assert notes[:3] == [
        ("anthropic", "ready — stored credential"),
        ("groq", "ready — GROQ_API_KEY"),
        ("ollama", "no key needed (the server must be running)"),
    ]
    assert ("local", "no key needed (the server must be running)") in notes  # LOCAL_API_KEY is optional
    assert ("openai", "needs OPENAI_API_KEY — login runs next") in notes
    assert choices[1].models[0] == "groq/llama-3.3-70b-versatile"  # the provider's default first


# -- ensure_model without a terminal ----------------------------------------------------------------


@pytest.fixture
def bare_agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent"
    path.mkdir()
    (path / "fastagent.toml").write_text(TEMPLATE)
    return path


def test_ensure_model_passes_through_when_a_model_is_named(
    bare_agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ensured(flag: str | None, no_input: bool) -> tuple[str | None, str | None]:
        surface = inspect_agent_dir(bare_agent, model=flag)
        ensure_model(surface, no_input=no_input)
        return surface.model_spec, surface.model_source

    monkeypatch.delenv("FASTAGENT_MODEL", raising=False)
    assert ensured("scripted/echo", no_input=True) == ("scripted/echo", "--model")
    monkeypatch.setenv("FASTAGENT_MODEL", "scripted/echo")
    assert ensured(None, no_input=True) == ("scripted/echo", "FASTAGENT_MODEL")
    monkeypatch.delenv("FASTAGENT_MODEL")
    with pytest.raises(ModelError) as caught:
        ensured(None, no_input=True)
    assert caught.value.message == MISSING_MODEL
    with pytest.raises(ModelError):  # pytest's stdin is no terminal
        ensured(None, no_input=False)
    assert (bare_agent / "fastagent.toml").read_text() == TEMPLATE


def test_invoke_without_a_model_and_without_a_terminal_is_the_one_line_error(
    bare_agent: Path, tmp_path: Path
) -> None:
    env = clean_env(tmp_path)
    for extra in (["--no-input"], []):
        done = subprocess.run(
            [FASTAGENT, "invoke", "hi", *extra],
            cwd=bare_agent,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1
        assert done.stderr == f"Error: {MISSING_MODEL}\n"
        assert done.stdout == ""


def test_no_input_wins_even_on_a_terminal(bare_agent: Path, tmp_path: Path) -> None:
    with PtyProcess(["invoke", "hi", "--no-input"], cwd=bare_agent, env=clean_env(tmp_path)) as term:
        assert term.wait() == 1
        assert "Pick one" not in term.text
        assert term.stderr == f"Error: {MISSING_MODEL}\n"


# -- the picker on a terminal -----------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[KeyServer]:
    with KeyServer() as fake:
        yield fake


@pytest.fixture
def agent(bare_agent: Path, server: KeyServer) -> Path:
    (bare_agent / "models.json").write_text(
        json.dumps({"providers": {"openai": {"baseUrl": server.openai_base}}})
    )
    return bare_agent


def test_picker_lists_ready_providers_first_and_saves_the_choice(agent: Path, tmp_path: Path) -> None:
    AuthStore(agent / ".fastagent" / "auth.json").set_api_key("anthropic", "sk-ant")
    env = clean_env(tmp_path, GROQ_API_KEY="gsk")
    with PtyProcess(["invoke", "hi there"], cwd=agent, env=env) as term:
        term.expect("No model is set")
        prompt = term.expect(r"Model \[1-(\d+) or provider/model")
        listing = term.text[: prompt.start()]
        order = [
            listing.index(s) for s in ("anthropic ready — stored credential", "groq ready — GROQ_API_KEY")
        ]
        order.append(listing.index("scripted offline: echoes the prompt"))
        order.append(listing.index("ollama no key needed (the server must be running)"))
        order.append(listing.index("openai needs OPENAI_API_KEY — login runs next"))
        assert order == sorted(order)
        echo = re.search(r"(\d+) scripted/echo", listing)
        assert echo is not None  # the offline model comes right after the ready providers
        term.sendline("999")
        term.expect(f"No model number 999: pick 1-{prompt.group(1)}")
        term.sendline("nope/x")
        term.expect('unknown provider "nope"')
        term.sendline(echo.group(1))
        term.expect("echo: hi there")
        assert term.wait() == 0
        assert f'saved model = "scripted/echo" in {agent / "fastagent.toml"}' in term.stderr
    config = (agent / "fastagent.toml").read_text()
    assert config == TEMPLATE.replace('# model = "anthropic/claude-sonnet-4-5"', 'model = "scripted/echo"')
    again = subprocess.run(
        [FASTAGENT, "invoke", "again"],
        cwd=agent,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    assert (again.returncode, again.stdout) == (0, "echo: again\n")


def test_picking_a_provider_without_a_key_runs_login_inline(
    agent: Path, tmp_path: Path, server: KeyServer
) -> None:
    with PtyProcess(["invoke", "hi"], cwd=agent, env=clean_env(tmp_path)) as term:
        term.expect(r"Model \[1-\d+ or provider/model")
        term.sendline("openai/gpt-5-mini")
        term.expect(r"OpenAI API key \(hidden")
        term.sendline("sk-wrong")
        term.expect(r"OpenAI API key \(hidden")
        term.sendline("sk-good")
        term.expect(ANSWER)
        assert term.wait() == 0
        assert "openai/gpt-5-mini needs a credential for OpenAI" in term.stderr
        assert "OpenAI rejected this key" in term.stderr
    assert AuthStore(agent / ".fastagent" / "auth.json").read() == {
        "openai": {"type": "api_key", "key": "sk-good"}
    }
    assert tomllib.loads((agent / "fastagent.toml").read_text())["model"] == "openai/gpt-5-mini"
    paths = [p for _, p, _ in server.requests]
    assert paths == ["/v1/models", "/v1/models", "/v1/chat/completions"]


def test_aborting_the_picker_changes_nothing(agent: Path, tmp_path: Path) -> None:
    with PtyProcess(["invoke", "hi"], cwd=agent, env=clean_env(tmp_path)) as term:
        term.expect(r"Model \[1-\d+ or provider/model")
        term.send("\x04")  # Ctrl+D
        assert term.wait() == 130
    assert (agent / "fastagent.toml").read_text() == TEMPLATE


def test_a_broken_credential_file_is_one_clear_error(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    auth.write_text("{broken")
    with pytest.raises(CredentialError, match="is not valid JSON"):
        provider_choices(ModelRegistry(), auth, env={})


def test_without_any_key_enter_picks_the_offline_demo_the_agent_was_created_with(tmp_path: Path) -> None:
    """A hand-made (or edited) agent with init's demo script and no model, on a machine with no
    keys: the demo comes first, before local servers that may not run, and Enter takes it."""
    workspace = tmp_path / "ws"
    done = subprocess.run(
        [FASTAGENT, "init", str(workspace)], env=clean_env(tmp_path), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    config = workspace / "fastagent" / "fastagent.toml"
    config.write_text(config.read_text().replace('model = "scripted/demo"\n', ""))
    with PtyProcess(["invoke", "hello"], cwd=workspace, env=clean_env(tmp_path)) as term:
        prompt = term.expect(r"Model \[1-\d+ or provider/model, Enter for 1\]")
        listing = term.text[: prompt.start()]
        assert "scripted offline, no key: the demo script, or echo" in listing
        assert re.search(r"\b1 scripted/demo\b", listing) and re.search(r"\b2 scripted/echo\b", listing)
        assert listing.index("scripted/demo") < listing.index(
            "ollama no key needed (the server must be running)"
        )
        term.sendline("")
        term.expect(r"Hello! I am scripted/demo")  # a terminal gets the Markdown rendered
        assert term.wait() == 0, term.stderr
    assert 'model = "scripted/demo"' in config.read_text()


@pytest.mark.parametrize("cols", [80, 120])
def test_the_first_run_picker_fits_a_40_row_terminal_and_takes_a_typed_model(
    tmp_path: Path, cols: int
) -> None:
    """Providers that need a key fold to one row (``+N more (type openai/)``) so the list fits; any
    model is still picked by typing it (the prompt completes from every spec as the user types)."""
    agent = tmp_path / "bare"
    agent.mkdir()
    (agent / "fastagent.toml").write_text("")
    with PtyProcess(["invoke", "hi"], cwd=agent, env=clean_env(tmp_path), rows=40, cols=cols) as term:
        prompt = term.expect(r"Model \[1-\d+ or provider/model")
        listing = term.text[: prompt.start()]
        assert len(listing.splitlines()) <= 38, listing
        assert re.search(r"\+\d+ more \(type openai/\)", listing), listing
        assert "ollama/mistral" in listing  # keyless servers stay unfolded
        term.sendline("scripted/echo")
        term.expect("echo: hi")
        assert term.wait() == 0, term.stderr
    assert 'model = "scripted/echo"' in (agent / "fastagent.toml").read_text()
