"""The remote data plane: an :class:`~fastagent_cli.contract.Agent` whose ``invoke`` drives
``POST /control/invoke`` on a serve.

A real Agent, failure discipline included (contract MUST 2): a refused request, a dropped or dead
connection, a protocol mismatch all become one ``failed`` event with the code ``request_failed``
(the run's own failures keep theirs), ``retryable`` for no answer, 429 and 5xx; a stream that ends
without a terminal is ``failed`` too. Closing the stream (``break``,
``aclose()``, cancelling the consumer) closes the connection, which cancels the run on the
server. A prompt's images go in the body's ``images`` (the contract's ``{mimeType, data}``), its
PDFs in ``documents`` (``{mimeType, data, name}``); a serve that refuses them (an older one, or a
file it does not take) answers a 400, which is the ``failed`` event's reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

import httpx

from fastagent_cli.contract import (
    AgentEvent,
    Failed,
    Prompt,
    Scope,
    as_prompt,
    as_scope,
    event_from_wire,
    is_terminal,
)
from fastagent_cli.errors import ControlRequestError
from fastagent_cli.remote.endpoint import REQUEST_FAILED, ControlEndpoint

__all__ = ["RemoteAgent"]


class RemoteAgent:
    """Make it with :func:`~fastagent_cli.remote.connect_agent`; close it with :meth:`aclose`."""

    def __init__(self, endpoint: ControlEndpoint) -> None:
        self.endpoint = endpoint

    @property
    def url(self) -> str:
        return self.endpoint.base

    async def invoke(self, scope: Scope | str, prompt: Prompt | str) -> AsyncIterator[AgentEvent]:
        bound, asked = as_scope(scope), as_prompt(prompt)
        body: dict[str, Any] = {"session": bound.session, "text": asked.text}
        if asked.images:
            body["images"] = [image.to_json() for image in asked.images]
        if asked.documents:
            body["documents"] = [document.to_json() for document in asked.documents]
        if bound.parent_session is not None:
            body["parentSession"] = bound.parent_session
        if bound.branch_hints:
            body["branchHints"] = list(bound.branch_hints)
        failure: Failed | None = None
        try:
            async with self.endpoint.stream("POST", "/control/invoke", body=body, payload=True) as response:
                async for data in self.endpoint.data(response):
                    try:
                        event = event_from_wire(data)
                    except ValueError as exc:
                        failure = Failed(
                            f"remote invoke: a malformed event arrived ({exc})", False, REQUEST_FAILED
                        )
                        break
                    yield event
                    if is_terminal(event):
                        return
        except ControlRequestError as exc:
            failure = Failed(f"remote invoke: {exc.message}", exc.retryable, REQUEST_FAILED)
        except TimeoutError:
            idle = self.endpoint.idle_s
            failure = Failed(
                f"remote invoke: no bytes from {self.url} for {idle:g} s: a dead connection", True
            )
        except httpx.HTTPError as exc:
            failure = Failed(
                f"remote invoke: the connection to {self.url} failed ({exc or type(exc).__name__})", True
            )
        yield failure or Failed("remote invoke: the stream ended without a terminal event", True)

    async def aclose(self) -> None:
        await self.endpoint.aclose()

    async def __aenter__(self) -> RemoteAgent:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
