"""Images on their way into a turn, whatever sent them (invoke, chat, the web chat, a channel's
photo, a steer): fitted to what the providers take, as the original does, so a phone photo never
fails a turn; and refused, before any request, for a model that takes no image input.

* At most :data:`MAX_IMAGE_SIDE` pixels on the longest side (scaled down, aspect kept) and
  :data:`MAX_IMAGE_BYTES` of data (re-encoded as JPEG at falling quality, then smaller, until it
  fits); EXIF orientation applied first.
* Kept in the formats every provider takes (PNG, JPEG, GIF, WebP); any other format Pillow reads
  (HEIC needs a plugin; BMP, TIFF) becomes PNG, or JPEG when that is smaller than the cap allows.
* An image Pillow cannot read is passed on as it is when it is labelled a supported format and
  within the cap (the provider judges it); otherwise (HEIC without a Pillow plugin, over the cap)
  it fails the turn saying so.

Pillow is imported only when an image arrives; the work runs in a thread (never on the loop).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
from typing import Any

from fastagent_cli.contract import ImageRef, Prompt
from fastagent_cli.engine.turn import TurnFailure
from fastagent_cli.models.types import ModelInfo

__all__ = ["MAX_IMAGE_BYTES", "MAX_IMAGE_SIDE", "SUPPORTED_IMAGE_TYPES", "fit_image", "fit_prompt"]

MAX_IMAGE_SIDE = 1568
MAX_IMAGE_BYTES = 5 * 1024 * 1024
SUPPORTED_IMAGE_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
_QUALITIES = (85, 70, 55, 40)


async def fit_prompt(prompt: Prompt, model: ModelInfo) -> Prompt:
    """``prompt`` with every image fitted, and its PDFs as text for a model that takes none as
    documents; TurnFailure when ``model`` takes no images."""
    if prompt.documents and not model.supports_pdf:
        from fastagent_cli.engine.documents import with_pdf_text

        prompt = await asyncio.to_thread(with_pdf_text, prompt, model)
    if not prompt.images:
        return prompt
    if not model.supports_images:
        count = len(prompt.images)
        raise TurnFailure(
            f"{model.spec} does not take image input; the prompt carries {count} image"
            f"{'s' if count > 1 else ''}: switch to a model that does (`fastagent models` lists "
            'them; "input": ["text", "image"] in models.json for your own)'
        )
    fitted = await asyncio.to_thread(lambda: tuple(fit_image(image) for image in prompt.images))
    return Prompt(prompt.text, fitted, prompt.output_schema, prompt.documents)


def fit_image(image: ImageRef) -> ImageRef:
    """``image`` within the side and size limits, in a supported format (unchanged if it is)."""
    try:
        data = base64.b64decode(image.data, validate=True)
    except (binascii.Error, ValueError):
        raise TurnFailure(f"an attached image ({image.mime_type}) is not valid base64") from None
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        opened: Any = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError, ValueError):
        supported = image.mime_type in SUPPORTED_IMAGE_TYPES.values()
        if supported and len(data) <= MAX_IMAGE_BYTES:
            return image  # not ours to judge: the provider will
        if not supported:
            raise TurnFailure(
                f"an attached image ({image.mime_type}) cannot be read to convert it to a format the "
                "models take (PNG, JPEG, GIF, WebP): convert it first"
            ) from None
        raise TurnFailure(
            f"an attached image ({image.mime_type}, {len(data) / 1e6:.1f} MB) cannot be read to fit "
            f"it within {MAX_IMAGE_BYTES // (1024 * 1024)} MB"
        ) from None
    with opened:
        mime = SUPPORTED_IMAGE_TYPES.get(opened.format or "")
        fits = max(opened.size) <= MAX_IMAGE_SIDE and len(data) <= MAX_IMAGE_BYTES
        if mime is not None and fits:
            return image if mime == image.mime_type else ImageRef(mime, image.data)
        picture = ImageOps.exif_transpose(opened)
        picture.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE), Image.Resampling.LANCZOS)
        return _encode(picture, keep_png=opened.format == "PNG" or mime is None)


def _encode(picture: Any, keep_png: bool) -> ImageRef:
    """The smallest acceptable encoding: PNG for a PNG (or an unsupported format) when it fits,
    else JPEG at falling quality, then at falling size."""
    if keep_png:
        out = io.BytesIO()
        picture.save(out, format="PNG", optimize=True)
        if out.tell() <= MAX_IMAGE_BYTES:
            return ImageRef("image/png", base64.b64encode(out.getvalue()).decode("ascii"))
    rgb = picture.convert("RGB") if picture.mode not in ("RGB", "L") else picture
    while True:
        for quality in _QUALITIES:
            out = io.BytesIO()
            rgb.save(out, format="JPEG", quality=quality, optimize=True)
            if out.tell() <= MAX_IMAGE_BYTES:
                return ImageRef("image/jpeg", base64.b64encode(out.getvalue()).decode("ascii"))
        width, height = rgb.size
        rgb = rgb.resize((max(1, width * 3 // 4), max(1, height * 3 // 4)))
