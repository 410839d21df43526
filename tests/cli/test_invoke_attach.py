"""``fastagent invoke --attach FILE``, run as the real process: images reach the model as image
blocks (a large one fitted first), text files join the message, a model without image input is
refused by name before any request, and files that cannot be attached are usage errors."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
from pathlib import Path

from PIL import Image

from tests.conftest import AgentFactory, RunCli
from tests.fakes.fake_providers import FakeOpenAI
from tests.fakes.wire_builders import openai_reply


def agent_on(make_agent: AgentFactory, fake: FakeOpenAI, *, vision: bool = True) -> Path:
    model = {"id": "m", **({"input": ["text", "image"]} if vision else {})}
    models = {
        "providers": {
            "fake": {"baseUrl": fake.base_url, "api": "openai-completions", "apiKey": "k", "models": [model]}
        }
    }
    config = "coding_tools = false\n[engine]\nmax_retries = 0\n"
    return make_agent({"models.json": json.dumps(models)}, model="fake/m", config=config)


async def test_images_and_text_files_reach_the_model(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    photo = tmp_path / "IMG_0001.JPG"
    size = (4000, 3000)
    Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3)).save(photo, format="JPEG", quality=95)
    assert photo.stat().st_size > 5 * 1024 * 1024
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\nthe cat is orange\n")
    async with FakeOpenAI() as fake:
        agent = agent_on(make_agent, fake)
        fake.enqueue_stream(openai_reply("An orange cat."))
        done = await asyncio.to_thread(
            run_cli, "invoke", "What is this?", str(agent), "--attach", str(photo), "--attach", str(notes)
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "An orange cat.\n"
        content = fake.requests[0].body["messages"][-1]["content"]
    assert content[0]["type"] == "text"
    assert (
        content[0]["text"] == 'What is this?\n\n<file name="notes.md">\n# Notes\nthe cat is orange\n</file>'
    )
    url = content[1]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    data = base64.b64decode(url.split(",", 1)[1])
    assert len(data) <= 5 * 1024 * 1024
    assert Image.open(io.BytesIO(data)).size == (1568, 1176)


async def test_a_model_without_image_input_is_refused_by_name(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    picture = tmp_path / "dot.png"
    Image.new("RGB", (4, 4)).save(picture)
    async with FakeOpenAI() as fake:
        agent = agent_on(make_agent, fake, vision=False)
        done = await asyncio.to_thread(run_cli, "invoke", "look", str(agent), "--attach", str(picture))
        assert done.returncode == 1 and done.stdout == ""
        assert (
            "[fastagent] failed: fake/m does not take image input; the prompt carries 1 image" in done.stderr
        )
        assert not fake.requests


def test_files_that_cannot_be_attached(make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path) -> None:
    agent = make_agent()
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.7\n...")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    for name, message in [
        ("missing.png", "cannot attach {path}: No such file or directory"),
        ("doc.pdf", "cannot attach {path}: not a complete PDF file (no %%EOF at its end)"),  # PDFs: issue 34
        ("blob.bin", "cannot attach {path}: it is neither an image nor a text file"),
        ("latin.txt", "cannot attach {path}: it is not UTF-8 text"),
        ("", "cannot attach {path}: it is a directory"),
    ]:
        path = str(tmp_path / name) if name else str(tmp_path)
        done = run_cli("invoke", "hi", str(agent), "--attach", path)
        assert done.returncode == 2, (name, done.stderr)
        assert message.format(path=path) in done.stderr and "Traceback" not in done.stderr


def test_the_scripted_model_sees_the_image(make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path) -> None:
    picture = tmp_path / "dot.png"
    Image.new("RGB", (4, 4)).save(picture)
    done = run_cli("invoke", "look", str(make_agent()), "--attach", str(picture), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["type"] == "completed"
