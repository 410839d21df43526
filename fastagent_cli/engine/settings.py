"""A session's effective model and thinking level: the one resolution execution, chat and the
session port share (the control plane's ``resolveSessionSettings``).

The model is the active path's latest ``model_change`` when it names a known model, else the
agent's default. The thinking level is the path's latest ``thinking_level_change`` (the recorded
preference), else the configured default, clamped to what that model supports (pi's rule: the
lowest supported level at or above the requested one, downward only when nothing is above). The
record keeps the preference, so it returns when the session moves back to a capable model.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastagent_cli.engine.ports import ModelPort
from fastagent_cli.errors import ModelError
from fastagent_cli.messages import THINKING_LEVELS, ThinkingLevel
from fastagent_cli.models.thinking import clamp_thinking, supported_levels
from fastagent_cli.models.types import ModelInfo
from fastagent_cli.sessions.record import SessionContext

__all__ = ["SessionSettings", "resolve_session_settings"]


@dataclass(frozen=True, slots=True)
class SessionSettings:
    model: ModelInfo
    requested_thinking: ThinkingLevel
    """The recorded preference, or the configured default."""
    ignored_model: str | None = None
    """A recorded ``provider/model`` override that no longer resolves (the default is used)."""

    @property
    def spec(self) -> str:
        return self.model.spec

    @property
    def thinking(self) -> ThinkingLevel:
        """The level a turn runs with: the request clamped to the model."""
        return clamp_thinking(self.requested_thinking, self.model)

    @property
    def available_thinking(self) -> tuple[ThinkingLevel, ...]:
        return supported_levels(self.model)


def resolve_session_settings(
    context: SessionContext | None, models: ModelPort, default_thinking: ThinkingLevel
) -> SessionSettings:
    """The settings of a session whose active path is ``context`` (``None``: a new session)."""
    model: ModelInfo | None = None
    ignored: str | None = None
    override = context.model if context is not None else None
    if override and all(override):
        try:
            model = models.resolve(f"{override[0]}/{override[1]}")
        except ModelError:
            ignored = f"{override[0]}/{override[1]}"
    recorded = context.thinking_level if context is not None else None
    requested = recorded if recorded is not None and recorded in THINKING_LEVELS else default_thinking
    return SessionSettings(model or models.default(), requested, ignored)
