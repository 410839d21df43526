"""``<agent dir>/.env``: ``KEY=VALUE`` lines loaded by every command.

Comments (``#``), blank lines, an optional ``export`` prefix and matching single or double quotes
are understood; the last occurrence of a key wins within the file; a variable already in the real
environment wins over the file. No interpolation, no multi-line values.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping
from pathlib import Path

from fastagent_cli.errors import ConfigError

__all__ = ["load_dotenv", "parse_dotenv"]

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def parse_dotenv(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            continue
        key, value = match.groups()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0]
        values[key] = value
    return values


def load_dotenv(path: Path, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Apply ``path`` to the environment (real variables win); returns what the file set."""
    env = os.environ if environ is None else environ
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}); save it as UTF-8"
        ) from None
    applied: dict[str, str] = {}
    for key, value in parse_dotenv(text).items():
        if key not in env:
            env[key] = value
            applied[key] = value
    return applied
