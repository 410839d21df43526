"""``fastagent init``: the scaffold runs at once, refuses what it must, and is all or nothing."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from fastagent_cli.definition.config import FastagentConfig, HttpConfig, load_config
from fastagent_cli.definition.scaffold import scaffold, template_files
from fastagent_cli.definition.skills import load_skills
from tests.conftest import RunCli

FULL = [
    ".env.example",
    ".gitignore",
    "fastagent.toml",
    "persona.md",
    "scripts/demo.json",
    "skills/writing-great-skills/SKILL.md",
    "tools/fetch_url.py",
]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_init_then_invoke_works_at_once(tmp_path: Path, run_cli: RunCli) -> None:
    done = run_cli("init", "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Created an agent in demo/fastagent (workspace demo):" in done.stdout
    assert 'fastagent invoke "hello" demo   # the offline demo model: no key, no network' in done.stdout
    assert _tree(tmp_path / "demo") == [f"fastagent/{rel}" for rel in FULL]
    answer = run_cli("invoke", "hi", "demo", "--model", "scripted/echo", cwd=tmp_path)
    assert (answer.returncode, answer.stdout) == (0, "echo: hi\n"), answer.stderr
    demo = run_cli("invoke", "hello", "demo", cwd=tmp_path)  # no --model: init wrote the demo model
    assert demo.returncode == 0, demo.stderr
    assert demo.stdout.startswith("Hello! I am **scripted/demo**") and "[tool] bash" in demo.stderr
    info = json.loads(run_cli("info", "demo", "--json", cwd=tmp_path).stdout)
    assert [s["name"] for s in info["skills"]] == ["writing-great-skills"]
    assert info["diagnostics"] == [] and info["toolFailures"] == [] and info["toolCollisions"] == []
    assert [t["name"] for t in info["tools"]] == ["read", "bash", "edit", "write", "fetch_url"]
    assert info["persona"] == str((tmp_path / "demo/fastagent/persona.md").resolve())


def test_every_command_after_init_runs_without_a_model_or_a_terminal(tmp_path: Path, run_cli: RunCli) -> None:
    """The README's examples after the quickstart (chat, info here; start and dev in
    tests/serving/test_start.py) name no model and have no terminal in CI: the model init wrote
    answers them."""
    assert run_cli("init", "demo", cwd=tmp_path).returncode == 0
    chat = run_cli("chat", "demo", cwd=tmp_path, input="hello\n")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.startswith("Hello! I am **scripted/demo**")
    assert "scripted/demo" in chat.stderr and "missing model" not in chat.stderr
    info = json.loads(run_cli("info", "demo", "--json", cwd=tmp_path).stdout)
    assert (info["model"], info["modelSource"], info["credentialSource"]) == (
        "scripted/demo",
        "fastagent.toml",
        "not needed",
    )


def test_init_suggests_a_provider_whose_key_is_in_the_environment(tmp_path: Path, run_cli: RunCli) -> None:
    done = run_cli("init", "demo", cwd=tmp_path, env={"GROQ_API_KEY": "gsk-x"})
    assert '(GROQ_API_KEY is set: model = "groq/llama-3.3-70b-versatile" would use it)' in done.stdout
    assert load_config(tmp_path / "demo/fastagent/fastagent.toml").model == "scripted/demo"  # only suggested


def test_the_scaffold_is_valid(tmp_path: Path) -> None:
    files = template_files()
    assert tomllib.loads(files["fastagent.toml"]) == {"model": "scripted/demo"}  # all else is commented
    for key in [*FastagentConfig.model_fields, *HttpConfig.model_fields, "max_tool_rounds", "secrets", "apt"]:
        assert re.search(rf"^# (\[)?{key}\b", files["fastagent.toml"], re.M), key
    settings = re.findall(r"^# (\[[\w.]+\]|[a-z_]+ = .+)$", files["fastagent.toml"], flags=re.M)
    FastagentConfig.model_validate(tomllib.loads("\n".join(settings)))  # the examples are valid settings
    assert files[".gitignore"].splitlines()[1:3] == [".fastagent/", ".env"]
    scaffold(tmp_path / "w")
    found = load_skills(tmp_path / "w" / "fastagent" / "skills")
    assert [s.name for s in found.skills] == ["writing-great-skills"] and found.diagnostics == []


def test_minimal_flat_and_agent_dir(tmp_path: Path, run_cli: RunCli) -> None:
    assert run_cli("init", "m", "--minimal", cwd=tmp_path).returncode == 0
    assert "fastagent/tools/fetch_url.py" not in _tree(tmp_path / "m")
    assert run_cli("init", "n", "--agent-dir", "bot", cwd=tmp_path).returncode == 0
    assert (tmp_path / "n" / "bot" / "fastagent.toml").is_file()
    assert json.loads(run_cli("info", "n", "--json", cwd=tmp_path).stdout)["agentDir"].endswith("/n/bot")


def test_flat_keeps_every_existing_file(tmp_path: Path, run_cli: RunCli) -> None:
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "persona.md").write_text("mine")
    (repo / ".gitignore").write_text("node_modules/\n.env\n")
    (repo / "AGENTS.md").write_text("project rules")
    done = run_cli("init", str(repo), "--flat", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "= persona.md (kept, already there)" in done.stdout
    assert "= .gitignore (kept, already there) (added .fastagent/ and .env)" in done.stdout
    assert (repo / "persona.md").read_text() == "mine"
    assert (repo / "AGENTS.md").read_text() == "project rules"
    assert (repo / ".gitignore").read_text() == "node_modules/\n.env\n\n# fastagent\n.fastagent/\n"
    assert (repo / "tools" / "fetch_url.py").is_file() and (repo / "fastagent.toml").is_file()


def test_model_option_writes_the_model(tmp_path: Path, run_cli: RunCli) -> None:
    done = run_cli("init", "d", "--model", "scripted/echo", cwd=tmp_path)
    assert done.returncode == 0
    assert load_config(tmp_path / "d/fastagent/fastagent.toml").model == "scripted/echo"
    assert run_cli("invoke", "yo", "d", cwd=tmp_path).stdout == "echo: yo\n"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--flat", "--agent-dir", "x"], 2, "--flat and --agent-dir cannot be combined"),
        (["--agent-dir", "../up"], 2, "--agent-dir takes a plain directory name"),
        (["--model", "nonsense"], 2, '--model takes "provider/model"'),
        (["--model", "nosuchprovider/model"], 1, "nosuchprovider"),
    ],
)
def test_usage_errors_write_nothing(
    tmp_path: Path, run_cli: RunCli, args: list[str], code: int, message: str
) -> None:
    done = run_cli("init", "x", *args, cwd=tmp_path)
    assert done.returncode == code and message in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_refusals(tmp_path: Path, run_cli: RunCli) -> None:
    assert run_cli("init", "a", cwd=tmp_path).returncode == 0
    again = run_cli("init", "a", cwd=tmp_path)
    assert again.returncode == 1 and "already holds an agent" in again.stderr
    flat_again = run_cli("init", "a/fastagent", "--flat", cwd=tmp_path)
    assert flat_again.returncode == 1 and "already holds an agent" in flat_again.stderr
    inside = run_cli("init", "a/fastagent/skills/x", cwd=tmp_path)
    assert inside.returncode == 1 and "(skills/ is part of its definition)" in inside.stderr
    assert not (tmp_path / "a/fastagent/skills/x").exists()
    (tmp_path / "b" / "fastagent").mkdir(parents=True)
    (tmp_path / "b" / "fastagent" / "notes.txt").write_text("someone else's")
    busy = run_cli("init", "b", cwd=tmp_path)
    assert busy.returncode == 1 and "already exists and is not empty" in busy.stderr
    assert _tree(tmp_path / "b") == ["fastagent/notes.txt"]
    (tmp_path / "c").write_text("a file")
    assert run_cli("init", "c", cwd=tmp_path).returncode == 1


def _failing_writer(after: int):  # type: ignore[no-untyped-def]
    count = {"n": 0}

    def write(path: Path, text: str) -> None:
        count["n"] += 1
        if count["n"] > after:
            raise OSError(28, "No space left on device")
        path.write_text(text)

    return write


def test_a_failure_midway_leaves_nothing_behind(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="No space left"):
        scaffold(tmp_path / "new" / "deep", write=_failing_writer(3))
    assert list(tmp_path.iterdir()) == []  # even the directories init created are gone


def test_a_failure_midway_in_flat_mode_restores_the_directory(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitignore").write_text("dist/\n")
    (repo / "persona.md").write_text("mine")
    with pytest.raises(OSError):
        scaffold(repo, flat=True, write=_failing_writer(3))
    assert _tree(repo) == [".gitignore", "persona.md"]
    assert (repo / ".gitignore").read_text() == "dist/\n"
