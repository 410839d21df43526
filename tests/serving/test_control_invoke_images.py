"""Images on the data plane (issue 34): ``POST /control/invoke`` and ``POST /invoke`` take the
contract's ``images`` (``[{mimeType, data}]``); the model gets them fitted (a wide PNG arrives at
1568 px), the entries publish them, and an image the agent does not take is a 400 naming it
(a steer's is ``invalid_command`` saying which)."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from PIL import Image

from fastagent_cli.contract import Completed, Text
from fastagent_cli.serving.service import create_agent_service
from tests.conftest import AgentFactory
from tests.serving.conftest import StartServer, sse_events

TOKEN = "images-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOOKER_MODEL = """
# The model says what it received: each image block's type and size, read back with Pillow.
import base64, io
from PIL import Image


def reply(request):
    last = [m for m in request.messages if m["role"] == "user"][-1]
    seen = []
    for block in last["content"]:
        if block["type"] == "image":
            with Image.open(io.BytesIO(base64.b64decode(block["data"]))) as opened:
                seen.append(f"{block['mimeType']} {opened.size[0]}x{opened.size[1]}")
    return "saw " + (", ".join(seen) or "no image") + " with " + request.last_user_text
"""


def png(width: int, height: int, color: str = "red") -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


@dataclass
class Served:
    base: str
    http: aiohttp.ClientSession

    async def post(self, path: str, body: Any) -> tuple[int, str]:
        async with self.http.post(f"{self.base}{path}", headers=AUTH, json=body) as resp:
            return resp.status, await resp.text()

    async def get(self, path: str) -> Any:
        async with self.http.get(f"{self.base}{path}", headers=AUTH) as resp:
            assert resp.status == 200
            return await resp.json()


@pytest.fixture
async def served(
    make_agent: AgentFactory,
    monkeypatch: pytest.MonkeyPatch,
    start_server: StartServer,
    http: aiohttp.ClientSession,
) -> AsyncIterator[Served]:
    monkeypatch.setenv("FASTAGENT_CONTROL_TOKEN", TOKEN)
    agent_dir = make_agent(
        {"looker.py": LOOKER_MODEL},
        model="scripted/looker:reply",
        config="session_control = true\ncoding_tools = false\n",
    )
    service = await create_agent_service(agent_dir)
    try:
        yield Served(await start_server(service.handler), http)
    finally:
        await service.close()


def answer(body: str) -> str:
    events = sse_events(body)
    assert isinstance(events[-1], Completed), events
    return "".join(e.delta for e in events if isinstance(e, Text))


async def test_control_invoke_images_reach_the_model_fitted(served: Served) -> None:
    wide, small = png(3000, 1500), png(40, 30, "blue")
    images = [{"mimeType": "image/png", "data": wide}, {"mimeType": "image/jpg", "data": small}]
    status, body = await served.post("/control/invoke", {"session": "c1", "text": "these", "images": images})
    assert status == 200
    # the wide one fitted to 1568 px; the mislabelled small one relabelled from what it is
    assert answer(body) == "saw image/png 1568x784, image/png 40x30 with these"
    entries = (await served.get("/control/sessions/c1/entries"))["entries"]
    user = next(e for e in entries if e["kind"] == "user")
    assert user["data"]["text"] == "these"
    assert [i["mimeType"] for i in user["data"]["images"]] == ["image/png", "image/png"]
    with Image.open(io.BytesIO(base64.b64decode(user["data"]["images"][0]["data"]))) as kept:
        assert kept.size == (1568, 784)  # the record keeps what the model saw
    status, body = await served.post("/control/invoke", {"session": "c1", "text": "none", "images": []})
    assert status == 200 and answer(body) == "saw no image with none"


async def test_a_detached_invoke_and_plain_invoke_take_images_too(served: Served) -> None:
    body = {
        "session": "d1",
        "text": "later",
        "images": [{"mimeType": "image/png", "data": png(8, 8)}],
        "detach": True,
    }
    status, text = await served.post("/control/invoke", body)
    assert status == 200 and json.loads(text)["ok"] is True
    status, text = await served.post(
        "/invoke",
        {"session": "p1", "text": "plain", "images": [{"mimeType": "image/png", "data": png(9, 7)}]},
    )
    assert status == 200 and answer(text) == "saw image/png 9x7 with plain"


@pytest.mark.parametrize("path", ["/control/invoke", "/invoke"])
async def test_images_the_agent_does_not_take_are_a_400_naming_them(served: Served, path: str) -> None:
    good = {"mimeType": "image/png", "data": png(2, 2)}
    cases: list[tuple[Any, str]] = [
        ("a photo", '"images" must be an array of {mimeType, data} objects'),
        ([good, "x"], '"images[1]" must be an object {mimeType: string, data: base64 string}'),
        (
            [{"mimeType": "image/png"}],
            '"images[0]" must be an object {mimeType: string, data: base64 string}',
        ),
        (
            [{"mimeType": "text/plain", "data": "aGk="}],
            "\"images[0].mimeType\" 'text/plain' is not an image type this agent takes (image/png,",
        ),
        ([{"mimeType": "image/png", "data": "not base64!"}], '"images[0].data" is not valid base64'),
        (
            [{"mimeType": "image/png", "data": "data:image/png;base64," + good["data"]}],
            '"images[0].data" must be the base64 alone, without the data: URL prefix',
        ),
        ([{"mimeType": "image/png", "data": ""}], '"images[0].data" is empty'),
        ([good] * 21, '"images" holds 21 images: at most 20 go with one prompt'),
    ]
    for images, message in cases:
        status, text = await served.post(path, {"session": "bad", "text": "x", "images": images})
        assert status == 400 and text.startswith(message) and text.endswith("\n") and text.count("\n") == 1, (
            text
        )
    assert (await served.get("/control/sessions/bad/entries"))["entries"] == []  # nothing ran


async def test_a_steer_with_a_bad_image_is_invalid_command_saying_which(served: Served) -> None:
    status, text = await served.post(
        "/control/sessions/s1/actions",
        {"type": "steer", "prompt": {"text": "x", "images": [{"mimeType": "image/png", "data": "%%"}]}},
    )
    assert status == 200
    assert json.loads(text) == {
        "ok": False,
        "error": {
            "code": "invalid_command",
            "message": 'malformed command: "prompt.images[0].data" is not valid base64',
            "retryable": False,
        },
    }
    status, text = await served.post("/control/sessions/s1/actions", {"type": "steer", "prompt": {"text": 1}})
    assert json.loads(text)["error"]["message"] == "malformed command"
