"""Thinking levels and the clamp to what a model supports (pi's rule: the lowest supported level
at or above the requested one, falling back downward only when nothing above exists)."""

from __future__ import annotations

from fastagent_cli.models.types import THINKING_LEVELS, ModelInfo, ThinkingLevel

__all__ = ["DEFAULT_THINKING_LEVEL", "clamp_thinking", "supported_levels"]

DEFAULT_THINKING_LEVEL: ThinkingLevel = "medium"
_XHIGH_MARKERS = ("gpt-5.2", "gpt-5.3", "gpt-5.4", "opus-4-6", "opus-4.6")


def supported_levels(model: ModelInfo) -> tuple[ThinkingLevel, ...]:
    """``max`` (the original's top level) is the scripted model's only: elsewhere it clamps down
    to the model's highest, ``xhigh`` or ``high``."""
    if not model.reasoning:
        return ("off",)
    if model.provider == "scripted":
        return THINKING_LEVELS
    if any(marker in model.id for marker in _XHIGH_MARKERS):
        return THINKING_LEVELS[:-1]
    return THINKING_LEVELS[:-2]


def clamp_thinking(level: ThinkingLevel, model: ModelInfo) -> ThinkingLevel:
    levels = supported_levels(model)
    if level in levels:
        return level
    wanted = THINKING_LEVELS.index(level)
    above = [lv for lv in levels if THINKING_LEVELS.index(lv) >= wanted]
    if above:
        return above[0]
    return levels[-1]
