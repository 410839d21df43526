"""PDFs on the data plane (issue 34): ``POST /control/invoke`` and ``POST /invoke`` take
``documents`` (``[{mimeType: "application/pdf", data, name?}]``); the model gets them as document
blocks, the entries publish them by name and size, a prompt carries them across the wire, and a document the
agent does not take is a 400 naming it (a steer's is ``invalid_command`` saying which)."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from fastagent_cli.contract import DocumentRef, ImageRef, Prompt
from fastagent_cli.control import prompt_from_json, prompt_to_json
from fastagent_cli.serving.service import create_agent_service
from tests.conftest import AgentFactory
from tests.fakes.pdf import READER_MODEL, minimal_pdf
from tests.serving.conftest import StartServer
from tests.serving.test_control_invoke_images import AUTH, TOKEN, Served, answer, png

REPORT = minimal_pdf("Quarterly revenue rose 12%")
REPORT_B64 = base64.b64encode(REPORT).decode()


@pytest.fixture
async def served(
    make_agent: AgentFactory,
    monkeypatch: pytest.MonkeyPatch,
    start_server: StartServer,
    http: aiohttp.ClientSession,
) -> AsyncIterator[Served]:
    monkeypatch.setenv("FASTAGENT_CONTROL_TOKEN", TOKEN)
    agent_dir = make_agent(
        {"reader.py": READER_MODEL},
        model="scripted/reader:reply",
        config="session_control = true\ncoding_tools = false\n",
    )
    service = await create_agent_service(agent_dir)
    try:
        yield Served(await start_server(service.handler), http)
    finally:
        await service.close()


def pdf(
    name: str | None = "report.pdf", data: str = REPORT_B64, mime: str = "application/pdf"
) -> dict[str, Any]:
    out = {"mimeType": mime, "data": data}
    if name is not None:
        out["name"] = name
    return out


@pytest.mark.parametrize("path", ["/control/invoke", "/invoke"])
async def test_documents_reach_the_model_and_the_entries_name_them(served: Served, path: str) -> None:
    other = base64.b64encode(minimal_pdf("Costs fell")).decode()
    body = {
        "session": "c1",
        "text": "these",
        "documents": [pdf(), pdf(None, other, "Application/PDF")],
        "images": [{"mimeType": "image/png", "data": png(4, 4)}],
    }
    status, text = await served.post(path, body)
    assert status == 200
    assert answer(text) == (
        f"read report.pdf (application/pdf, {len(REPORT)} bytes): Quarterly revenue rose 12%; "
        f"document-2.pdf (application/pdf, {len(base64.b64decode(other))} bytes): Costs fell "
        "and 1 images with these"
    )
    entries = (await served.get("/control/sessions/c1/entries"))["entries"]
    user = next(e for e in entries if e["kind"] == "user")
    assert user["data"]["documents"] == [
        {"mimeType": "application/pdf", "name": "report.pdf", "bytes": len(REPORT)},
        {"mimeType": "application/pdf", "name": "document-2.pdf", "bytes": len(base64.b64decode(other))},
    ]
    assert len(user["data"]["images"]) == 1
    status, text = await served.post(path, {"session": "c1", "text": "none", "documents": []})
    assert status == 200 and answer(text) == "read no document and 0 images with none"
    user = [e for e in (await served.get("/control/sessions/c1/entries"))["entries"] if e["kind"] == "user"][
        -1
    ]
    assert "documents" not in user["data"]


async def test_a_path_in_a_name_is_cut_to_the_file_name(served: Served) -> None:
    status, text = await served.post(
        "/control/invoke", {"session": "n1", "text": "x", "documents": [pdf("C:\\Users\\me\\q3.pdf")]}
    )
    assert status == 200 and answer(text).startswith("read q3.pdf (application/pdf")


@pytest.mark.parametrize("path", ["/control/invoke", "/invoke"])
async def test_documents_the_agent_does_not_take_are_a_400_naming_them(served: Served, path: str) -> None:
    shape = 'must be an object {mimeType: "application/pdf", data: base64 string, name?: string}'
    cases: list[tuple[Any, str]] = [
        ("report.pdf", '"documents" must be an array of {mimeType, data, name?} objects'),
        ([pdf(), "x"], f'"documents[1]" {shape}'),
        ([{"mimeType": "application/pdf"}], f'"documents[0]" {shape}'),
        ([pdf(name=7)], f'"documents[0]" {shape}'),  # type: ignore[arg-type]
        (
            [pdf(mime="text/plain")],
            "\"documents[0].mimeType\" 'text/plain' is not a document type this agent takes",
        ),
        ([pdf(data="not base64!")], '"documents[0].data" is not valid base64'),
        (
            [pdf(data="data:application/pdf;base64," + REPORT_B64)],
            '"documents[0].data" must be the base64 alone, without the data: URL prefix',
        ),
        ([pdf(data="")], '"documents[0].data" is empty'),
        ([pdf(), pdf(data=base64.b64encode(b"PK\x03\x04zip").decode())], '"documents[1].data" is not a PDF'),
        ([pdf("a\nb.pdf")], '"documents[0].name" must be a file name of at most 255 characters'),
        ([pdf()] * 11, '"documents" holds 11 documents: at most 10 go with one prompt'),
    ]
    for documents, message in cases:
        status, text = await served.post(path, {"session": "bad", "text": "x", "documents": documents})
        assert status == 400 and text.startswith(message) and text.endswith("\n") and text.count("\n") == 1, (
            text
        )
    assert (await served.get("/control/sessions/bad/entries"))["entries"] == []  # nothing ran


async def test_a_body_over_the_cap_is_a_413_saying_documents_count(served: Served) -> None:
    big = base64.b64encode(b"%PDF-1.4\n" + b"0" * (800 * 1024) + b"\n%%EOF\n").decode()
    raw = json.dumps({"session": "big", "text": "x", "documents": [pdf(data=big)]}).encode()
    headers = {**AUTH, "Content-Type": "application/json"}
    async with served.http.post(
        f"{served.base}/control/invoke", headers=headers, data=io.BytesIO(raw)
    ) as resp:
        assert resp.status == 413
        assert (
            await resp.text() == "body too large (limit 1 MiB — images and documents count base64-inflated)\n"
        )


async def test_a_steer_carries_documents_and_a_bad_one_is_invalid_command(served: Served) -> None:
    status, text = await served.post(
        "/control/sessions/s1/actions",
        {"type": "steer", "prompt": {"text": "x", "documents": [pdf(data="%%")]}},
    )
    assert status == 200
    assert json.loads(text) == {
        "ok": False,
        "error": {
            "code": "invalid_command",
            "message": 'malformed command: "prompt.documents[0].data" is not valid base64',
            "retryable": False,
        },
    }
    status, text = await served.post(
        "/control/sessions/s1/actions", {"type": "follow_up", "prompt": {"text": "x", "documents": {}}}
    )
    assert json.loads(text)["error"]["message"] == (
        'malformed command: "prompt.documents" must be an array of {mimeType, data, name?} objects'
    )


def test_a_prompt_round_trips_its_documents() -> None:
    prompt = Prompt(
        "see",
        (ImageRef("image/png", png(2, 2)),),
        documents=(DocumentRef("application/pdf", REPORT_B64, "r.pdf"),),
    )
    wire = prompt_to_json(prompt)
    assert wire["documents"] == [{"mimeType": "application/pdf", "data": REPORT_B64, "name": "r.pdf"}]
    assert prompt_from_json(wire) == prompt
    assert "documents" not in prompt_to_json(Prompt("plain"))
