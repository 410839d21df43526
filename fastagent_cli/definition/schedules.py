"""Schedule files: ``schedules/<name>.toml`` in the agent directory.

::

    # schedules/daily-digest.toml  ->  schedule "daily-digest", session "schedule:daily-digest"
    cron = "0 9 * * 1-5"          # 5 fields: minute hour day-of-month month day-of-week
    tz = "Europe/Paris"           # IANA time zone (default "UTC")
    prompt = "Summarise yesterday's tickets and send the digest with the telegram_send tool."

The file name is the schedule's name; ``wake`` is reserved (the self-scheduling audit uses it).
A file with a TOML error, a missing or unknown key, a bad cron or an unknown time zone is skipped
and reported with the problem; the other schedules keep working. ``*.disabled`` files, hidden
files and notes (``*.md``, ``*.txt``) are ignored; any other file is reported, so a schedule in the
wrong format (``daily.ts`` from FastAgent, ``daily.yaml``) never silently does nothing.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from fastagent_cli.definition.config import toml_error_text
from fastagent_cli.state.clock import format_instant
from fastagent_cli.state.cron import cron_error, next_after

__all__ = [
    "RESERVED_SCHEDULE_NAME",
    "SCHEDULES_DIR",
    "Schedule",
    "ScheduleFailure",
    "ScheduleSet",
    "load_schedules",
    "schedule_session",
]

SCHEDULES_DIR = "schedules"
RESERVED_SCHEDULE_NAME = "wake"
_KEYS = ("cron", "tz", "prompt")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_IGNORED_SUFFIXES = (".disabled", ".md", ".txt")


def schedule_session(name: str) -> str:
    """The one session every run of schedule ``name`` continues."""
    return f"schedule:{name}"


@dataclass(frozen=True, slots=True)
class Schedule:
    name: str
    cron: str
    tz: str
    prompt: str
    file: str
    """``schedules/<name>.toml``."""

    @property
    def session(self) -> str:
        return schedule_session(self.name)

    def next_fire(self, now: datetime) -> datetime | None:
        """The first slot after ``now`` (``None`` when the cron never fires again)."""
        return next_after(self.cron, self.tz, now)

    def to_json(self, now: datetime) -> dict[str, Any]:
        """``{name, file, cron, tz, prompt, next}`` (``next``: ISO instant or ``None``)."""
        following = self.next_fire(now)
        return {
            "name": self.name,
            "file": self.file,
            "cron": self.cron,
            "tz": self.tz,
            "prompt": self.prompt,
            "next": format_instant(following) if following is not None else None,
        }


@dataclass(frozen=True, slots=True)
class ScheduleFailure:
    file: str
    error: str

    @property
    def message(self) -> str:
        return f"{self.file}: {self.error} (skipped)"


@dataclass(slots=True)
class ScheduleSet:
    directory: Path
    """Where schedules are looked for: ``<agent dir>/schedules``."""
    schedules: list[Schedule] = field(default_factory=list)
    failures: list[ScheduleFailure] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.schedules]

    def get(self, name: str) -> Schedule | None:
        return next((s for s in self.schedules if s.name == name), None)

    def failure_for(self, name: str) -> ScheduleFailure | None:
        return next((f for f in self.failures if Path(f.file).stem == name), None)


def load_schedules(agent_dir: Path) -> ScheduleSet:
    """Every schedule file in ``<agent_dir>/schedules``, sorted by name, with the failures."""
    directory = agent_dir / SCHEDULES_DIR
    found = ScheduleSet(directory)
    if not directory.is_dir():
        return found
    for path in sorted(directory.iterdir()):
        file = f"{SCHEDULES_DIR}/{path.name}"
        if path.name.startswith(".") or not path.is_file() or path.name.endswith(_IGNORED_SUFFIXES):
            continue
        if path.suffix != ".toml":
            found.failures.append(
                ScheduleFailure(
                    file,
                    f"not a schedule file: schedules are {SCHEDULES_DIR}/<name>.toml "
                    f"(rename it to {path.name}.disabled to keep it here unused)",
                )
            )
            continue
        try:
            found.schedules.append(_parse(path, file))
        except ValueError as exc:
            found.failures.append(ScheduleFailure(file, str(exc)))
    return found


def _parse(path: Path, file: str) -> Schedule:
    name = path.stem
    if not _NAME.fullmatch(name):
        raise ValueError(
            f'"{name}" is not a valid schedule name (start with a letter or digit; then letters, '
            'digits, ".", "_" or "-"; at most 64)'
        )
    if name == RESERVED_SCHEDULE_NAME:
        raise ValueError(f'"{name}" is a reserved schedule name (the self-scheduling audit uses it)')
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(toml_error_text(exc)) from None
    _check_keys(raw)
    cron = _string(raw, "cron", 'a 5-field cron expression such as "0 9 * * *"')
    tz = raw.get("tz", "UTC")
    if not isinstance(tz, str) or not tz.strip():
        raise ValueError('"tz" must be an IANA time zone name such as "Europe/Paris"')
    prompt = _string(raw, "prompt", "the instruction each run starts with")
    problem = cron_error(cron, tz.strip())
    if problem:
        raise ValueError(problem)
    return Schedule(name, cron.strip(), tz.strip(), prompt, file)


def _check_keys(raw: dict[str, Any]) -> None:
    for key in raw:
        if key not in _KEYS:
            close = difflib.get_close_matches(key.lower(), _KEYS, n=1, cutoff=0.6)
            hint = f'; did you mean "{close[0]}"?' if close else ""
            raise ValueError(f'unknown key "{key}"{hint} (valid keys: {", ".join(_KEYS)})')


def _string(raw: dict[str, Any], key: str, what: str) -> str:
    if key not in raw:
        raise ValueError(f'missing "{key}" ({what})')
    value = raw[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f'"{key}" must be a non-empty string ({what})')
    return value
