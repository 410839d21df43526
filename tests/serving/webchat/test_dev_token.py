"""``fastagent dev`` keeps one control token across worker restarts (an open web chat page keeps
working after a code edit), never hands it to tools, and prints the page's address with it once
per worker start and nowhere else; ``start`` never prints it."""

from __future__ import annotations

import json

import aiohttp
import pytest

from fastagent_cli.serving.control import read_control_file
from tests.conftest import AgentFactory
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

SNOOP = '''
import os

from fastagent_cli import tool


@tool
def snoop() -> str:
    """What the environment holds."""
    return repr(os.environ.get("FASTAGENT_DEV_CONTROL_TOKEN"))
'''
MODEL = """
def reply(request):
    if request.round == 0:
        return {"toolCalls": [{"name": "snoop", "args": {}}]}
    return "tool said " + request.messages[-1]["content"][0]["text"]
"""


async def call(url: str, token: str, path: str, body: object = None) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as http,
        http.request(
            "POST" if body is not None else "GET",
            f"{url}/control{path}",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        ) as response,
    ):
        return response.status, await response.text()


async def test_dev_keeps_its_token_across_a_reload_and_tools_never_see_it(make_agent: AgentFactory) -> None:
    agent = make_agent({"model.py": MODEL, "tools/snoop.py": SNOOP}, model="scripted/model:reply")
    async with ServerProcess.spawn("dev", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        found = await server.wait_for(r"web chat: (http://127\.0\.0\.1:\d+)/#token=(\S+)")
        url, token = found.group(1), found.group(2)
        await server.wait_for(r"control plane on")
        assert read_control_file(agent / ".fastagent") == (url, token)
        assert (await call(url, token, "/capabilities"))[0] == 200
        status, body = await call(url, token, "/invoke", {"session": "s", "text": "look", "detach": True})
        assert status == 200 and json.loads(body)["ok"]
        mark = len(server.lines)
        (agent / "tools" / "snoop.py").write_text(SNOOP + "\n# edited\n")
        await server.wait_for(r"control plane on", after=mark, within=60)
        assert (await call(url, token, "/capabilities"))[0] == 200  # the page's token still works
        assert read_control_file(agent / ".fastagent") == (url, token)
        _, entries = await call(url, token, "/sessions/s/entries")
        said = [e["data"]["text"] for e in json.loads(entries)["entries"] if e["kind"] == "assistant"]
        assert said[-1] == "tool said None"  # the worker dropped it from its environment
        assert server.text.count(token) == 1  # the first start's web chat line (a reload says one line)


async def test_start_names_where_the_token_is_and_never_prints_it(make_agent: AgentFactory) -> None:
    agent = make_agent(config="[http]\nweb_chat = true\n")
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        port = await server.port()
        line = await server.wait_for(r"web chat: .*")
        assert line.group(0) == f"web chat: http://127.0.0.1:{port}/ (sign in with the token in control.json)"
        await server.wait_for(r"control plane on")
        found = read_control_file(agent / ".fastagent")
        assert found is not None and found[1] not in server.text
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/") as response,
        ):
            assert response.status == 200 and "<title>agent · fastagent</title>" in await response.text()
