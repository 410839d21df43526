"""Path handling shared by the coding tools, as pi does it.

A path the model gives is normalised (Unicode spaces become ASCII spaces, one leading ``@`` is
dropped, ``~`` and ``~/`` expand to the home directory) and resolved against the workspace, so
relative paths are rooted there. Absolute paths are used as they are. Resolution is lexical
(``a/../b`` collapses, symlinks are not followed), like Node's ``path.resolve``.
"""

from __future__ import annotations

import os
import re
import unicodedata

__all__ = ["expand_path", "resolve_read_path", "resolve_to_cwd"]

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_AM_PM = re.compile(r" (AM|PM)\.")
_NARROW_NBSP = "\u202f"


def expand_path(path: str) -> str:
    normalised = _UNICODE_SPACES.sub(" ", path)
    if normalised.startswith("@"):
        normalised = normalised[1:]
    if normalised == "~":
        return os.path.expanduser("~")
    if normalised.startswith("~/"):
        return os.path.expanduser("~") + normalised[1:]
    return normalised


def resolve_to_cwd(path: str, cwd: str | os.PathLike[str]) -> str:
    """The absolute path ``path`` names, relative paths resolved against ``cwd``."""
    return os.path.normpath(os.path.join(os.fspath(cwd), expand_path(path)))


def resolve_read_path(path: str, cwd: str | os.PathLike[str]) -> str:
    """Like :func:`resolve_to_cwd`, then the macOS spellings pi tries when the file is missing:
    a narrow no-break space before AM/PM (screenshots), NFD, and a curly apostrophe."""
    resolved = resolve_to_cwd(path, cwd)
    if os.path.exists(resolved):
        return resolved
    screenshot = _AM_PM.sub(lambda m: f"{_NARROW_NBSP}{m.group(1)}.", resolved)
    nfd = unicodedata.normalize("NFD", resolved)
    curly = resolved.replace("'", "\u2019")
    for candidate in (screenshot, nfd, curly, unicodedata.normalize("NFD", curly)):
        if candidate != resolved and os.path.exists(candidate):
            return candidate
    return resolved
