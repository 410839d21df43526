"""What Docker's context packer would leave out, read from a ``.dockerignore`` (Docker's rules).

Docker's dialect, not git's: patterns are anchored at the context root (a bare ``.env`` is only
the root one; ``**/.env`` is every one), ``*`` and ``?`` never cross ``/``, ``**`` spans any
number of directories, a pattern that matches a directory matches everything under it, ``!``
re-includes (even under an excluded directory), and the last matching line wins.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

__all__ = ["DockerIgnore"]


@dataclass(frozen=True, slots=True)
class _Pattern:
    regex: re.Pattern[str]
    exclusion: bool


def _compile(pattern: str) -> re.Pattern[str]:
    out = "^"
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            if pattern[i + 1 : i + 2] == "*":
                i += 1
                if pattern[i + 1 : i + 2] == "/":
                    i += 1
                out += ".*" if i + 1 >= len(pattern) else "(.*/)?"
            else:
                out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out += re.escape(ch)
            else:
                body = pattern[i + 1 : end]
                out += "[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]"
                i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out += re.escape(pattern[i])
        else:
            out += re.escape(ch)
        i += 1
    return re.compile(out + "$")


class DockerIgnore:
    def __init__(self, text: str) -> None:
        self.patterns: list[_Pattern] = []
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            exclusion = line.startswith("!")
            if exclusion:
                line = line[1:].strip()
            cleaned = posixpath.normpath(line).lstrip("/")
            if cleaned in ("", "."):
                continue
            self.patterns.append(_Pattern(_compile(cleaned), exclusion))

    def excludes(self, path: str) -> bool:
        """Would ``path`` (relative to the context root, ``/``-separated) be left out?"""
        path = posixpath.normpath(path).lstrip("/")
        parents = path.split("/")[:-1]
        matched = False
        for pattern in self.patterns:
            if pattern.exclusion != matched:
                continue  # only a later opposite rule can change the answer
            hit = bool(pattern.regex.match(path)) or any(
                pattern.regex.match("/".join(parents[: i + 1])) for i in range(len(parents))
            )
            if hit:
                matched = not pattern.exclusion
        return matched
