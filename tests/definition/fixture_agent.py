"""The fixture agent used by the prompt, assembly and activation tests.

Layout (``root`` is a fresh temporary directory)::

    root/repo/AGENTS.md                 outer project context
    root/repo/ws/AGENTS.md              the workspace's context (nearest, so last)
    root/repo/ws/fastagent/             the agent
        fastagent.toml                  coding_tools = ["read"], model from the caller
        persona.md
        skills/{alpha,beta,gamma}/SKILL.md
        tools/weather.py                a deferred tool
        recorder_<token>.py             a scripted model callable that records each request
                                        (a unique module name: the process imports it once)
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

__all__ = ["RECORDER", "build_fixture_agent", "recorded"]

PERSONA = "You are Wren, the weather desk's agent. Answer in one sentence."

SKILLS = {
    "alpha": "Summarise a forecast for a city.",
    "beta": "Compare two forecasts & pick the <better> one.",
    "gamma": "Explain a weather warning to a non-expert.",
}

WEATHER_TOOL = '''\
from fastagent_cli import define_tool


@define_tool(deferred=True)
def weather(city: str) -> str:
    """Get the current weather forecast for a city."""
    return f"sunny in {city}"
'''

RECORDER = '''\
"""Scripted model callable: records every request, then follows a tiny script."""
import json
import secrets
from pathlib import Path

LOG = Path(__file__).with_name("requests.jsonl")


def respond(request):
    with LOG.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"system": request.system, "tools": [t.name for t in request.tools],
                             "text": request.last_user_text, "round": request.round}) + "\\n")
    text = request.last_user_text
    if text.startswith("find ") and request.round == 0:
        return {"toolCalls": [{"name": "search_tools", "args": {"query": text[5:]}}]}
    if text.startswith("use weather") and request.round == 0:
        return {"toolCalls": [{"name": "weather", "args": {"city": "Paris"}}]}
    return {"text": f"ok: {text}"}
'''


def build_fixture_agent(root: Path, *, model: str | None = None) -> tuple[Path, Path]:
    """Write the fixture; returns ``(workspace, agent_dir)``. The default model is the recorder."""
    module = f"recorder_{secrets.token_hex(4)}"
    model = model or f"scripted/{module}:respond"
    repo = root / "repo"
    workspace = repo / "ws"
    agent = workspace / "fastagent"
    (agent / "tools").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("Outer rule: be kind.", encoding="utf-8")
    (workspace / "AGENTS.md").write_text("Workspace rule: use metric units.\n", encoding="utf-8")
    (agent / "fastagent.toml").write_text(f'model = "{model}"\ncoding_tools = ["read"]\n', encoding="utf-8")
    (agent / "persona.md").write_text(PERSONA + "\n", encoding="utf-8")
    for name, description in SKILLS.items():
        skill = agent / "skills" / name
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}\n---\n\nSteps for {name}.\n", encoding="utf-8"
        )
    (agent / "tools" / "weather.py").write_text(WEATHER_TOOL, encoding="utf-8")
    (agent / f"{module}.py").write_text(RECORDER, encoding="utf-8")
    return workspace, agent


def recorded(agent: Path) -> list[dict[str, Any]]:
    path = agent / "requests.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
