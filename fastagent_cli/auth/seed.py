"""``FASTAGENT_AUTH_SEED``: a credential file carried to a deployed box by ``fastagent deploy``.

The value is the base64 of an ``auth.json``. ``fastagent start`` writes it to the agent's auth
path, as its one read of the directory resolved it (0600, in a 0700 directory, under the
credential lock), only when no file exists there, so a credential the box has since refreshed or
changed is never rolled back by a stale seed.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastagent_cli.auth.store import AuthStore
from fastagent_cli.errors import CredentialError

__all__ = ["AUTH_SEED_ENV", "seed_auth_file"]

AUTH_SEED_ENV = "FASTAGENT_AUTH_SEED"


def seed_auth_file(path: Path, env: Mapping[str, str] | None = None) -> bool:
    """Write the seed to ``path`` if there is a seed and no file; ``True`` when it wrote."""
    environ = os.environ if env is None else env
    seed = environ.get(AUTH_SEED_ENV, "").strip()
    if not seed or path.exists():
        return False
    try:
        doc = json.loads(base64.b64decode(seed, validate=True))
    except (binascii.Error, ValueError):
        raise CredentialError(f"{AUTH_SEED_ENV} is not the base64 of a JSON credential file") from None
    if not isinstance(doc, dict):
        raise CredentialError(f"{AUTH_SEED_ENV} must hold a JSON object")
    store = AuthStore(path)

    def fill(current: dict[str, Any]) -> bool:
        if store.path.exists():
            return False  # another process got there first: keep its file
        current.update(doc)
        return True

    return store.update(fill, write_if=bool)
