"""Per-turn cost of the directory definition (prints figures; not a test).

    python bench/definition_cost.py [--turns 2000] [--edits 200]

The engine asks for the system prompt once per turn. This measures that call on an agent with a
persona, AGENTS.md at two levels above the workspace and in it, five skills and a deferred tool:

* unchanged: the definition is checked by ``stat`` and the cached prompt returned;
* after an edit: ``persona.md`` changed since the last turn, so everything is re-read and the
  prompt rebuilt (the edit itself is not timed).

The TypeScript original: 0.08 ms unchanged, ~5.5 ms after an edit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastagent_cli.assembly import inspect_agent_dir
from fastagent_cli.definition.freshness import RACY_WINDOW_NS

TOOL = '''\
from fastagent_cli import define_tool


@define_tool(deferred=True)
def weather(city: str) -> str:
    """Get the weather forecast for a city."""
    return "sunny"
'''


def build(root: Path) -> Path:
    workspace = root / "org" / "repo"
    agent = workspace / "fastagent"
    (agent / "tools").mkdir(parents=True)
    (root / "org" / "AGENTS.md").write_text("Org rules.\n" * 20)
    (workspace / "AGENTS.md").write_text("Repo rules.\n" * 40)
    (agent / "fastagent.toml").write_text('model = "scripted/echo"\n')
    (agent / "persona.md").write_text("You are the bench agent.\n")
    for i in range(5):
        skill = agent / "skills" / f"skill-{i}"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: skill-{i}\ndescription: Skill number {i}.\n---\n" + "x\n" * 50
        )
    (agent / "tools" / "weather.py").write_text(TOOL)
    return workspace


def settle(root: Path) -> None:
    """Age every file past the racy window, as a definition at rest is."""
    past = time.time() - 10
    for path in [root, *root.rglob("*")]:
        os.utime(path, (past, past))
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=200)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = build(Path(tmp))
        prompt = inspect_agent_dir(workspace).prompt
        settle(Path(tmp))
        prompt()
        loads = prompt.loads
        unchanged = []
        for _ in range(opts.turns):
            start = time.perf_counter_ns()
            prompt()
            unchanged.append((time.perf_counter_ns() - start) / 1e6)
        assert prompt.loads == loads, "an unchanged definition was re-read"
        persona = workspace / "fastagent" / "persona.md"
        edited = []
        for i in range(opts.edits):
            persona.write_text(f"You are the bench agent, edit {i}.\n")
            start = time.perf_counter_ns()
            text = prompt()
            edited.append((time.perf_counter_ns() - start) / 1e6)
            assert text.startswith(f"You are the bench agent, edit {i}.")
        size = len(prompt())
    print(f"system prompt: {size} characters, {prompt.loads} loads")
    print(
        f"unchanged:   median {statistics.median(unchanged):.3f} ms, "
        f"p95 {sorted(unchanged)[int(len(unchanged) * 0.95)]:.3f} ms  ({opts.turns} turns)"
    )
    print(
        f"after edit:  median {statistics.median(edited):.3f} ms, "
        f"p95 {sorted(edited)[int(len(edited) * 0.95)]:.3f} ms  ({opts.edits} edits)"
    )
    print("TypeScript original: 0.08 ms unchanged, ~5.5 ms after an edit")


if __name__ == "__main__":
    main()
