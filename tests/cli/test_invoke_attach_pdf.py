"""``fastagent invoke --attach report.pdf`` against the fake providers (issue 34): the PDF goes as
a document where the provider takes one (Anthropic Messages ``document``, OpenAI chat
completions ``file``, the Responses API's ``input_file``), as its text (pypdf) for a model that
takes none, and a PDF with no text to a model without PDF input is refused naming the model,
before any request."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AgentFactory, RunCli
from tests.fakes.fake_providers import FakeAnthropic, FakeOpenAI, FakeProvider, FakeResponses
from tests.fakes.pdf import minimal_pdf
from tests.fakes.responses_builders import responses_reply
from tests.fakes.wire_builders import anthropic_reply, openai_reply


def agent_on(make_agent: AgentFactory, fake: FakeProvider, api: str, **model: Any) -> Path:
    models = {
        "providers": {
            "fake": {"baseUrl": fake.base_url, "api": api, "apiKey": "k", "models": [{"id": "m", **model}]}
        }
    }
    config = "coding_tools = false\n[engine]\nmax_retries = 0\n"
    return make_agent({"models.json": json.dumps(models)}, model="fake/m", config=config)


def report(tmp_path: Path, *pages: str) -> tuple[Path, str]:
    path = tmp_path / "report.pdf"
    path.write_bytes(minimal_pdf(*pages))
    return path, base64.b64encode(path.read_bytes()).decode()


async def ask(run_cli: RunCli, agent: Path, pdf: Path) -> Any:
    return await asyncio.to_thread(run_cli, "invoke", "Summarize it.", str(agent), "--attach", str(pdf))


async def test_anthropic_gets_a_document_block(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    pdf, data = report(tmp_path, "Quarterly revenue rose 12%")
    async with FakeAnthropic() as fake:
        agent = agent_on(make_agent, fake, "anthropic-messages", input=["text", "image"])
        fake.enqueue_stream(anthropic_reply("Revenue rose."))
        done = await ask(run_cli, agent, pdf)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Revenue rose.\n"
        content = fake.requests[0].body["messages"][-1]["content"]
    assert content == [
        {"type": "text", "text": "Summarize it."},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": data},
            "title": "report.pdf",
        },
    ]


def _chat_user(body: dict[str, Any]) -> Any:
    return body["messages"][-1]["content"]


def _responses_user(body: dict[str, Any]) -> Any:
    return [item for item in body["input"] if item.get("role") == "user"][-1]["content"]


@pytest.mark.parametrize(
    ("fake_type", "api", "reply", "user", "shape"),
    [
        (FakeOpenAI, "openai-completions", openai_reply, _chat_user, "chat"),
        (FakeResponses, "openai-responses", responses_reply, _responses_user, "responses"),
    ],
)
async def test_openai_gets_a_file(
    make_agent: AgentFactory,
    run_cli: RunCli,
    tmp_path: Path,
    fake_type: type[FakeProvider],
    api: str,
    reply: Callable[[str], list[dict[str, Any]]],
    user: Callable[[dict[str, Any]], Any],
    shape: str,
) -> None:
    pdf, data = report(tmp_path, "Quarterly revenue rose 12%")
    url = f"data:application/pdf;base64,{data}"
    async with fake_type() as fake:
        agent = agent_on(make_agent, fake, api, input=["text", "image"], compat={"supportsPdf": True})
        fake.enqueue_stream(reply("Revenue rose."))
        done = await ask(run_cli, agent, pdf)
        assert done.returncode == 0, done.stderr
        content = user(fake.requests[0].body)
    assert (
        content
        == {
            "chat": [
                {"type": "text", "text": "Summarize it."},
                {"type": "file", "file": {"filename": "report.pdf", "file_data": url}},
            ],
            "responses": [
                {"type": "input_text", "text": "Summarize it."},
                {"type": "input_file", "filename": "report.pdf", "file_data": url},
            ],
        }[shape]
    )


async def test_a_model_without_pdf_input_gets_the_text(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    pdf, _ = report(tmp_path, "Quarterly revenue rose 12%", "Costs fell (slightly)")
    async with FakeOpenAI() as fake:
        agent = agent_on(make_agent, fake, "openai-completions")  # a local server: text only
        fake.enqueue_stream(openai_reply("Revenue rose."))
        done = await ask(run_cli, agent, pdf)
        assert done.returncode == 0, done.stderr
        content = fake.requests[0].body["messages"][-1]["content"]
    assert content == (
        'Summarize it.\n\n<file name="report.pdf">\n'
        "Quarterly revenue rose 12%\n\nCosts fell (slightly)\n</file>"
    )


async def test_a_pdf_without_text_for_a_model_without_pdf_input_is_refused(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    pdf, _ = report(tmp_path, "")
    async with FakeOpenAI() as fake:
        agent = agent_on(make_agent, fake, "openai-completions")
        done = await ask(run_cli, agent, pdf)
        assert done.returncode == 1 and done.stdout == ""
        assert (
            "[fastagent] failed: fake/m does not take PDF input, so report.pdf goes as its text, and it has "
            "no text to extract (a scan?)" in done.stderr
        )
        assert "Traceback" not in done.stderr and not fake.requests


def test_the_scripted_model_gets_the_document(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    pdf, data = report(tmp_path, "hello")
    model = (
        "def reply(request):\n"
        "    docs = [b for b in request.messages[-1]['content'] if b['type'] == 'document']\n"
        "    return ' '.join(f\"{d['name']} {d['mimeType']} {len(d['data'])}\" for d in docs)\n"
    )
    agent = make_agent({"reader.py": model}, model="scripted/reader:reply")
    done = run_cli("invoke", "read", str(agent), "--attach", str(pdf))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"report.pdf application/pdf {len(data)}\n"
