"""The agent and its session store: history, overrides, activation deltas, credentials, images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, Failed, ImageRef, Prompt, Scope, Text, collect
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
from fastagent_cli.sessions.record import TOOL_ACTIVATION_TYPE
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.tools.base import ToolContext
from fastagent_cli.tools.define import tool
from tests.conformance.suite import drain


def recorder(requests: list[ScriptedRequest], reply: Any = "ok") -> ScriptedModel:
    def respond(request: ScriptedRequest) -> Any:
        requests.append(request)
        return reply(request) if callable(reply) else reply

    return ScriptedModel.from_callable(respond)


async def test_history_carries_across_turns_and_instances(tmp_path: Path) -> None:
    requests: list[ScriptedRequest] = []
    store_dir = tmp_path / "sessions"
    for text in ("first", "second"):
        agent = create_agent(model=recorder(requests), sessions=FileSessionStore(store_dir, tmp_path))
        await collect(agent.invoke("chat-1", text))
    users = [m["content"][0]["text"] for m in requests[1].messages if m["role"] == "user"]
    assert users == ["first", "second"]
    assert [m["role"] for m in requests[1].messages] == ["user", "assistant", "user"]


async def test_session_overrides_apply_to_later_turns(tmp_path: Path) -> None:
    requests: list[ScriptedRequest] = []
    store = FileSessionStore(tmp_path / "s", tmp_path)
    agent = create_agent(model=recorder(requests), sessions=store, thinking_level="low")
    await collect(agent.invoke("x", "one"))
    record = await store.open_or_create("x")
    record.append("thinking_level_change", thinkingLevel="high")
    await collect(agent.invoke("x", "two"))
    assert [r.thinking for r in requests] == ["low", "high"]
    record = await store.open_or_create("x")
    record.append("model_change", provider="scripted", modelId="echo")
    events = await drain(agent.invoke("x", "three"))
    assert "".join(e.delta for e in events if isinstance(e, Text)) == "echo: three"
    assert isinstance(events[-1], Completed) and events[-1].data["model"] == "scripted/echo"


async def test_thinking_is_clamped_to_the_model(tmp_path: Path) -> None:
    agent = create_agent(model="openai/gpt-4.1-mini", auth_path=tmp_path / "none.json")
    model = agent.config.models.resolve("openai/gpt-4.1-mini")
    from fastagent_cli.models.thinking import clamp_thinking

    assert clamp_thinking("high", model) == "off"
    reasoning = agent.config.models.resolve("anthropic/claude-sonnet-4-5")
    assert clamp_thinking("xhigh", reasoning) == "high"
    assert clamp_thinking("minimal", reasoning) == "minimal"
    # max (the original's top level) falls back to the model's highest: nothing is above it
    assert clamp_thinking("max", reasoning) == "high"
    assert clamp_thinking("max", agent.config.models.resolve("openai-codex/gpt-5.2")) == "xhigh"
    assert clamp_thinking("max", agent.config.models.resolve("scripted/echo")) == "max"


async def test_missing_api_key_is_a_clear_failure(tmp_path: Path) -> None:
    agent = create_agent(model="openai/gpt-4.1-mini", auth_path=tmp_path / "auth.json")
    events = await drain(agent.invoke("k", "hi"))
    assert len(events) == 1 and isinstance(events[0], Failed)
    assert events[0].details == (
        "no API key for provider openai: set OPENAI_API_KEY, or run `fastagent login openai`"
    )
    assert events[0].retryable is False


async def test_deferred_tool_activation_is_recorded_and_restored(tmp_path: Path) -> None:
    requests: list[ScriptedRequest] = []

    @tool(deferred=True)
    def secret_lookup(key: str) -> str:
        """Look up a secret value."""
        return f"value-of-{key}"

    @tool(sequential=True)
    def unlock(ctx: ToolContext) -> str:
        """Activate deferred tools."""
        assert ctx.tools is not None
        added = ctx.tools.activate(["secret_lookup", "no_such_tool"])
        return f"added {added}"

    def reply(request: ScriptedRequest) -> Any:
        if request.last_user_text == "unlock" and request.round == 0:
            return {"toolCalls": [{"name": "unlock"}]}
        return "fine"

    def make() -> EngineAgent:
        return create_agent(
            model=recorder(requests, reply),
            tools=[secret_lookup, unlock],
            sessions=FileSessionStore(tmp_path / "s", tmp_path),
        )

    await collect(make().invoke("d", "unlock"))
    names = [[t.name for t in r.tools] for r in requests]
    assert names == [["unlock", "search_tools"], ["unlock", "search_tools", "secret_lookup"]]
    record = await FileSessionStore(tmp_path / "s", tmp_path).open_or_create("d")
    deltas = [e for e in record.entries if e.get("customType") == TOOL_ACTIVATION_TYPE]
    assert [d["data"] for d in deltas] == [{"names": ["secret_lookup"]}]
    result = next(e["message"] for e in record.entries if e.get("message", {}).get("role") == "toolResult")
    assert result["addedToolNames"] == ["secret_lookup"]
    requests.clear()
    await collect(make().invoke("d", "later"))  # a fresh instance: read back from the file
    assert [t.name for t in requests[0].tools] == ["unlock", "search_tools", "secret_lookup"]
    requests.clear()
    await collect(make().invoke("other-session", "hello"))
    assert [t.name for t in requests[0].tools] == ["unlock", "search_tools"]


async def test_images_reach_the_model_as_content_blocks() -> None:
    requests: list[ScriptedRequest] = []
    agent = create_agent(model=recorder(requests))
    prompt = Prompt("what is this?", (ImageRef("image/png", "iVBORw0KGgo="),))
    await collect(agent.invoke(Scope("img"), prompt))
    content = requests[0].messages[-1]["content"]
    assert content[1] == {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


async def test_tool_context_sees_the_callers_session_id(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Report the session."""
        assert ctx.session is not None
        seen["id"] = ctx.session.get_session_id()
        seen["header"] = ctx.session.get_header()
        seen["branch"] = ctx.session.get_branch()
        seen["cwd"] = ctx.cwd
        return "ok"

    model = ScriptedModel.from_script({"steps": [{"toolCalls": [{"name": "whoami"}]}, "done"]})
    agent = create_agent(
        model=model, tools=[whoami], sessions=FileSessionStore(tmp_path / "s", tmp_path), cwd=tmp_path
    )
    await collect(agent.invoke("tg:-100/1", "who?"))
    assert seen["id"] == "tg:-100/1"
    assert seen["header"]["type"] == "session" and seen["header"]["cwd"] == str(tmp_path)
    assert seen["branch"][0]["message"]["role"] == "user"
    assert seen["cwd"] == str(tmp_path)


