"""Credentials: the ``auth.json`` store (0600 in a 0700 dir, atomic, locked), which file a command
uses, and verifying an API key with one request."""

from fastagent_cli.auth.paths import AuthTarget, global_auth_path, resolve_auth_path, resolve_auth_target
from fastagent_cli.auth.store import AuthStore
from fastagent_cli.auth.verify import Verdict, verify_key

__all__ = [
    "AuthStore",
    "AuthTarget",
    "Verdict",
    "global_auth_path",
    "resolve_auth_path",
    "resolve_auth_target",
    "verify_key",
]
