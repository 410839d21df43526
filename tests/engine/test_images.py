"""Images on their way into a turn: a large phone-sized photo is fitted (longest side 1568 px, at
most 5 MB) before the model sees it, other formats become PNG, a small image is untouched, and a
model without image input is refused before any request, by name."""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path
from typing import Any

from PIL import Image

from fastagent_cli import ScriptedModel, ScriptedRequest, create_agent
from fastagent_cli.contract import Completed, Failed, ImageRef, Prompt, Scope
from fastagent_cli.engine.images import MAX_IMAGE_BYTES, MAX_IMAGE_SIDE, fit_image
from fastagent_cli.models.registry import ModelRegistry
from tests.conformance.suite import drain
from tests.fakes.fake_providers import FakeOpenAI


def encoded(picture: Image.Image, fmt: str, **options: Any) -> bytes:
    out = io.BytesIO()
    picture.save(out, format=fmt, **options)
    return out.getvalue()


def phone_photo() -> bytes:
    """A 4032x3024 photo of noise (nothing compresses it): well over 5 MB as a JPEG."""
    size = (4032, 3024)
    return encoded(Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3)), "JPEG", quality=95)


def decoded(image: ImageRef) -> tuple[bytes, Image.Image]:
    data = base64.b64decode(image.data)
    return data, Image.open(io.BytesIO(data))


async def test_a_large_photo_reaches_the_model_fitted() -> None:
    raw = phone_photo()
    assert len(raw) > MAX_IMAGE_BYTES
    seen: list[dict[str, Any]] = []

    def respond(request: ScriptedRequest) -> str:
        seen.extend(b for b in request.messages[-1]["content"] if b["type"] == "image")  # type: ignore[typeddict-item]
        return "a photo"

    agent = create_agent(model=ScriptedModel.from_callable(respond))
    try:
        prompt = Prompt("what is this?", (ImageRef("image/jpeg", base64.b64encode(raw).decode()),))
        events = await drain(agent.invoke(Scope("p"), prompt))
    finally:
        await agent.aclose()
    assert isinstance(events[-1], Completed)
    data, picture = decoded(ImageRef(seen[0]["mimeType"], seen[0]["data"]))
    assert seen[0]["mimeType"] == "image/jpeg" and picture.format == "JPEG"
    assert max(picture.size) <= MAX_IMAGE_SIDE and picture.size[0] > picture.size[1]  # aspect kept
    assert len(data) <= MAX_IMAGE_BYTES


def test_formats_sizes_and_what_is_left_alone() -> None:
    small = encoded(Image.new("RGB", (64, 32), "red"), "PNG")
    image = ImageRef("image/png", base64.b64encode(small).decode())
    assert fit_image(image) is image  # within the limits: untouched
    relabelled = fit_image(ImageRef("image/jpeg", image.data))  # a wrong MIME type is corrected
    assert relabelled.mime_type == "image/png" and relabelled.data == image.data
    bmp = fit_image(
        ImageRef("image/bmp", base64.b64encode(encoded(Image.new("RGB", (40, 40)), "BMP")).decode())
    )
    assert bmp.mime_type == "image/png" and decoded(bmp)[1].size == (40, 40)
    wide = encoded(Image.new("RGBA", (3000, 1000), (0, 0, 255, 128)), "PNG")
    fitted = fit_image(ImageRef("image/png", base64.b64encode(wide).decode()))
    assert fitted.mime_type == "image/png" and decoded(fitted)[1].size == (1568, 523)
    unknown = ImageRef("image/png", base64.b64encode(b"not an image").decode())
    assert fit_image(unknown) is unknown  # small and unreadable: the provider judges it


async def test_a_model_without_image_input_is_refused_before_the_request(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        models = tmp_path / "models.json"
        provider = {
            "baseUrl": fake.base_url,
            "api": "openai-completions",
            "apiKey": "k",
            "models": [{"id": "m"}],
        }
        models.write_text(json.dumps({"providers": {"fake": provider}}))
        agent = create_agent(model="fake/m", registry=ModelRegistry(models))
        try:
            small = base64.b64encode(encoded(Image.new("RGB", (8, 8)), "PNG")).decode()
            events = await drain(agent.invoke(Scope("v"), Prompt("look", (ImageRef("image/png", small),))))
            record = await agent.store.open_if_exists("v")
            assert record is None or record.context().messages == []  # the prompt was not stored
        finally:
            await agent.aclose()
        failed = events[-1]
        assert isinstance(failed, Failed) and not failed.retryable
        assert failed.details.startswith("fake/m does not take image input; the prompt carries 1 image")
        assert not fake.requests
