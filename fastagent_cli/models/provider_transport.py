"""A provider's own transport settings in ``models.json``: its timeouts and the CA it trusts.

::

    {"providers": {"vllm": {"baseUrl": "https://gpu.internal/v1", ...,
                            "timeouts": {"connect": 5, "firstByte": 120, "betweenChunks": 600},
                            "caFile": "certs/internal-ca.pem"}}}

``timeouts`` (seconds, each optional) override ``[engine]``'s ``connect_timeout``,
``first_byte_timeout`` and ``chunk_timeout`` for this provider's requests. ``caFile`` (a PEM
bundle, relative to ``models.json``'s directory) is the CA this provider's ``https://``
certificates are checked against instead of the default bundle (certifi, or ``SSL_CERT_FILE``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["TIMEOUT_KEYS", "parse_ca_file", "parse_timeouts"]

TIMEOUT_KEYS = {"connect": "connect", "firstByte": "first_byte", "betweenChunks": "between_chunks"}
"""``models.json`` spelling -> the key the transport reads."""

_MAX_S = 86_400.0


def parse_timeouts(raw: Any) -> dict[str, float]:
    """``{"connect": 5, ...}`` as the transport's keys; ValueError naming what is wrong."""
    if not isinstance(raw, Mapping):
        raise ValueError(
            'timeouts must be an object like {"connect": 10, "firstByte": 60, "betweenChunks": 300}'
        )
    out: dict[str, float] = {}
    for key, value in raw.items():
        if key not in TIMEOUT_KEYS:
            raise ValueError(f"timeouts: unknown key {key!r} (use {', '.join(TIMEOUT_KEYS)})")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"timeouts.{key} must be a number of seconds")
        if not 0 < value <= _MAX_S:
            raise ValueError(f"timeouts.{key} must be more than 0 and at most {_MAX_S:g} seconds")
        out[TIMEOUT_KEYS[key]] = float(value)
    return out


def parse_ca_file(raw: Any, base_dir: Path) -> str:
    """The absolute path of an existing ``caFile``; ValueError naming what is wrong."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("caFile must be the path of a PEM file of CA certificates")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        raise ValueError(f"caFile {str(path)!r} does not exist")
    return str(path)
