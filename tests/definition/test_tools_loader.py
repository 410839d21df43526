"""tools/*.py discovery, config import refs, the merge order and what gets reported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fastagent_cli.definition.config import FastagentConfig
from fastagent_cli.definition.tools_loader import assemble_tools, load_tools_dir
from fastagent_cli.errors import ConfigError
from fastagent_cli.tools.base import ToolContext

TOOL = '''\
from fastagent_cli import tool


@tool
def {fn}(text: str) -> str:
    """{doc}"""
    return "{result}:" + text
'''


def _write(agent: Path, rel: str, text: str) -> None:
    path = agent / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_discovery_sorted_named_after_the_file_and_failures_reported(tmp_path: Path) -> None:
    _write(tmp_path, "tools/zeta.py", TOOL.format(fn="anything", doc="Zeta.", result="z"))
    _write(tmp_path, "tools/alpha.py", TOOL.format(fn="alpha", doc="Alpha.", result="a"))
    _write(tmp_path, "tools/broken.py", "import definitely_not_installed_module\n")
    _write(tmp_path, "tools/empty.py", "X = 1\n")
    _write(tmp_path, "tools/_helper.py", "raise RuntimeError('helpers are not tools')\n")
    _write(tmp_path, "tools/exits.py", "import sys\nsys.exit(3)\n")
    tools, failures = load_tools_dir(tmp_path)
    assert [t.name for t in tools] == ["alpha", "zeta"]  # the file name is the tool name
    assert tools[1].source == "tools/zeta.py"
    assert [(f.source, f.error) for f in failures] == [
        (
            "tools/broken.py",
            "ModuleNotFoundError: No module named 'definitely_not_installed_module' (install it into the "
            f"Python fastagent runs on: `{sys.executable} -m pip install <the package>`)",
        ),
        (
            "tools/empty.py",
            "ValueError: defines no tool (expected a module-level tool built with @tool or define_tool)",
        ),
        ("tools/exits.py", "SystemExit: 3"),
    ]
    assert not (tmp_path / "tools" / "__pycache__").exists()  # no bytecode litter in the agent


async def test_discovered_tool_runs(tmp_path: Path) -> None:
    _write(tmp_path, "tools/echo.py", TOOL.format(fn="echo", doc="Echo.", result="echo"))
    tools, _ = load_tools_dir(tmp_path)
    result = await tools[0].execute({"text": "hi"}, ToolContext(cwd=str(tmp_path)))
    assert result.content == [{"type": "text", "text": "echo:hi"}]


def test_merge_order_coding_config_tools_dir_with_collisions(tmp_path: Path) -> None:
    _write(tmp_path, "mytools.py", TOOL.format(fn="lookup", doc="From config.", result="config"))
    _write(tmp_path, "tools/lookup.py", TOOL.format(fn="lookup", doc="From tools/.", result="dir"))
    _write(tmp_path, "tools/read.py", TOOL.format(fn="read", doc="Shadowed.", result="dir"))
    _write(tmp_path, "tools/extra.py", TOOL.format(fn="extra", doc="Mounted.", result="dir"))
    config = FastagentConfig(coding_tools=["read"], tools=["mytools:lookup"])
    toolset = assemble_tools(config, tmp_path, tmp_path)
    assert toolset.names == ["read", "lookup", "extra"]
    assert toolset.tools[1].description == "From config."
    assert [c.message for c in toolset.collisions] == [
        'tool "lookup" (tools/lookup.py) is shadowed by config.tools mytools:lookup — not mounted',
        'tool "read" (tools/read.py) is shadowed by coding tool — not mounted',
    ]


def test_config_ref_errors(tmp_path: Path) -> None:
    _write(tmp_path, "notatool.py", "value = 3\n")
    cases = {
        "nosuchmodule_xyz:thing": "cannot import nosuchmodule_xyz (ModuleNotFoundError",
        "notatool:missing": "module notatool has no attribute 'missing'",
        "notatool:value": "expected a Tool or a list of Tools (built with @tool / define_tool), got int",
    }
    for ref, message in cases.items():
        config = FastagentConfig(coding_tools=False, tools=[ref])
        with pytest.raises(ConfigError, match=f'fastagent.toml tools: "{ref}"') as caught:
            assemble_tools(config, tmp_path, tmp_path)
        assert message in caught.value.message
        lenient = assemble_tools(config, tmp_path, tmp_path, strict=False)
        assert lenient.error is not None and message in lenient.error


def test_config_ref_to_a_list(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "bundle.py",
        "from fastagent_cli import define_tool\n\n"
        "def a() -> str:\n    'A.'\n    return 'a'\n\n"
        "def b() -> str:\n    'B.'\n    return 'b'\n\n"
        "TOOLS = [define_tool(a), define_tool(b, deferred=True)]\n",
    )
    toolset = assemble_tools(FastagentConfig(coding_tools=False, tools=["bundle:TOOLS"]), tmp_path, tmp_path)
    assert toolset.names == ["a", "b", "search_tools"]  # a deferred tool brings the loader
    assert toolset.deferred == ["b"]


def test_authored_search_tools_wins_and_is_forced_sequential(tmp_path: Path) -> None:
    _write(tmp_path, "tools/search_tools.py", TOOL.format(fn="search_tools", doc="Mine.", result="mine"))
    _write(
        tmp_path,
        "tools/hidden.py",
        "from fastagent_cli import define_tool\n\n@define_tool(deferred=True)\ndef hidden() -> str:\n"
        "    'Hidden.'\n    return 'h'\n",
    )
    toolset = assemble_tools(FastagentConfig(coding_tools=False), tmp_path, tmp_path)
    mine = next(t for t in toolset.tools if t.name == "search_tools")
    assert mine.description == "Mine." and mine.sequential
    assert toolset.names == ["hidden", "search_tools"]
    assert toolset.warnings == [
        "search_tools is not sequential — forcing it: parallel loader calls would misattribute activations"
    ]
