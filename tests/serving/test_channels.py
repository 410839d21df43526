"""Loading ``channels/*.py``: route channels, long connections, failures, collisions, disabled files."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastagent_cli.errors import ServeError
from fastagent_cli.serving.channels import ChannelContext, LoadedChannels, load_channels
from tests.serving.conftest import FakeAgent

ROUTE = """
from aiohttp import web

def channel(ctx):
    async def hello(request):
        return web.Response(text="hello from {name}\\n")
    return {routes}
"""

LONG = """
import asyncio, types

class Socket:
    name = "{name}"

    def connect(self, ctx, stop):
        async def ready():
            await stop.wait()
        async def closed():
            await stop.wait()
        return types.SimpleNamespace(ready=ready(), closed=closed())

channel = Socket()
"""


def route_file(name: str, routes: str = '{"GET /hello": hello}') -> str:
    return ROUTE.format(name=name, routes=routes)


def load(tmp_path: Path, files: dict[str, str], mounts: tuple[str, ...] = ()) -> LoadedChannels:
    agent_dir = tmp_path / "agent"
    for name, text in files.items():
        path = agent_dir / "channels" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    agent_dir.mkdir(exist_ok=True)
    return load_channels(agent_dir, ChannelContext(FakeAgent(), tmp_path / "state"), mounts=mounts)


def test_no_channels_directory_loads_nothing(tmp_path: Path) -> None:
    loaded = load(tmp_path, {})
    assert (loaded.enabled, loaded.routes, loaded.long_connections, loaded.invalid) == ([], {}, [], False)
    assert loaded.error_message() is None


def test_a_route_channel_is_mounted_with_the_context(tmp_path: Path) -> None:
    seen = """
SEEN = []

def channel(ctx):
    SEEN.append(ctx)
    async def hook(request):
        raise AssertionError
    return {"POST /hook": hook, "/any": hook}
"""
    loaded = load(tmp_path, {"hooks.py": seen})
    assert sorted(loaded.routes) == ["/any", "POST /hook"]
    assert loaded.route_owners["POST /hook"] == "channels/hooks.py"
    import sys

    ctx = sys.modules["fastagent_agent_channels.hooks"].SEEN[0]
    assert isinstance(ctx, ChannelContext) and ctx.state_root == tmp_path / "state"
    assert isinstance(ctx.agent, FakeAgent)


def test_disabled_files_and_non_channels_are_skipped(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        {
            "telegram.py.disabled": "this is not python",
            "notes.md": "hello",
            ".#draft.py": "broken(",
            "__init__.py": "",
        },
    )
    assert loaded.enabled == []
    assert [p.name for p in loaded.disabled] == ["telegram.py.disabled"]
    assert not loaded.invalid


def test_a_long_connection_is_recognised_by_shape(tmp_path: Path) -> None:
    loaded = load(tmp_path, {"ws.py": LONG.format(name="socket")})
    assert loaded.routes == {}
    assert [(file, ch.name) for file, ch in loaded.long_connections] == [("channels/ws.py", "socket")]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("def channel(:\n", "cannot load: SyntaxError"),
        ("raise RuntimeError('no token')\n", "cannot load: RuntimeError: no token"),
        ("x = 1\n", "defines no `channel`"),
        ("channel = 42\n", "`channel` is a int"),
        ("def channel(ctx):\n    raise ValueError('bad opts')\n", "channel(ctx) raised ValueError: bad opts"),
        ("async def channel(ctx):\n    return {}\n", "returned an awaitable"),
        ("def channel(ctx):\n    return {}\n", "non-empty dict of routes, not an empty dict"),
        ("def channel(ctx):\n    return None\n", "not None"),
        ("def channel(ctx):\n    return {'hook': print}\n", 'route key "hook"'),
        ("def channel(ctx):\n    return {'/a?b': print}\n", "never match"),
        ("def channel(ctx):\n    return {'/a': 'nope'}\n", 'handler of "/a" is a str'),
        ("class C:\n    def connect(self, ctx, stop): pass\nchannel = C()\n", "non-empty string `name`"),
    ],
)
def test_each_broken_file_is_a_load_failure_naming_it(tmp_path: Path, text: str, fragment: str) -> None:
    loaded = load(tmp_path, {"good.py": route_file("good"), "bad.py": text})
    assert [f.file for f in loaded.failures] == ["channels/bad.py"]
    assert fragment in loaded.failures[0].message
    assert "GET /hello" in loaded.routes  # the good file still loaded
    message = loaded.error_message()
    assert message is not None
    assert message.startswith(
        "channel setup is invalid (1 load failure(s), 0 route collision(s)) — fix it, or rename an "
        "intentionally disabled file to *.disabled: channels/bad.py: "
    )
    with pytest.raises(ServeError):
        loaded.raise_if_invalid()


def test_route_collisions_between_files_are_counted_and_name_both(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        {
            "a.py": route_file("a", '{"/x": hello, "GET /y": hello}'),
            "b.py": route_file("b", '{"GET /x": hello, "POST /y": hello}'),
            "c.py": route_file("c", '{"GET /y": hello}'),
        },
    )
    assert loaded.failures == []
    assert len(loaded.collisions) == 2
    joined = " ".join(loaded.collisions)
    assert '"/x" (channels/a.py) and "GET /x" (channels/b.py)' in joined
    assert '"GET /y" (channels/a.py) and "GET /y" (channels/c.py)' in joined
    message = loaded.error_message()
    assert message is not None and "(0 load failure(s), 2 route collision(s))" in message


def test_keys_naming_the_same_route_in_one_file_collide(tmp_path: Path) -> None:
    loaded = load(tmp_path, {"a.py": route_file("a", '{"/x": hello, "GET /x": hello}')})
    assert loaded.collisions == ['"/x" (channels/a.py) and "GET /x" (channels/a.py) name the same route']


def test_a_route_inside_a_builtin_mount_collides(tmp_path: Path) -> None:
    loaded = load(tmp_path, {"a.py": route_file("a", '{"POST /control/x": hello}')}, mounts=("/control",))
    assert loaded.collisions == ['"POST /control/x" (channels/a.py) is inside the built-in "/control"']


def test_two_long_connections_with_one_name_fail(tmp_path: Path) -> None:
    loaded = load(tmp_path, {"a.py": LONG.format(name="ws"), "b.py": LONG.format(name="ws")})
    assert [f.file for f in loaded.failures] == ["channels/b.py"]
    assert "already declared by channels/a.py" in loaded.failures[0].message


def test_the_context_needs_an_absolute_state_root() -> None:
    with pytest.raises(ServeError, match="absolute"):
        ChannelContext(FakeAgent(), Path("relative/state"))
