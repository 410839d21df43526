"""PDFs through the OpenAI-compatible face (issue 34 item 2), driven by the official ``openai`` SDK
against a real ``fastagent start``: a chat completion's ``file`` part and a response's
``input_file`` part reach the model as the prompt's document (read back with pypdf by the
scripted model), a PDF earlier in the history the client sends is in the history the model sees,
and a file by ``file_id`` is a 400 naming the part."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest

from tests.conftest import AgentFactory
from tests.fakes.pdf import minimal_pdf
from tests.serving.serving_proc import ServerProcess

REPORT = minimal_pdf("Quarterly revenue rose 12%")
REPORT_URL = "data:application/pdf;base64," + base64.b64encode(REPORT).decode()

MODEL = """
import base64, io
from pypdf import PdfReader


def reply(request):
    said = []
    for message in request.messages:
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block["type"] == "document":
                data = base64.b64decode(block["data"])
                text = " / ".join(p.extract_text() for p in PdfReader(io.BytesIO(data)).pages)
                said.append(f"{block['name']} ({len(data)} bytes): {text}")
    return "; ".join(said) or "no document"
"""


@pytest.fixture
async def base_url(make_agent: AgentFactory) -> AsyncIterator[str]:
    agent: Path = make_agent(
        {"reader.py": MODEL},
        model="scripted/reader:reply",
        config='name = "helper"\n\n[http]\nopenai = true\n',
    )
    argv = ("start", str(agent), "--port", "0", "--bind", "127.0.0.1")
    async with ServerProcess.spawn(*argv) as server:
        yield f"http://127.0.0.1:{await server.port()}/v1"


@contextlib.asynccontextmanager
async def client(base: str) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=base, api_key="unused", max_retries=0) as api:
        yield api


async def test_a_chat_completion_file_part_is_the_prompts_document(base_url: str) -> None:
    read = f"q3.pdf ({len(REPORT)} bytes): Quarterly revenue rose 12%"
    async with client(base_url) as api:
        answer = await api.chat.completions.create(
            model="helper",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what does it say?"},
                        {"type": "file", "file": {"file_data": REPORT_URL, "filename": "q3.pdf"}},
                    ],
                }
            ],
        )
        assert answer.choices[0].message.content == read
        # a PDF earlier in the conversation the client re-sends is in the history the model sees
        stream = await api.chat.completions.create(
            model="helper",
            stream=True,
            messages=[
                {"role": "user", "content": [{"type": "file", "file": {"file_data": REPORT_URL}}]},
                {"role": "assistant", "content": "noted"},
                {"role": "user", "content": "and now?"},
            ],
        )
        text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
        assert text == f"document-1.pdf ({len(REPORT)} bytes): Quarterly revenue rose 12%"


async def test_a_response_input_file_part_is_the_prompts_document(base_url: str) -> None:
    async with client(base_url) as api:
        response = await api.responses.create(
            model="helper",
            input=[
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "summarise"},
                        {"type": "input_file", "file_data": REPORT_URL, "filename": "report.pdf"},
                    ],
                }
            ],
        )
        assert response.output_text == f"report.pdf ({len(REPORT)} bytes): Quarterly revenue rose 12%"


async def test_a_file_by_id_is_a_400_naming_the_part(base_url: str) -> None:
    async with client(base_url) as api:
        with pytest.raises(openai.BadRequestError) as refused:
            await api.chat.completions.create(
                model="helper",
                messages=[{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-abc"}}]}],
            )
        assert refused.value.code == "unsupported_file"
        assert refused.value.param == "messages[0].content[0]"
        assert "send the file itself as file_data" in refused.value.message
        with pytest.raises(openai.BadRequestError, match="is not a PDF"):
            await api.responses.create(
                model="helper",
                input=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_file", "file_data": "data:application/pdf;base64,aGVsbG8="}
                        ],
                    }
                ],
            )
