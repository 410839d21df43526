"""Images as a prompt carries them on the wire: the contract's ``ImageRef`` JSON,
``{"mimeType": "image/png", "data": "<base64>"}``, in ``POST /invoke``, ``POST /control/invoke``
(``images``) and a steer or follow-up's ``prompt.images``.

:func:`parse_images` rebuilds them from whatever a client sent, or says in one line what is wrong
with the first one that is not an image this agent takes:

* ``mimeType``: one of :data:`IMAGE_MIME_TYPES` (the providers' four, and the formats the engine
  converts to one of them);
* ``data``: strict base64 (no ``data:`` URL prefix, no line breaks), not empty, at most
  :data:`MAX_WIRE_IMAGE_BYTES` once decoded;
* at most :data:`MAX_WIRE_IMAGES` images per prompt.

Fitting them to the providers' limits (side, size, format) is the engine's, on every path alike.
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from collections.abc import Mapping
from typing import Any

from fastagent_cli.contract import ImageRef

__all__ = ["IMAGE_MIME_TYPES", "MAX_WIRE_IMAGES", "MAX_WIRE_IMAGE_BYTES", "parse_images"]

IMAGE_MIME_TYPES = (
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/bmp",
    "image/tiff",
    "image/heic",
    "image/heif",
)
MAX_WIRE_IMAGES = 20
MAX_WIRE_IMAGE_BYTES = 20 * 1024 * 1024
"""Decoded bytes of one image (the engine then fits it within 5 MB)."""


def parse_images(raw: Any, where: str = "images") -> tuple[ImageRef, ...] | str:
    """The images of ``raw`` (``None`` is none), or the message naming what is wrong (``where``
    is the field's name in it, such as ``prompt.images``)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return f'"{where}" must be an array of {{mimeType, data}} objects'
    if len(raw) > MAX_WIRE_IMAGES:
        return f'"{where}" holds {len(raw)} images: at most {MAX_WIRE_IMAGES} go with one prompt'
    images: list[ImageRef] = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        image = _image(item, at)
        if isinstance(image, str):
            return image
        images.append(image)
    return tuple(images)


def _image(item: Any, at: str) -> ImageRef | str:
    if not isinstance(item, Mapping):
        return f'"{at}" must be an object {{mimeType: string, data: base64 string}}'
    mime, data = item.get("mimeType"), item.get("data")
    if not isinstance(mime, str) or not isinstance(data, str):
        return f'"{at}" must be an object {{mimeType: string, data: base64 string}}'
    mime = mime.strip().lower()
    if mime == "image/jpg":
        mime = "image/jpeg"
    if mime not in IMAGE_MIME_TYPES:
        return (
            f'"{at}.mimeType" {mime!r} is not an image type this agent takes ({", ".join(IMAGE_MIME_TYPES)})'
        )
    if data.startswith("data:"):
        return f'"{at}.data" must be the base64 alone, without the data: URL prefix'
    if not data:
        return f'"{at}.data" is empty'
    # base64 of more than the cap is rejected before decoding it
    if len(data) > (MAX_WIRE_IMAGE_BYTES + 2) // 3 * 4:
        return f'"{at}" is larger than {MAX_WIRE_IMAGE_BYTES >> 20} MB'
    try:
        decoded = b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f'"{at}.data" is not valid base64'
    if not decoded:
        return f'"{at}.data" is empty'
    return ImageRef(mime, data)
