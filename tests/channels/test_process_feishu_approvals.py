"""Feishu approvals through the real ``fastagent start`` against the fake Feishu: the request
arrives as a card with Approve / Deny buttons, a ``card.action.trigger`` from someone who did not
ask gets an error toast and changes nothing, the asker's press approves (the callback's answer
replaces the card with one saying who), and a press with a wrong verification token is refused."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.channels.approvals_agent import asked_then_killed, start_args, write_agent
from tests.fakes.fake_feishu import FakeFeishu
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

HTTP_CHANNEL = "from fastagent_cli.channels import feishu_channel\n\nchannel = feishu_channel()\n"
WS_CHANNEL = (
    "from fastagent_cli.channels import feishu_websocket_channel\n\nchannel = feishu_websocket_channel()\n"
)
CREDENTIALS = "FEISHU_APP_ID=cli_0123456789abcdef\nFEISHU_APP_SECRET=s3cret\n"


def write_feishu_agent(
    root: Path, channel: str = HTTP_CHANNEL, env: str = "FEISHU_VERIFICATION_TOKEN=vtoken\n"
) -> None:
    """The deploy agent with a Feishu channel (``channel``: its module) and its ``.env``."""
    write_agent(root, {"channels/feishu.py": channel, ".env": CREDENTIALS + env})


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[tuple[FakeFeishu, int]]:
    root = tmp_path / "agent"
    write_feishu_agent(root)
    async with FakeFeishu() as fake:
        env = {"FEISHU_API_BASE_URL": fake.base_url}
        async with ServerProcess.spawn(*start_args(root), env=env) as server:
            yield fake, await server.port()


async def post(port: int, fake: FakeFeishu, envelope: dict[str, Any]) -> tuple[int, Any]:
    body, headers = fake.delivery(envelope)
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.post(f"http://127.0.0.1:{port}/feishu", data=body, headers=headers) as response,
    ):
        text = await response.text()
        return response.status, json.loads(text) if text.startswith("{") else text


async def test_only_the_asker_answers_the_card(running: tuple[FakeFeishu, int]) -> None:
    fake, port = running
    assert (await post(port, fake, fake.envelope("ship it", chat_id="oc_p2p", sender="ou_alice")))[0] == 200
    buttons = await fake.wait_until(lambda: fake.buttons("oc_p2p"), what="the approval card")
    (card_id, approve), (_, deny) = buttons
    assert approve["decision"] == "approve" and deny["decision"] == "deny"
    assert approve["fa_approval"].startswith("ap_")

    status, refused = await post(port, fake, fake.card_action(card_id, approve, operator="ou_bob"))
    assert status == 200 and refused["toast"]["type"] == "error" and "card" not in refused
    forged = fake.card_action(card_id, approve)
    forged["header"]["token"] = "guessed"
    assert (await post(port, fake, forged))[0] == 401

    status, answered = await post(port, fake, fake.card_action(card_id, approve))
    assert status == 200 and answered["toast"] == {"type": "success", "content": "✅ Approved"}
    closed = json.dumps(answered["card"]["data"], ensure_ascii=False)
    assert "Approved by <at id=ou_alice></at>" in closed and '"behaviors"' not in closed
    await fake.wait_until(
        lambda: any("result: deployed prod" in t for t in fake.shown("oc_p2p")), what="the answer"
    )
    status, late = await post(port, fake, fake.card_action(card_id, approve))
    assert late["toast"]["content"] == "This request is no longer waiting for an answer."


async def test_the_card_is_answered_over_the_long_connection(tmp_path: Path) -> None:
    """In long-connection mode the press arrives as a ``type: card`` frame: it is handled as the
    HTTP callback is (only the asker answers) and its answer travels back in the response frame."""
    root = tmp_path / "agent"
    write_feishu_agent(root, WS_CHANNEL, "")
    async with FakeFeishu() as fake:
        env = {"FEISHU_API_BASE_URL": fake.base_url}
        async with ServerProcess.spawn(*start_args(root), env=env) as server:
            await server.wait_for(r"\[feishu:ws\] connected")
            await fake.push(fake.envelope("ship it", chat_id="oc_p2p", sender="ou_alice", message_id="om_a1"))
            buttons = await fake.wait_until(lambda: fake.buttons("oc_p2p"), what="the approval card")
            (card_id, approve), _ = buttons

            async def press(operator: str) -> dict[str, Any]:
                frame = await fake.push(fake.card_action(card_id, approve, operator=operator), kind="card")
                return await fake.wait_until(
                    lambda: next((a for a in fake.acks if a["message_id"] == frame), None),
                    what="the card frame's answer",
                )

            refused = await press("ou_bob")
            assert refused["code"] == 200 and refused["answer"]["toast"]["type"] == "error"
            assert "card" not in refused["answer"]
            answered = await press("ou_alice")
            assert answered["answer"]["toast"] == {"type": "success", "content": "✅ Approved"}
            closed = json.dumps(answered["answer"]["card"]["data"], ensure_ascii=False)
            assert "Approved by <at id=ou_alice></at>" in closed
            await fake.wait_until(
                lambda: any("result: deployed prod" in t for t in fake.shown("oc_p2p")), what="the answer"
            )


async def test_a_press_after_a_restart_resumes_the_turn(tmp_path: Path) -> None:
    """The request is asked, ``start`` is killed (SIGKILL) while it waits, a new ``start`` comes
    up on the same directory: the asker's press on the old card still finds its session, the turn
    goes on, and its answer reaches the chat; no new request is asked."""
    root = tmp_path / "agent"
    write_feishu_agent(root)
    async with FakeFeishu() as fake:
        env = {"FEISHU_API_BASE_URL": fake.base_url}

        async def ask(server: ServerProcess, port: int) -> list[tuple[str, dict[str, Any]]]:
            envelope = fake.envelope("ship it", chat_id="oc_p2p", sender="ou_alice")
            assert (await post(port, fake, envelope))[0] == 200
            buttons: list[tuple[str, dict[str, Any]]] = await fake.wait_until(
                lambda: fake.buttons("oc_p2p"), what="the approval card"
            )
            return buttons

        (card_id, approve), _ = await asked_then_killed(root, env, ask)
        async with ServerProcess.spawn(*start_args(root), env=env) as second:
            port = await second.port()
            status, answered = await post(port, fake, fake.card_action(card_id, approve))
            assert status == 200 and answered["toast"] == {"type": "success", "content": "✅ Approved"}
            await fake.wait_until(
                lambda: any("result: deployed prod" in t for t in fake.shown("oc_p2p")), what="the answer"
            )
            # no new request after the restart: the one card with buttons is the old one
            assert {message for message, _ in fake.buttons("oc_p2p")} == {card_id}
            assert {value["fa_approval"] for _, value in fake.buttons("oc_p2p")} == {approve["fa_approval"]}
