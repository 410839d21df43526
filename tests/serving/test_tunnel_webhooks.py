"""``--tunnel`` announces its URL to the channels (feature S3), in ``start`` and through the ``dev``
supervisor to its worker: a ``register_webhook`` hook is called with the public URL, GitHub prints
its Payload URL, and a route channel without a hook gets the URLs of its routes printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import AgentFactory
from tests.serving.serving_proc import ServerProcess
from tests.serving.test_tunnel import URL, cf_log, fake_bin, fake_env  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow

HOOKED = """
import pathlib

async def hook(request):
    ...

class Hooked:
    def __call__(self, ctx):
        return {"POST /hooked": hook}

    async def register_webhook(self, public_url):
        pathlib.Path(__file__).with_name("registered.txt").write_text(public_url)
        return "registered"

channel = Hooked()
"""
PLAIN = "def channel(ctx):\n    async def hook(request):\n        ...\n    return {'POST /plain': hook}\n"
GITHUB = "from fastagent_cli.channels import github_channel\n\nchannel = github_channel(on=lambda e: [])\n"


@pytest.mark.parametrize("command", ["start", "dev"])
async def test_the_tunnel_url_reaches_every_route_channel(
    command: str,
    make_agent: AgentFactory,
    fake_bin: Path,  # noqa: F811
    cf_log: Path,  # noqa: F811
) -> None:
    agent = make_agent(
        {"channels/hooked.py": HOOKED, "channels/plain.py": PLAIN, "channels/github.py": GITHUB},
        config="",
    )
    env = {**fake_env(fake_bin, cf_log), "GITHUB_WEBHOOK_SECRET": "x"}
    async with ServerProcess.spawn(
        command, str(agent), "--port", "0", "--bind", "127.0.0.1", "--tunnel", env=env
    ) as server:
        await server.wait_for(r"\[fastagent\] channels/hooked\.py: webhook registered")
        await server.wait_for(rf"\[fastagent\] channels/plain\.py: point its platform at {URL}/plain")
        await server.wait_for(rf"\[github\] set the repository webhook .*Payload URL {URL}/webhook")
        await server.wait_for(r"\[fastagent\] channels/github\.py: webhook manual")
    assert (agent / "channels" / "registered.txt").read_text() == URL
