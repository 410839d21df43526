"""Telegram media for a turn (features M11, M13).

A photo becomes a vision input: Telegram offers each photo in several sizes, and the channel takes
the largest one within :data:`MAX_IMAGE_SIDE` pixels and :data:`MAX_IMAGE_BYTES` (no re-encoding
needed). Documents, voice notes, videos and audio are saved under
``<state root>/channels/telegram/files/<chat>/`` (20 MB cap) and listed in the prompt with their
paths. What the summoning message carries (and the message it replies to) must load, or the turn
fails visibly; what comes from the buffered discussion (the most recent
:data:`~fastagent_cli.channels.kit.context_buffer.BUFFER_ATTACH_MAX` of each kind) degrades one
attachment at a time into a note in the prompt.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastagent_cli.channels.kit.context_buffer import BUFFER_ATTACH_MAX
from fastagent_cli.channels.kit.files import save_attachment
from fastagent_cli.channels.kit.invoke import ManifestFile, attachments_suffix
from fastagent_cli.channels.telegram.api import BotApi, TelegramApiError
from fastagent_cli.contract import ImageRef

__all__ = [
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_SIDE",
    "Attachments",
    "collect_buffered",
    "message_files",
    "message_images",
    "own_files",
    "own_images",
    "resolve_attachments",
]

log = logging.getLogger("fastagent.channel")

MAX_IMAGE_SIDE = 1568
MAX_IMAGE_BYTES = 5 * 1024 * 1024
_MIME = {".png": "image/png", ".webp": "image/webp", ".gif": "image/gif"}
_FILE_KINDS = ("document", "voice", "video", "audio")


def _pick_photo(sizes: Any) -> str | None:
    candidates = [s for s in sizes if isinstance(s, Mapping) and isinstance(s.get("file_id"), str)]
    if not candidates:
        return None
    fitting = [
        s
        for s in candidates
        if max(int(s.get("width") or 0), int(s.get("height") or 0)) <= MAX_IMAGE_SIDE
        and int(s.get("file_size") or 0) <= MAX_IMAGE_BYTES
    ]
    pool = fitting or [min(candidates, key=lambda s: int(s.get("width") or 0) * int(s.get("height") or 0))]
    best = max(pool, key=lambda s: int(s.get("width") or 0) * int(s.get("height") or 0))
    return str(best["file_id"])


def own_images(message: Mapping[str, Any]) -> list[str]:
    """The message's own photo, as the file id of the size a model should see."""
    photo = _pick_photo(message.get("photo") or [])
    return [photo] if photo else []


def own_files(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The message's own files: ``{id, name, size}`` each."""
    out: list[dict[str, Any]] = []
    for kind in _FILE_KINDS:
        item = message.get(kind)
        if isinstance(item, Mapping) and isinstance(item.get("file_id"), str):
            name = item.get("file_name") or f"{kind}-{message.get('message_id')}"
            out.append({"id": item["file_id"], "name": str(name), "size": item.get("file_size")})
    return out


def _with_reply(message: Mapping[str, Any], pick: Any) -> list[Any]:
    replied = message.get("reply_to_message")
    return [*pick(message), *(pick(replied) if isinstance(replied, Mapping) else [])]


def message_images(message: Mapping[str, Any]) -> list[str]:
    """The summoning message's photo and the photo it replies to."""
    return _with_reply(message, own_images)


def message_files(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The summoning message's files and the files of the message it replies to."""
    return _with_reply(message, own_files)


@dataclass(slots=True)
class Buffered:
    """Attachments folded in from the earlier discussion."""

    images: list[dict[str, Any]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0


def collect_buffered(
    consumed: Sequence[Mapping[str, Any]],
    primary_images: Sequence[str],
    primary_files: Sequence[Mapping[str, Any]],
) -> Buffered:
    """The most recent buffered photos and files (each kind capped), minus the ones the summoning
    message carries itself; the rest are counted as skipped."""
    skip_images = set(primary_images)
    skip_files = {f["id"] for f in primary_files}
    images: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    for entry in consumed:
        who, msg = str(entry.get("sender") or "someone"), entry.get("msg")
        for image in entry.get("images") or []:
            if image not in skip_images and all(i["id"] != image for i in images):
                images.append({"id": image, "from": who, "msg": msg})
        for item in entry.get("files") or []:
            if item["id"] not in skip_files and all(f["id"] != item["id"] for f in files):
                files.append({**item, "from": who, "msg": msg})
    skipped = max(0, len(images) - BUFFER_ATTACH_MAX) + max(0, len(files) - BUFFER_ATTACH_MAX)
    return Buffered(images[-BUFFER_ATTACH_MAX:], files[-BUFFER_ATTACH_MAX:], skipped)


@dataclass(frozen=True, slots=True)
class Attachments:
    images: tuple[ImageRef, ...]
    suffix: str
    """Appended to the prompt: the note about missing earlier attachments, then the file manifest."""


async def _image(api: BotApi, file_id: str) -> ImageRef:
    data, remote = await api.download(file_id, MAX_IMAGE_BYTES)
    mime = _MIME.get(os.path.splitext(remote)[1].lower(), "image/jpeg")
    return ImageRef(mime, base64.b64encode(data).decode("ascii"))


def _safe_name(name: str) -> str:
    flat = re.sub(r"[^\w.\- ]+", "_", os.path.basename(name)).strip(" .") or "file"
    return flat[-120:]


async def _file(api: BotApi, item: Mapping[str, Any], folder: Path) -> ManifestFile:
    data, remote = await api.download(str(item["id"]))
    name = str(item.get("name") or os.path.basename(remote))
    path = folder / f"{uuid.uuid4().hex[:8]}-{_safe_name(name)}"
    await save_attachment(path, data)
    return ManifestFile(name, len(data), str(path))


async def resolve_attachments(
    api: BotApi,
    folder: Path,
    images: Sequence[str],
    files: Sequence[Mapping[str, Any]],
    buffered: Buffered,
) -> Attachments:
    """Load the turn's attachments. Raises :class:`TelegramApiError` (or :class:`OSError`) when one
    the summoning message carries cannot be loaded."""
    loaded_images = [await _image(api, file_id) for file_id in images]
    manifest = [await _file(api, item, folder) for item in files]
    lost = 0
    for ref in buffered.images:
        try:
            loaded_images.append(await _image(api, str(ref["id"])))
        except (TelegramApiError, OSError) as exc:
            lost += 1
            log.warning("[telegram] an earlier (buffered) photo did not load: %s", exc)
    for item in buffered.files:
        try:
            saved = await _file(api, item, folder)
        except (TelegramApiError, OSError) as exc:
            lost += 1
            log.warning("[telegram] an earlier (buffered) file did not load: %s", exc)
            continue
        manifest.append(saved.attributed(str(item.get("from")), item.get("msg")))
    suffix = attachments_suffix(manifest, lost + buffered.skipped)
    return Attachments(tuple(loaded_images), suffix)