async def test_a_thread_inherits_its_parent(tmp_path: Path) -> None:
    requests: list[ScriptedRequest] = []
    store = FileSessionStore(tmp_path / "s", tmp_path)
    agent = create_agent(model=recorder(requests), sessions=store)
    await collect(agent.invoke("room", "the room talks about cats"))
    await collect(agent.invoke(Scope("room:thread", parent_session="room"), "and the thread?"))
    users = [m["content"][0]["text"] for m in requests[1].messages if m["role"] == "user"]
    assert users == ["the room talks about cats", "and the thread?"]
    await collect(agent.invoke(Scope("room:thread", parent_session="elsewhere"), "again"))
    assert len([m for m in requests[2].messages if m["role"] == "user"]) == 3


async def test_a_thread_branches_where_its_hint_message_id_was_said(tmp_path: Path) -> None:
    requests: list[ScriptedRequest] = []
    store = FileSessionStore(tmp_path / "s", tmp_path)
    agent = create_agent(model=recorder(requests), sessions=store)
    await collect(agent.invoke("room", "[feishu: msg om_1]\nfirst topic"))
    await collect(agent.invoke("room", "[feishu: msg om_2]\nsecond topic"))
    thread = Scope("room:t", parent_session="room", branch_hints=("om_unknown", "om_1"))
    await collect(agent.invoke(thread, "about the first"))
    users = [m["content"][0]["text"] for m in requests[-1].messages if m["role"] == "user"]
    assert users == ["[feishu: msg om_1]\nfirst topic", "about the first"]
