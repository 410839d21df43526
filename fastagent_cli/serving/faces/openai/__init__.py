"""The OpenAI-compatible face (``[http] openai = true``): the agent as a model under ``/v1``.

* ``GET /v1/models`` (and ``GET /v1/models/<id>``): one model, the agent's name;
* ``POST /v1/chat/completions``: streaming and not (:mod:`.chat`);
* ``POST /v1/responses``: streaming and not, ``previous_response_id`` (:mod:`.responses`).

Which session a turn runs in is :mod:`.conversation`'s rule; request checks are
:mod:`.requests`, errors :mod:`.errors`. Any OpenAI SDK, Open WebUI or LibreChat can point its
base URL at ``http://host:port/v1`` and pick the agent as a model.
"""

from __future__ import annotations

from fastagent_cli.serving.faces import Face, FaceContext
from fastagent_cli.serving.faces.openai.routes import PREFIX, OpenAIFace
from fastagent_cli.serving.invoke_auth import TOKEN_ENV

__all__ = ["create_face"]


def create_face(ctx: FaceContext) -> Face:
    face = OpenAIFace(ctx)

    def startup(base: str) -> list[str]:
        if ctx.token is None:
            auth = "no API key needed"
        elif ctx.token.source == TOKEN_ENV:
            auth = f"API key: ${TOKEN_ENV}"
        else:
            auth = "API key: your [http] token"
        return [f'OpenAI-compatible API: {base}{PREFIX} (model "{face.model}"; {auth})']

    return Face("openai", mounts={PREFIX: face}, startup=startup, aclose=face.aclose)
