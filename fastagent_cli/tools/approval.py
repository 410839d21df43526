"""Which tool calls wait for a person: a tool's own flag and the agent's ``[approval]`` policy.

A call needs approval when its tool says so (``@tool(approval=True)``, or a predicate over the
call's arguments: ``approval=lambda args: args["path"].startswith("/etc")``) or when its name
matches one of the policy's globs (``[approval] tools = ["bash", "write", "github__*"]``: an MCP
server's tools are ``<server>__<tool>``). The policy's ``mode`` then says what happens to such a
call: ``ask`` (it waits for an answer, denied after ``timeout`` seconds), ``deny`` (refused at once,
nobody is asked) or ``allow`` (it runs: approvals off, e.g. to lift the served default).

The served default (:data:`SERVED_DEFAULT_TOOLS`): ``start``/``dev`` bound to a non-loopback
address gate ``bash``, ``write`` and ``edit`` unless ``[approval] tools`` says otherwise; a local
bind, ``chat`` and ``invoke`` gate nothing by default.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT_S",
    "SERVED_DEFAULT_TOOLS",
    "ApprovalFlag",
    "ApprovalMode",
    "ApprovalPolicy",
    "Verdict",
]

log = logging.getLogger("fastagent.tools")

ApprovalFlag: TypeAlias = bool | Callable[[Mapping[str, Any]], bool] | None
"""A tool's own say: ``True`` (always ask), a predicate over the arguments, ``None``/``False``."""
ApprovalMode = Literal["ask", "deny", "allow"]
Verdict = Literal["run", "ask", "deny"]

SERVED_DEFAULT_TOOLS = ("bash", "write", "edit")
"""What a server bound beyond loopback asks about when ``[approval] tools`` is not set."""
DEFAULT_APPROVAL_TIMEOUT_S = 86_400.0
"""A day: the person who can say yes may answer tomorrow; then the call is denied."""


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """The agent's policy. ``tools``: name globs that need approval (beside the tools that flag
    themselves); ``timeout``: seconds an ask waits (``None``: no expiry); ``answerers``: platform
    user ids allowed to answer in a group thread besides the person who asked."""

    tools: tuple[str, ...] = ()
    mode: ApprovalMode = "ask"
    timeout: float | None = DEFAULT_APPROVAL_TIMEOUT_S
    answerers: tuple[str, ...] = ()
    tools_set: bool = False
    """Whether ``tools`` was written in the configuration (the served default does not replace it)."""

    def served(self, loopback: bool) -> ApprovalPolicy:
        """The policy of a server bound to a loopback address (``loopback``) or beyond it."""
        if loopback or self.tools_set:
            return self
        return replace(self, tools=SERVED_DEFAULT_TOOLS)

    def listed(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.tools)

    def static(self, name: str, flag: ApprovalFlag) -> str | None:
        """What ``info`` says about tool ``name`` (its own ``flag``): ``"ask"``/``"deny"`` (every
        call), ``"ask (some calls)"`` for a predicate, ``None`` when its calls run."""
        if self.mode == "allow":
            return None
        if self.listed(name) or flag is True:
            return self.mode
        if callable(flag):
            return f"{self.mode} (some calls)"
        return None

    def verdict(self, name: str, flag: ApprovalFlag, args: Mapping[str, Any]) -> Verdict:
        """What to do with one call of tool ``name`` (its own ``flag``): a predicate that raises
        counts as "needs approval" (the safe reading), with a warning naming the tool."""
        if self.mode == "allow":
            return "run"
        needed = flag is True or self.listed(name)
        if not needed and callable(flag):
            try:
                needed = bool(flag(args))
            except Exception as exc:
                log.warning(
                    "[tools] the approval predicate of %s raised %s: %s (the call asks)",
                    name,
                    type(exc).__name__,
                    exc,
                )
                needed = True
        if not needed:
            return "run"
        return "deny" if self.mode == "deny" else "ask"

    @property
    def gates(self) -> bool:
        """Whether any glob is set (a policy with none only reads the tools' own flags)."""
        return bool(self.tools) and self.mode != "allow"
