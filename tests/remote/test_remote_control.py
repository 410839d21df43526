"""``connect_session_control`` against the real plane of a served agent directory: every call
answers what the local hub answers (the same values, the same codes), and what only a network adds
(a refused or failed request, a stream the server ends) surfaces as documented."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fastagent_cli.contract import Completed, Failed, Prompt, Scope, collect
from fastagent_cli.control import (
    Capabilities,
    SessionControl,
    SessionEvent,
    SessionEventsClosed,
    SessionsUnavailable,
    SessionUpdate,
)
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.errors import ControlRequestError
from fastagent_cli.remote import (
    REQUEST_FAILED,
    RemoteAgent,
    RemoteSessionControl,
    RemoteSessionsUnavailable,
    connect_agent,
    connect_session_control,
)
from fastagent_cli.serving.host import Server, serve
from fastagent_cli.serving.service import AgentService, create_agent_service
from tests.conftest import AgentFactory

TOKEN = "remote-hub-token"
SCRIPT = {
    "rules": [
        {"match": "slow", "steps": [{"toolCalls": [{"name": "nap", "args": {}}]}, {"text": "rested"}]},
        {"steps": [{"text": "hello back"}]},
    ]
}
NAP_TOOL = '''\
import asyncio

from fastagent_cli import define_tool


@define_tool
async def nap() -> str:
    """Sleep a while."""
    await asyncio.sleep(30)
    return "slept"
'''
SKILL = "---\nname: triage\ndescription: Sort an inbox\n---\nDo it.\n"


@dataclass
class Hub:
    url: str
    service: AgentService
    server: Server
    remote: RemoteSessionControl
    agent: RemoteAgent

    @property
    def local(self) -> SessionControl:
        return self.service.opened.control


@pytest.fixture
async def hub(make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Hub]:
    monkeypatch.setenv("FASTAGENT_CONTROL_TOKEN", TOKEN)
    agent_dir = make_agent(
        {"scripts/hub.json": json.dumps(SCRIPT), "tools/nap.py": NAP_TOOL, "skills/triage/SKILL.md": SKILL},
        model="scripted/hub",
        config="session_control = true\ncoding_tools = false\n",
    )
    service = await create_agent_service(agent_dir)
    server = serve(service.handler, port=0, host="127.0.0.1")
    url = f"http://127.0.0.1:{await server.listening}"
    remote = await connect_session_control(url, TOKEN)
    agent = connect_agent(url, TOKEN)
    try:
        yield Hub(url, service, server, remote, agent)
    finally:
        await remote.aclose()
        await agent.aclose()
        await server.close()
        await service.close()


async def wait_running(hub: Hub, session: str) -> None:
    for _ in range(500):
        if (await hub.remote.sessions.get(session).state()).status == "running":
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{session} never ran")


async def test_reads_answer_what_the_local_hub_answers(hub: Hub) -> None:
    session = "tg:-1001234567890/thread"  # ':' and '/' travel percent-encoded
    remote, local = hub.remote.sessions.get(session), hub.local.sessions.get(session)
    assert await remote.state() == await local.state()
    assert (await remote.entries()).entries == ()
    answer = await collect(hub.agent.invoke(Scope(session), Prompt("hi")))
    assert answer.text == "hello back"
    assert await hub.remote.capabilities() == await hub.local.capabilities()
    assert isinstance(await hub.remote.capabilities(), Capabilities)
    assert await hub.remote.commands() == await hub.local.commands()
    assert [c.name for c in await hub.remote.commands()] == ["triage"]
    assert await hub.remote.sessions.list() == await hub.local.sessions.list()
    assert await remote.state() == await local.state()
    entries = await remote.entries()
    assert entries == await local.entries()
    assert [(e.kind, e.data["text"]) for e in entries.entries] == [
        ("user", "hi"),
        ("assistant", "hello back"),
    ]
    first = entries.entries[0].id
    assert await remote.entries(since=first) == await local.entries(since=first)
    assert [e.kind for e in (await remote.entries(since=first)).entries] == ["assistant"]


async def test_writes_and_actions_answer_the_same_results_and_codes(hub: Hub) -> None:
    await collect(hub.agent.invoke("w", "one"))
    remote = hub.remote.sessions.get("w")
    assert (await remote.steer(Prompt("x"))).code == "no_active_run"
    assert await remote.steer(Prompt("x")) == await hub.local.sessions.get("w").steer(Prompt("x"))
    assert (await remote.abort()).code == "no_active_run"
    assert (await remote.update(SessionUpdate(model="nope/none"))).error == (
        await hub.local.sessions.get("w").update(SessionUpdate(model="nope/none"))
    ).error
    assert (await remote.update(SessionUpdate(name="Deploy notes", thinking_level="high"))).ok
    state = await remote.state()
    assert (state.name, state.thinking_level) == ("Deploy notes", "high")
    assert (await hub.remote.sessions.get("none").update(SessionUpdate(name="x"))).code == "no_such_session"
    at = (await remote.entries()).entries[1].id
    assert (await hub.remote.sessions.fork("w", at, "w-copy")).ok
    assert (await hub.remote.sessions.fork("w", at, "w-copy")).ok  # idempotent
    refused = await hub.remote.sessions.fork("w", "no-such-entry", "w-copy")
    assert refused.code == "invalid_command" and refused.error is not None and not refused.error.retryable
    engine = hub.service.opened.agent
    assert isinstance(engine, EngineAgent)
    await engine.store.open_or_create("empty")  # a session with no message yet
    assert (await hub.remote.sessions.get("empty").compact()).code == "nothing_to_compact"
    assert (await hub.remote.sessions.get("w-copy").delete()).ok
    assert (await hub.remote.sessions.get("w-copy").delete()).code == "no_such_session"


async def test_a_running_turn_is_steered_and_aborted_remotely(hub: Hub) -> None:
    remote = hub.remote.sessions.get("run")
    async with remote.events() as events:
        await events.ready()
        running = asyncio.create_task(collect_events(hub.agent, "run", "be slow"))
        await wait_running(hub, "run")
        state = await remote.state()
        steered = await remote.steer(Prompt("hurry up"))
        assert steered.ok and steered.run_id == state.active_run_id
        assert (await remote.follow_up(Prompt("then stop"))).ok
        assert (await remote.state()).pending.steering == ("hurry up",)
        assert (await remote.compact()).code == "session_busy"
        assert (await remote.abort()).run_id == state.active_run_id
        outcome = await asyncio.wait_for(running, 10)
        assert isinstance(outcome[-1], Failed) and outcome[-1].code == "aborted"
        seen: list[SessionEvent] = []
        async for event in events:
            seen.append(event)
            if event.type == "run_settled":
                break
    types = [e.type for e in seen]
    assert types[:2] == ["run_started", "user_message"] and "queue_changed" in types
    assert seen[-1].data["status"] == "aborted" and {e.run_id for e in seen} == {state.active_run_id}


async def collect_events(agent: RemoteAgent, session: str, text: str) -> list[object]:
    return [event async for event in agent.invoke(session, text)]


async def test_remote_events_match_a_local_subscription(hub: Hub) -> None:
    remote = hub.remote.sessions.get("same")
    local = hub.local.sessions.get("same")

    async def until_settled(stream: object) -> list[SessionEvent]:
        got: list[SessionEvent] = []
        async for event in stream:  # type: ignore[attr-defined]
            got.append(event)
            if event.type == "run_settled":
                return got
        return got

    async with remote.events() as far, local.events() as near:
        await far.ready()
        assert far.epoch is None  # no event yet
        await collect(hub.agent.invoke("same", "hi"))
        remote_seen = await asyncio.wait_for(until_settled(far), 10)
        local_seen = await asyncio.wait_for(until_settled(near), 10)
    assert [e.to_json() for e in remote_seen] == [e.to_json() for e in local_seen]
    assert isinstance(far.epoch, str) and len(far.epoch) == 36


async def test_delete_ends_a_remote_stream_with_an_error(hub: Hub) -> None:
    await collect(hub.agent.invoke("gone", "hi"))
    stream = hub.remote.sessions.get("gone").events()
    await stream.ready()
    assert (await hub.remote.sessions.get("gone").delete()).ok
    with pytest.raises(SessionEventsClosed) as closed:
        await asyncio.wait_for(anext(stream), 10)
    assert closed.value.reason == "ended" and "deleted" in str(closed.value)
    with pytest.raises(SessionEventsClosed):  # it stays ended
        await anext(stream)
    await stream.aclose()


async def test_the_consumers_own_detach_is_a_clean_end(hub: Hub) -> None:
    stream = hub.remote.sessions.get("quiet").events()
    async with stream:
        await stream.ready()
        waiting = asyncio.create_task(anext(stream))
        await asyncio.sleep(0.05)
        await stream.aclose()
        with pytest.raises(StopAsyncIteration):
            await waiting
    assert [e async for e in stream] == []


async def test_a_server_that_goes_away_ends_the_stream_with_an_error(hub: Hub) -> None:
    stream = hub.remote.sessions.get("s").events()
    await stream.ready()
    await hub.server.close()
    with pytest.raises(SessionEventsClosed) as closed:
        await asyncio.wait_for(anext(stream), 10)
    assert closed.value.reason in ("ended", "disconnected")
    await stream.aclose()
    # and then it is unreachable: reads raise without a status, actions answer request_failed
    with pytest.raises(ControlRequestError) as failed:
        await hub.remote.sessions.get("s").state()
    assert failed.value.status is None and failed.value.retryable and "cannot reach" in failed.value.message
    result = await hub.remote.sessions.get("s").abort()
    assert result.code == REQUEST_FAILED and result.error is not None and result.error.retryable
    events = [e async for e in hub.agent.invoke("s", "hi")]
    assert len(events) == 1 and isinstance(events[0], Failed) and events[0].retryable
    reopened = hub.remote.sessions.get("s").events()
    with pytest.raises(ControlRequestError):
        await reopened.ready()
    with pytest.raises(ControlRequestError):  # iterating reports the same failure
        await anext(reopened)
    await reopened.aclose()


async def test_a_wrong_token_or_no_plane_fails_at_connect_with_the_status(
    hub: Hub, make_agent: AgentFactory
) -> None:
    with pytest.raises(ControlRequestError) as refused:
        await connect_session_control(hub.url, "wrong")
    assert refused.value.status == 401 and not refused.value.retryable
    assert "401 unauthorized" in refused.value.message
    bad = connect_agent(hub.url, "wrong")
    events = [e async for e in bad.invoke("x", "hi")]
    await bad.aclose()
    assert isinstance(events[-1], Failed) and not events[-1].retryable and "401" in events[-1].details
    trailing = await connect_session_control(hub.url + "/control/", TOKEN)  # a trailing /control is dropped
    assert trailing.url == hub.url
    await trailing.aclose()
    plain = make_agent(name="plain")
    service = await create_agent_service(plain)
    server = serve(service.handler, port=0, host="127.0.0.1")
    try:
        url = f"http://127.0.0.1:{await server.listening}"
        with pytest.raises(ControlRequestError) as missing:
            await connect_session_control(url, TOKEN)
        assert missing.value.status == 404
    finally:
        await server.close()
        await service.close()
    with pytest.raises(ValueError):
        await connect_session_control("ftp://example.com", TOKEN)
    with pytest.raises(ValueError):
        connect_agent(hub.url, "")


async def test_an_unlistable_store_is_sessions_unavailable_both_ways(hub: Hub) -> None:
    sessions: Path = hub.service.opened.sessions_dir
    sessions.parent.mkdir(parents=True, exist_ok=True)
    if sessions.exists():
        sessions.rmdir()
    sessions.write_text("not a directory")
    with pytest.raises(SessionsUnavailable) as unavailable:
        await hub.remote.sessions.list()
    assert isinstance(unavailable.value, RemoteSessionsUnavailable)
    assert isinstance(unavailable.value, ControlRequestError)
    assert unavailable.value.status == 503 and unavailable.value.code == "sessions_unavailable"
    assert unavailable.value.retryable is True


async def test_images_travel_the_remote_data_plane(hub: Hub) -> None:
    """The wire carried text only until issue 34: now a prompt's images go in ``images``, and one the
    serve refuses fails the stream with the serve's reason, nothing run."""
    from fastagent_cli.contract import ImageRef

    png = base64.b64encode(_png(3, 2)).decode()
    last = [e async for e in hub.agent.invoke("img", Prompt("look", (ImageRef("image/png", png),)))][-1]
    assert isinstance(last, Completed)
    user = (await hub.remote.sessions.get("img").entries()).entries[0]
    assert user.kind == "user"
    assert user.data == {"text": "look", "images": [{"mimeType": "image/png", "data": png}]}
    refused = [e async for e in hub.agent.invoke("pdf", Prompt("look", (ImageRef("application/pdf", png),)))]
    assert len(refused) == 1 and isinstance(refused[0], Failed) and not refused[0].retryable
    assert "\"images[0].mimeType\" 'application/pdf' is not an image type" in refused[0].details
    assert (await hub.remote.sessions.get("pdf").entries()).entries == ()  # nothing was run


