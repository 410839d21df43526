"""The MCP server's JSON-RPC side, whatever carries it (streamable HTTP or stdio).

One :class:`McpConnection` per MCP session (an ``Mcp-Session-Id``, or the stdio process). It
answers the handshake-era protocol (revisions 2024-11-05 to 2025-11-25; the newest one the client
offers is echoed, else the newest served):

* ``initialize`` / ``notifications/initialized`` / ``ping``;
* ``tools/list``: one tool, ``ask`` (``message``, optional ``session``);
* ``tools/call`` ``ask``: runs one turn on the agent's session (a new ``mcp-…`` one without
  ``session``). With a ``progressToken`` each phase of the turn (a tool running, thinking,
  answering, a retry) is a ``notifications/progress``. The result is the answer's text plus a line
  naming the session, ``structuredContent`` ``{session, text}``, and ``isError: true`` when the
  turn failed (a busy session included: that is this protocol's "busy", the model can retry);
* ``prompts/list`` / ``prompts/get``: the agent's skills, each a prompt carrying the skill's
  instructions (optional argument ``request`` appended);
* ``resources/list`` / ``resources/read``: the agent's sessions as transcripts, when the server
  was given them (:mod:`.resources`);
* ``notifications/cancelled``: the request it names stops, which aborts its turn (no answer is
  sent for it, as the protocol says).

An unknown method is ``-32601``; bad params ``-32602``; anything before ``initialize`` but
``ping`` ``-32600``. Transports send what :meth:`McpConnection.handle` returns, and hand it a
``notify`` that sends a notification on the request's own channel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from fastagent_cli.contract import Agent, AgentEvent
from fastagent_cli.control import SessionCollection
from fastagent_cli.serving.face_kit import AgentIdentity, describe_event, new_session_id, run_turn
from fastagent_cli.serving.faces.mcp.resources import ResourceError, list_sessions, read_session

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SUPPORTED_VERSIONS",
    "McpConnection",
    "McpServer",
    "Notify",
    "error_message",
    "is_request",
]

SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Newest first."""
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
ASK = "ask"

Notify = Callable[[dict[str, Any]], Awaitable[None]]
Message = dict[str, Any]


def error_message(request_id: Any, code: int, message: str) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def is_request(message: Any) -> bool:
    return isinstance(message, dict) and "id" in message and isinstance(message.get("method"), str)


class _ParamsError(Exception):
    pass


class McpServer:
    """What every connection serves: the agent and how it presents itself."""

    def __init__(
        self, agent: Agent, identity: AgentIdentity, sessions: SessionCollection | None = None
    ) -> None:
        self.agent = agent
        self.identity = identity
        self.sessions = sessions
        """The sessions offered as resources (``None``: no resources)."""

    def ask_tool(self) -> Message:
        name = self.identity.name
        return {
            "name": ASK,
            "title": f"Ask {name}",
            "description": (
                f"Send a message to the {name} agent and get its answer. {self.identity.description} "
                "Pass the session from a previous answer to continue that conversation."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "What to ask or tell the agent."},
                    "session": {
                        "type": "string",
                        "description": "A session an earlier answer named, to continue it (omit: a new one).",
                    },
                },
                "required": ["message"],
                "additionalProperties": False,
            },
            "outputSchema": {
                "type": "object",
                "properties": {"session": {"type": "string"}, "text": {"type": "string"}},
                "required": ["session", "text"],
            },
        }


