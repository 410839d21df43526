"""Agent directories for the protocol face tests: a scripted model that shows what it was given."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import AgentFactory

# ``scripted/model:reply``: "turn N: <text>" (N counts the session's user messages, so a continued
# session shows it), a bash call first for "tool", a 30 s silent command for "sleep".
REPLY = """
def reply(request):
    users = sum(1 for m in request.messages if m["role"] == "user")
    text = request.last_user_text
    if request.round == 0 and "sleep" in text:
        return {"toolCalls": [{"name": "bash", "args": {"command": "sleep 37.25"}}]}
    if request.round == 0 and "tool" in text:
        return {"toolCalls": [{"name": "bash", "args": {"command": "echo tool-ran"}}]}
    if "fail" in text:
        return {"error": {"status": 400, "message": "the model refused"}}
    return {"thinking": "pondering", "text": f"turn {users}: {text}"}
"""

SLEEP = "sleep 37.25"
PERSONA = "# Helper\n\nA terse helper that answers questions about the repository.\n\n## Style\n\nShort.\n"
SKILL = (
    "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\n\n"
    "Read the log, group by kind.\n"
)


def face_agent(make_agent: AgentFactory, config: str) -> Path:
    return make_agent(
        {"model.py": REPLY, "persona.md": PERSONA, "skills/release-notes/SKILL.md": SKILL},
        model="scripted/model:reply",
        config=config,
    )


def sleepers() -> int:
    """Processes running the scripted silent command (Linux: their command lines)."""
    count = 0
    for pid in Path("/proc").iterdir():
        if pid.name.isdigit():
            try:
                cmdline = (pid / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if cmdline.startswith(SLEEP):
                count += 1
    return count


async def wait_until(condition: Callable[[], bool], within: float = 10) -> bool:
    """Poll ``condition`` (a process appearing or going away has no event to wait on)."""
    deadline = time.monotonic() + within
    while not condition() and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    return condition()
