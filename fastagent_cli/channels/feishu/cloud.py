"""The two clouds of one protocol (feature O1): Feishu (``open.feishu.cn``, the reference) and Lark
(``open.larksuite.com``, a compatibility profile). A kind owns its route, env prefix, state home,
logs and onboarding; events, cards and crypto are the same wire formats."""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["FEISHU", "LARK", "Cloud", "cloud_of"]


@dataclass(frozen=True, slots=True)
class Cloud:
    kind: str
    env_prefix: str
    api_base: str
    accounts_base: str
    scan_to_create: bool
    """App creation from the CLI (Feishu); Lark's confirm flow is broken, so it is a guided paste."""

    @property
    def label(self) -> str:
        return f"[{self.kind}]"

    def env(self, name: str) -> str:
        """``<PREFIX>_<name>`` from the environment (``""`` when unset)."""
        return os.environ.get(f"{self.env_prefix}_{name}", "")

    def resolve_api_base(self, explicit: str | None = None) -> str:
        return (explicit or self.env("API_BASE_URL") or self.api_base).rstrip("/")


FEISHU = Cloud("feishu", "FEISHU", "https://open.feishu.cn", "https://accounts.feishu.cn", True)
LARK = Cloud("lark", "LARK", "https://open.larksuite.com", "https://accounts.larksuite.com", False)


def cloud_of(kind: str) -> Cloud:
    return FEISHU if kind == "feishu" else LARK
