"""``init bot`` names the agent ``bot`` wherever it is shown: chat header, web chat, startup lines."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.chat.pty_run import PtyProcess
from tests.conftest import RunCli, cli_command
from tests.serving.serving_proc import ServerProcess, get


def _init(run_cli: RunCli, where: Path, *args: str) -> Path:
    done = run_cli("init", *args, cwd=where)
    assert done.returncode == 0, done.stderr
    return where


def test_init_writes_the_name_the_user_gave(run_cli: RunCli, tmp_path: Path) -> None:
    _init(run_cli, tmp_path, "bot")
    config = tomllib.loads((tmp_path / "bot" / "fastagent" / "fastagent.toml").read_text())
    assert config["name"] == "bot"
    _init(run_cli, tmp_path, "--flat", "solo")
    assert tomllib.loads((tmp_path / "solo" / "fastagent.toml").read_text())["name"] == "solo"


def test_chat_header_names_the_agent(run_cli: RunCli, tmp_path: Path) -> None:
    _init(run_cli, tmp_path, "bot")
    term = PtyProcess([*cli_command(), "chat", "bot"], cwd=tmp_path)
    try:
        screen = term.read_until("fastagent chat · bot · scripted/demo")
        assert "· fastagent ·" not in screen
    finally:
        term.close()


async def test_web_chat_and_startup_lines_name_the_agent(run_cli: RunCli, tmp_path: Path) -> None:
    _init(run_cli, tmp_path, "bot")
    agent = (tmp_path / "bot" / "fastagent").resolve()
    async with ServerProcess.spawn("dev", "bot", "--port", "0", "--no-watch", cwd=tmp_path) as server:
        port = await server.port()
        assert f"agent:     bot ({agent})" in server.text
        status, page = await get(port, "/")
        assert status == 200
        assert "<title>bot · fastagent</title>" in page
        assert '<span class="brand" id="brand">bot</span>' in page


def test_an_agent_without_a_name_is_named_after_its_workspace(run_cli: RunCli, tmp_path: Path) -> None:
    _init(run_cli, tmp_path, "shop")
    toml = tmp_path / "shop" / "fastagent" / "fastagent.toml"
    toml.write_text(toml.read_text().replace('name = "shop"\n', ""))  # an agent made before names
    done = run_cli("info", "shop", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split() == [
        "agent:",
        "shop",
        f"({(tmp_path / 'shop' / 'fastagent').resolve()})",
    ]


def test_a_bad_name_is_a_config_error(run_cli: RunCli, tmp_path: Path) -> None:
    _init(run_cli, tmp_path, "bot")
    toml = tmp_path / "bot" / "fastagent" / "fastagent.toml"
    toml.write_text(toml.read_text().replace('name = "bot"', 'name = ""'))
    done = run_cli("info", "bot", cwd=tmp_path)
    assert done.returncode != 0
    assert "name" in done.stderr and "non-empty" in done.stderr
