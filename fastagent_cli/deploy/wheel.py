"""The fastagent this machine runs, shipped into the build context when no package index has it.

How it was installed decides (PEP 610's ``direct_url.json``, no network):

* from a package index (no ``direct_url.json``, pip's ``INSTALLER``, the imported package where
  the distribution says): the image installs ``fastagent-cli==<version>``
  from the index, as before;
* from a checkout (editable or not), a local wheel, a directory or a VCS URL, or imported from a
  source tree: deploy packs the
  installed package into a pure-Python wheel, ``<agent>/.fastagent-dist/fastagent_cli-<version>-
  py3-none-any.whl``, which the Dockerfile copies and installs (its dependencies come from the
  index at build time). The wheel is rebuilt byte for byte the same from the same files (sorted
  entries, fixed timestamps), so an unchanged fastagent leaves it untouched;
* the standalone binary (PyInstaller) has no package to pack: the image installs from the index,
  and the plan says how to point ``FASTAGENT_PIP_SPEC`` elsewhere.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

from fastagent_cli._version import __version__
from fastagent_cli.errors import FastagentError
from fastagent_cli.state.atomic import publish_file, remove_file

__all__ = ["DIST_DIR", "DISTRIBUTION", "FastagentSource", "build_wheel", "fastagent_source", "write_wheel"]

DISTRIBUTION = "fastagent-cli"
DIST_DIR = ".fastagent-dist"
_PACKAGE = "fastagent_cli"
_STAMP = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: the same bytes on every rebuild
_WHEEL = "Wheel-Version: 1.0\nGenerator: fastagent deploy\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


@dataclass(frozen=True, slots=True)
class FastagentSource:
    kind: Literal["index", "local", "binary"]
    where: str
    """Said in the plan: ``a package index``, ``an editable checkout at <dir>``, ``<url>``, ..."""
    version: str = __version__

    @property
    def wheel_name(self) -> str:
        return f"{_PACKAGE}-{self.version}-py3-none-any.whl"


def fastagent_source() -> FastagentSource:
    if getattr(sys, "frozen", False):
        return FastagentSource("binary", "the standalone binary")
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return FastagentSource("local", f"the source tree at {_package_dir().parent}")
    raw = dist.read_text("direct_url.json")
    if not raw:
        installed = bool(dist.read_text("INSTALLER"))  # pip wrote it; a source tree's egg-info has none
        if installed and Path(str(dist.locate_file(_PACKAGE))).resolve() == _package_dir():
            return FastagentSource("index", "a package index", dist.version)
        return FastagentSource("local", f"the source tree at {_package_dir().parent}", dist.version)
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = {}
    url = str(doc.get("url", "")) if isinstance(doc, dict) else ""
    editable = isinstance(doc, dict) and bool((doc.get("dir_info") or {}).get("editable"))
    shown = url.removeprefix("file://") or "a local path"
    return FastagentSource("local", f"an editable checkout at {shown}" if editable else shown, dist.version)


def _package_dir() -> Path:
    """The imported ``fastagent_cli`` package (this file is ``fastagent_cli/deploy/wheel.py``)."""
    return Path(__file__).resolve().parent.parent


def _files(package: Path) -> list[tuple[str, bytes]]:
    out = []
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(package)
        if not path.is_file() or "__pycache__" in rel.parts or path.suffix in (".pyc", ".pyo"):
            continue
        if any(part.startswith(".") for part in rel.parts):
            continue
        out.append((f"{_PACKAGE}/{rel.as_posix()}", path.read_bytes()))
    return out


def _metadata(version: str) -> tuple[str, str | None]:
    """``METADATA`` and ``entry_points.txt`` of the installed distribution (or a minimal pair)."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        dist = None
    text = dist.read_text("METADATA") if dist is not None else None
    if not text:
        text = f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: {version}\n"
    entry_points = dist.read_text("entry_points.txt") if dist is not None else None
    return text, entry_points or "[console_scripts]\nfastagent = fastagent_cli.cli.main:main\n"


def build_wheel(version: str = __version__) -> bytes:
    """The installed ``fastagent_cli`` package as a ``py3-none-any`` wheel (deterministic bytes)."""
    info = f"{_PACKAGE}-{version}.dist-info"
    meta, entry_points = _metadata(version)
    entries = _files(_package_dir())
    entries += [(f"{info}/METADATA", meta.encode()), (f"{info}/WHEEL", _WHEEL.encode())]
    if entry_points:
        entries.append((f"{info}/entry_points.txt", entry_points.encode()))
    entries.append((f"{info}/top_level.txt", f"{_PACKAGE}\n".encode()))
    record = "".join(f"{name},sha256={_digest(body)},{len(body)}\n" for name, body in entries)
    entries.append((f"{info}/RECORD", (record + f"{info}/RECORD,,\n").encode()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in entries:
            item = zipfile.ZipInfo(name, _STAMP)
            item.compress_type = zipfile.ZIP_DEFLATED
            item.external_attr = 0o644 << 16
            archive.writestr(item, body)
    return buffer.getvalue()


def _digest(body: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode("ascii")


def write_wheel(workspace: Path, rel: str, source: FastagentSource, say: Callable[[str], None]) -> None:
    """Write the wheel at ``rel`` (below ``workspace``) unless it already holds these bytes; older
    wheels of fastagent in the same directory are removed (the directory is deploy's own)."""
    target = workspace / rel
    body = build_wheel(source.version)
    try:
        current = target.read_bytes() if target.is_file() else None
        if current == body:
            say(f"[fastagent] kept {rel} (unchanged)")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            publish_file(target, body, mode=0o644, replace=True)
            say(f"[fastagent] wrote {rel} (fastagent {source.version} from {source.where})")
        for old in target.parent.glob(f"{_PACKAGE}-*.whl"):
            if old.name != target.name:
                remove_file(old)
                say(f"[fastagent] removed {old.relative_to(workspace).as_posix()} (an older fastagent)")
    except OSError as exc:
        raise FastagentError(f"cannot write {target}: {exc.strerror or exc}") from None
