"""Assembly: L1 verbatim instructions, the directory agent's live prompt, what OpenedAgent exposes,
and MCP tools joining the mounted set."""

from __future__ import annotations

import asyncio
import json
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent, open_agent_dir
from fastagent_cli.contract import Completed, Failed, collect
from fastagent_cli.errors import ConfigError, ModelError
from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
from fastagent_cli.tools.base import Tool, ToolContext, ToolResult, text_result
from fastagent_cli.tools.define import define_tool
from fastagent_cli.tools.mcp_config import McpServerConfig
from tests.conftest import AgentFactory, RunCli
from tests.definition.fixture_agent import PERSONA, build_fixture_agent, recorded


async def test_l1_instructions_are_the_prompt_verbatim(tmp_path: Path) -> None:
    seen: list[ScriptedRequest] = []

    def respond(request: ScriptedRequest) -> str:
        seen.append(request)
        return "fine"

    def hidden() -> str:
        """A deferred tool."""
        return "h"

    instructions = "  Exactly this.\n\nNothing added.  "
    agent = create_agent(
        model=ScriptedModel.from_callable(respond),
        instructions=instructions,
        tools=[define_tool(hidden, deferred=True)],
        cwd=tmp_path,
    )
    assert (await collect(agent.invoke("s", "hi"))).text == "fine"
    assert seen[0].system == instructions  # no base, no discovery note, no cwd line
    # the deferred tool stays out of the request; the loader that can activate it is mounted
    assert [t.name for t in seen[0].tools] == ["search_tools"]


async def test_persona_edit_between_turns_changes_the_next_prompt(tmp_path: Path) -> None:
    workspace, agent_dir = build_fixture_agent(tmp_path.resolve())
    opened = open_agent_dir(workspace)
    try:
        assert (await collect(opened.agent.invoke("s", "one"))).text == "ok: one"
        (agent_dir / "persona.md").write_text("You are Kestrel now.\n")
        assert (await collect(opened.agent.invoke("s", "two"))).text == "ok: two"
    finally:
        await opened.aclose()
    systems = [r["system"] for r in recorded(agent_dir)]
    assert systems[0].startswith(PERSONA + "\n\nAvailable tools:")
    assert systems[1].startswith("You are Kestrel now.\n\nAvailable tools:")
    assert systems[0].split("\n\n", 1)[1] == systems[1].split("\n\n", 1)[1]  # only segment 1 moved


async def test_a_broken_definition_fails_only_that_turn(tmp_path: Path) -> None:
    workspace, agent_dir = build_fixture_agent(tmp_path.resolve())
    opened = open_agent_dir(workspace)
    try:
        (agent_dir / "persona.md").write_bytes(b"\xff broken")
        events = [e async for e in opened.agent.invoke("s", "one")]
        assert isinstance(events[-1], Failed) and "persona.md: not UTF-8" in events[-1].details
        (agent_dir / "persona.md").write_text("Fixed.")
        events = [e async for e in opened.agent.invoke("s", "two")]
        assert isinstance(events[-1], Completed)
    finally:
        await opened.aclose()


def test_opened_agent_exposes_the_loaded_definition(tmp_path: Path) -> None:
    workspace, agent_dir = build_fixture_agent(tmp_path.resolve())
    (agent_dir / "skills" / "broken").mkdir()
    (agent_dir / "skills" / "broken" / "SKILL.md").write_text("---\nname: broken\n---\n")
    (agent_dir / "tools" / "read.py").write_text(
        "from fastagent_cli import tool\n\n@tool\ndef read() -> str:\n    'Mine.'\n    return 'x'\n"
    )
    (agent_dir / "tools" / "bad.py").write_text("1/0\n")
    opened = open_agent_dir(workspace)
    definition = opened.definition()
    root = tmp_path.resolve()
    assert [str(f.path) for f in definition.context_files] == [
        f"{root}/repo/AGENTS.md",
        f"{root}/repo/ws/AGENTS.md",
    ]
    assert definition.persona == PERSONA
    assert [s.name for s in opened.skills()] == ["alpha", "beta", "gamma"]
    assert [d.message for d in definition.diagnostics] == ["description is required"]
    assert opened.tool_names == ["read", "weather", "search_tools"]
    assert opened.deferred_tools == ["weather"]
    assert [c.name for c in opened.tool_collisions] == ["read"]
    assert [f.source for f in opened.tool_failures] == ["tools/bad.py"]
    lines = opened.startup_lines()
    assert lines[:2] == [f"agent:     ws ({root}/repo/ws/fastagent)", f"workspace: {root}/repo/ws"]
    assert "deferred:  weather (activated via search_tools)" in lines
    assert "warn: tools/bad.py: ZeroDivisionError: division by zero (skipped)" in lines
    assert any(
        line.endswith("skills/broken/SKILL.md: description is required") for line in opened.diagnostics()
    )