class McpConnection:
    """One MCP session's state: negotiated, and the requests it is running (to cancel them)."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.protocol_version: str | None = None
        self._running: dict[tuple[str, Any], asyncio.Task[Message]] = {}

    @property
    def busy(self) -> bool:
        """Whether a request of this session is running."""
        return bool(self._running)

    @property
    def initialized(self) -> bool:
        return self.protocol_version is not None

    async def handle(self, message: Any, notify: Notify) -> Message | None:
        """The answer to one incoming message (``None`` for notifications, responses, and a
        request the client cancelled)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return error_message(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
        method = message.get("method")
        if not isinstance(method, str):
            return None  # a response to a request of ours (we send none) or junk: nothing to say
        params = message.get("params")
        if params is None:
            params = {}
        if "id" not in message:
            self._notification(method, params)
            return None
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return error_message(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
        if not isinstance(params, dict):
            return error_message(request_id, INVALID_PARAMS, "Invalid params: must be an object")
        task = asyncio.ensure_future(self._request(request_id, method, params, notify))
        key = _key(request_id)
        self._running[key] = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the transport itself is going away
            return None  # cancelled by notifications/cancelled: no answer is sent
        finally:
            if self._running.get(key) is task:
                del self._running[key]

    def cancel_all(self) -> None:
        for task in self._running.values():
            task.cancel()

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict):
            task = self._running.get(_key(params.get("requestId")))
            if task is not None:
                task.cancel()

    async def _request(self, request_id: Any, method: str, params: dict[str, Any], notify: Notify) -> Message:
        try:
            if method == "initialize":
                result = self._initialize(params)
            elif method == "ping":
                result = {}
            elif not self.initialized:
                return error_message(request_id, INVALID_REQUEST, "Invalid Request: send initialize first")
            elif method == "tools/list":
                result = {"tools": [self.server.ask_tool()]}
            elif method == "tools/call":
                result = await self._call_tool(params, notify)
            elif method == "prompts/list":
                result = {"prompts": self._prompts()}
            elif method == "prompts/get":
                result = await self._get_prompt(params)
            elif method == "resources/list" and self.server.sessions is not None:
                result = await list_sessions(self.server.sessions, params.get("cursor"))
            elif method == "resources/read" and self.server.sessions is not None:
                result = await read_session(self.server.sessions, params.get("uri"))
            else:
                return error_message(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")
        except _ParamsError as exc:
            return error_message(request_id, INVALID_PARAMS, f"Invalid params: {exc}")
        except ResourceError as exc:
            return error_message(request_id, exc.code, exc.message)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _initialize(self, params: dict[str, Any]) -> Message:
        offered = params.get("protocolVersion")
        version = offered if offered in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0]
        self.protocol_version = version
        identity = self.server.identity
        capabilities: Message = {"tools": {"listChanged": False}, "prompts": {"listChanged": False}}
        if self.server.sessions is not None:
            capabilities["resources"] = {"listChanged": False, "subscribe": False}
        return {
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": identity.name, "title": identity.name, "version": identity.version},
            "instructions": (
                f"{identity.description} Use the `{ASK}` tool to talk to this agent; its answers name "
                "the session to pass back to continue a conversation."
            ),
        }

    async def _call_tool(self, params: dict[str, Any], notify: Notify) -> Message:
        name = params.get("name")
        if name != ASK:
            raise _ParamsError(f"unknown tool {name!r} (this server has {ASK!r})")
        arguments = params.get("arguments") or {}
        message = arguments.get("message") if isinstance(arguments, dict) else None
        session = arguments.get("session") if isinstance(arguments, dict) else None
        if not isinstance(message, str) or not message.strip():
            return _tool_error('"message" must be a non-empty string')
        if session is not None and (not isinstance(session, str) or not session.strip()):
            return _tool_error('"session" must be a non-empty string (or left out for a new session)')
        session = session or new_session_id("mcp")
        token = _progress_token(params)
        report = _progress_reporter(token, notify) if token is not None else None
        outcome = await run_turn(self.server.agent, session, message, report, trigger="mcp")
        if outcome.busy:
            return _tool_error(
                f"session {session} is busy with another turn; try again when it ends, or leave "
                "`session` out to start a new conversation"
            )
        if outcome.failed is not None:
            return _tool_error(f"the agent's turn failed: {outcome.failed.details}")
        return {
            "content": [
                {"type": "text", "text": outcome.text},
                {"type": "text", "text": f"(session: {session}; pass it as `session` to continue)"},
            ],
            "structuredContent": {"session": session, "text": outcome.text},
            "isError": False,
        }

    def _prompts(self) -> list[Message]:
        argument = {"name": "request", "description": "What to apply the skill to.", "required": False}
        return [
            {"name": s.name, "description": s.description, "arguments": [argument]}
            for s in self.server.identity.skills()
        ]

    async def _get_prompt(self, params: dict[str, Any]) -> Message:
        name = params.get("name")
        skill = next((s for s in self.server.identity.skills() if s.name == name), None)
        if skill is None:
            raise _ParamsError(f"unknown prompt {name!r}")
        arguments = params.get("arguments") or {}
        request = arguments.get("request") if isinstance(arguments, dict) else None
        try:
            text = await skill.instructions()
        except OSError as exc:
            raise _ParamsError(f"cannot read the skill {name!r}: {exc.strerror or exc}") from None
        if isinstance(request, str) and request.strip():
            text = f"{text.rstrip()}\n\n{request.strip()}"
        return {
            "description": skill.description,
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }


def _key(request_id: Any) -> tuple[str, Any]:
    return (type(request_id).__name__, request_id)


def _tool_error(text: str) -> Message:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _progress_token(params: dict[str, Any]) -> str | int | None:
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def _progress_reporter(token: str | int, notify: Notify) -> Callable[[AgentEvent], Awaitable[None]]:
    """A callback sending one ``notifications/progress`` each time the turn's phase changes."""
    sent: list[str] = []

    async def report(event: AgentEvent) -> None:
        line = describe_event(event)
        if line is None or (sent and sent[-1] == line):
            return
        sent.append(line)
        params = {"progressToken": token, "progress": len(sent), "message": line}
        await notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    return report