async def test_documents_travel_the_remote_data_plane_and_its_steers(hub: Hub) -> None:
    """A prompt's PDFs go in ``documents``: the run's user entry names them; a steer's prompt carries
    them over ``/actions`` (its refusal names the bad one); a refused one fails the stream."""
    from fastagent_cli.contract import DocumentRef
    from tests.fakes.pdf import minimal_pdf

    data = base64.b64encode(minimal_pdf("Quarterly revenue rose 12%")).decode()
    report = DocumentRef("application/pdf", data, "report.pdf")
    last = [e async for e in hub.agent.invoke("doc", Prompt("read", documents=(report,)))][-1]
    assert isinstance(last, Completed)
    user = (await hub.remote.sessions.get("doc").entries()).entries[0]
    assert user.data == {
        "text": "read",
        "documents": [
            {
                "mimeType": "application/pdf",
                "name": "report.pdf",
                "bytes": len(minimal_pdf("Quarterly revenue rose 12%")),
            }
        ],
    }
    bad = DocumentRef("application/pdf", base64.b64encode(b"GIF89a").decode(), "x.pdf")
    steered = await hub.remote.sessions.get("doc").steer(Prompt("and this", documents=(bad,)))
    assert not steered.ok and steered.error is not None
    assert (
        steered.error.message
        == 'malformed command: "prompt.documents[0].data" is not a PDF (it does not start with %PDF-)'
    )
    refused = [e async for e in hub.agent.invoke("nodoc", Prompt("read", documents=(bad,)))]
    assert len(refused) == 1 and isinstance(refused[0], Failed) and not refused[0].retryable
    assert '"documents[0].data" is not a PDF' in refused[0].details
    assert (await hub.remote.sessions.get("nodoc").entries()).entries == ()


def _png(width: int, height: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), "blue").save(out, format="PNG")
    return out.getvalue()