def test_open_refuses_what_would_fail_later(tmp_path: Path) -> None:
    workspace, agent_dir = build_fixture_agent(tmp_path.resolve(), model="scripted/echo")
    (agent_dir / "fastagent.toml").write_text('coding_tools = ["read"]\n')
    with pytest.raises(ModelError, match="missing model"):
        open_agent_dir(workspace)
    (agent_dir / "fastagent.toml").write_text('model = "scripted/echo"\ntools = ["gone_module:x"]\n')
    with pytest.raises(ConfigError, match='fastagent.toml tools: "gone_module:x": cannot import gone_module'):
        open_agent_dir(workspace)


class FakeMcpSource:
    instances: list[FakeMcpSource] = []
    fail = False

    def __init__(self, servers: Mapping[str, Any], cwd: Any, *, tokens: Any = None) -> None:
        self.servers = servers
        self.tokens = tokens  # the agent's auth.json, for servers behind OAuth
        self.closed = False
        self.calls = 0
        FakeMcpSource.instances.append(self)

    async def tools(self) -> list[Tool]:
        self.calls += 1
        if FakeMcpSource.fail:
            raise RuntimeError("server files exited with status 1")

        async def listing(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
            return text_result("a.txt b.txt")

        return [
            Tool("files__list", "List files.", {"type": "object"}, listing, source="mcp files"),
            Tool("read", "An MCP tool that clashes.", {"type": "object"}, listing, source="mcp files"),
        ]

    def diagnostics(self) -> list[str]:
        return []

    async def aclose(self) -> None:
        self.closed = True


@pytest.fixture
def fake_mcp(monkeypatch: pytest.MonkeyPatch) -> type[FakeMcpSource]:
    module = types.ModuleType("fastagent_cli.tools.mcp")
    module.McpToolSource = FakeMcpSource  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fastagent_cli.tools.mcp", module)
    FakeMcpSource.instances = []
    FakeMcpSource.fail = False
    return FakeMcpSource


async def test_mcp_tools_join_before_the_turn(tmp_path: Path, fake_mcp: type[FakeMcpSource]) -> None:
    workspace, agent_dir = build_fixture_agent(tmp_path.resolve())
    with (agent_dir / "fastagent.toml").open("a") as fh:
        fh.write('[mcp_servers.files]\ncommand = "fake"\n')
    opened = open_agent_dir(workspace)
    assert fake_mcp.instances == []  # nothing starts before the first turn
    try:
        await collect(opened.agent.invoke("s", "one"))
        await collect(opened.agent.invoke("s", "two"))
    finally:
        await opened.aclose()
    request = recorded(agent_dir)[0]
    assert request["tools"] == ["read", "search_tools", "files__list"]
    assert "- files__list: List files." in str(request["system"])
    assert [c.message for c in opened.tool_collisions] == [
        'tool "read" (mcp files) is shadowed by coding tool — not mounted'
    ]
    assert len(fake_mcp.instances) == 1 and fake_mcp.instances[0].calls == 2 and fake_mcp.instances[0].closed
    remote = McpServerConfig(url="http://127.0.0.1:9/mcp")
    assert fake_mcp.instances[0].tokens("remote", remote).path == opened.auth_path  # OAuth logins


async def test_an_mcp_failure_is_a_diagnostic_not_a_failed_turn(
    tmp_path: Path, fake_mcp: type[FakeMcpSource]
) -> None:
    workspace, agent_dir = build_fixture_agent(tmp_path.resolve())
    with (agent_dir / "fastagent.toml").open("a") as fh:
        fh.write('[mcp_servers.files]\ncommand = "fake"\n')
    fake_mcp.fail = True
    opened = open_agent_dir(workspace)
    try:
        assert (await collect(opened.agent.invoke("s", "hi"))).text == "ok: hi"
    finally:
        await opened.aclose()
    assert "MCP tools unavailable: server files exited with status 1" in opened.diagnostics()


MCP_SERVER = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "mcp_test_server.py"


@pytest.mark.slow
def test_a_configured_mcp_server_serves_the_directory_agent(tmp_path: Path, run_cli: RunCli) -> None:
    """Through the real process: fastagent.toml [mcp_servers] -> tools in info, called in a turn."""
    agent = tmp_path / "agent"
    (agent / "scripts").mkdir(parents=True)
    (agent / "fastagent.toml").write_text(
        f'model = "scripted/mcp"\ncoding_tools = false\n[mcp_servers.calc]\n'
        f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(MCP_SERVER))}]\n"
    )
    script = {"steps": [{"toolCalls": [{"name": "calc__add", "args": {"a": 2, "b": 3}}]}, {"text": "five"}]}
    (agent / "scripts" / "mcp.json").write_text(json.dumps(script))
    info = json.loads(run_cli("info", str(agent), "--json").stdout)
    assert "calc__add" in info["mcpServers"][0]["tools"] and info["mcpDiagnostics"] == []
    done = run_cli("invoke", "add them", str(agent), "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    ended = next(e for e in events if e["type"] == "tool_ended")
    assert (ended["isError"], ended["content"][0]["text"]) == (False, "5")
    assert events[-1]["type"] == "completed"


def test_served_settings_draw_no_warning_and_session_control_turns_writes_on(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(config="self_schedule = true\nsession_control = true\n")
    opened = open_agent_dir(agent)
    findings = opened.diagnostics()
    assert not any("session_control" in f or "self_schedule" in f for f in findings)
    assert not any("not served" in line for line in opened.startup_lines())
    capabilities = asyncio.run(opened.control.capabilities())
    assert capabilities.fork and capabilities.delete and "model" in capabilities.updatable
    off = open_agent_dir(make_agent(name="off"))
    capabilities = asyncio.run(off.control.capabilities())
    assert (capabilities.fork, capabilities.delete, capabilities.updatable) == (False, False, ())
    assert capabilities.steering and capabilities.follow_up


def test_wake_tools_are_mounted_only_when_serving_with_self_schedule(make_agent: AgentFactory) -> None:
    on = make_agent(config="self_schedule = true\ncoding_tools = false\n", name="on")
    assert open_agent_dir(on, wake_tools=True).tool_names == ["wake", "unwake"]
    assert open_agent_dir(on).tool_names == []  # invoke, chat, fire: not the serving path
    off = make_agent(config="coding_tools = false\n", name="off")
    assert open_agent_dir(off, wake_tools=True).tool_names == []


def test_an_agent_tool_named_wake_or_unwake_replaces_both_builtins(make_agent: AgentFactory) -> None:
    own = 'from fastagent_cli import tool\n\n\n@tool\ndef unwake(k: str) -> str:\n    """Mine."""\n'
    own += "    return k\n"
    agent = make_agent({"tools/unwake.py": own}, config="self_schedule = true\ncoding_tools = false\n")
    opened = open_agent_dir(agent, wake_tools=True)
    assert opened.tool_names == ["unwake"]
    assert {t.name: t.source for t in opened.tools()} == {"unwake": "tools/unwake.py"}
    assert any("replaces the built-in wake and unwake" in f for f in opened.diagnostics())
