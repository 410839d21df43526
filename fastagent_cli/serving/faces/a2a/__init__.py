"""The A2A face (``[http] a2a = true``): the agent card at ``/.well-known/agent-card.json`` and
the JSON-RPC endpoint ``POST /a2a`` (A2A 1.0 method names and shapes, and 0.3's), with
``contextId`` mapped to the session. See :mod:`.rpc` and :mod:`.card`."""

from __future__ import annotations

from fastagent_cli.serving.face_kit import identity_of
from fastagent_cli.serving.faces import Face, FaceContext
from fastagent_cli.serving.faces.a2a.card import CARD_KEY, create_card_handler
from fastagent_cli.serving.faces.a2a.rpc import A2A_PATH, create_rpc_handler
from fastagent_cli.serving.faces.a2a.tasks import TaskBoard

__all__ = ["A2A_PATH", "CARD_KEY", "create_face"]


def create_face(ctx: FaceContext) -> Face:
    board = TaskBoard(ctx.agent)
    routes = {
        CARD_KEY: create_card_handler(identity_of(ctx.opened), A2A_PATH, ctx.token),
        A2A_PATH: create_rpc_handler(board, ctx.token),
    }

    def startup(base: str) -> list[str]:
        return [f"a2a: {base}{A2A_PATH} (agent card: {base}/.well-known/agent-card.json)"]

    return Face("a2a", routes=routes, startup=startup, aclose=board.aclose)
