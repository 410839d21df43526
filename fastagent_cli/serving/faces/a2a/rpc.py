"""``POST /a2a``: the A2A JSON-RPC endpoint, and ``GET /.well-known/agent-card.json``.

* Send (``SendMessage`` / ``message/send``): the message's text parts become one turn on the
  session its ``contextId`` names (a new ``a2a-…`` context without one). The answer is the task
  once it ended (``returnImmediately: true`` or 0.3's ``blocking: false``: at once, still
  ``working``; poll ``GetTask``). A non-text part is ``-32005``; a ``taskId`` (continuing a task)
  ``-32001`` when unknown, else ``-32004``: a task here takes one message, the context carries
  the conversation.
* Stream (``SendStreamingMessage`` / ``message/stream``): ``text/event-stream``, one JSON-RPC
  response per event: the task, a status update per phase (``working`` with a note such as
  "running tool bash"), the answer as artifact chunks (``append``, ``lastChunk``), then the final
  status. A client that leaves does not stop the task (cancel it with ``CancelTask``).
* ``GetTask`` / ``tasks/get`` (``historyLength``), ``CancelTask`` / ``tasks/cancel`` (``-32002``
  once the task ended): the task, however it was started.
* The transport answers as ``/invoke`` does: ``405`` for other methods, ``401`` without the
  bearer token (when one is set), ``415`` unless JSON, ``413`` over the 1 MiB cap; a body that is
  not JSON is ``-32700``, an unknown method ``-32601``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from fastagent_cli.serving.body import MAX_BODY_BYTES, read_body_or_413, refuse_method, text_response
from fastagent_cli.serving.face_kit import new_session_id
from fastagent_cli.serving.faces.a2a.tasks import TaskBoard, TaskRecord, Update
from fastagent_cli.serving.faces.a2a.wire import DIALECTS, Dialect, MessageError, parse_message
from fastagent_cli.serving.invoke_auth import InvokeToken, is_authorized, unauthorized
from fastagent_cli.serving.router import Handler
from fastagent_cli.serving.sse import SSE_HEADERS

__all__ = ["A2A_PATH", "create_rpc_handler"]

A2A_PATH = "/a2a"
PING_INTERVAL_S = 30.0

Json = dict[str, Any]


def _answer(request_id: Any, result: Any) -> Json:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str) -> Json:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _json(body: Json) -> web.Response:
    return web.Response(text=json.dumps(body, ensure_ascii=False), content_type="application/json")


class A2aRpc:
    def __init__(self, board: TaskBoard, token: InvokeToken | None) -> None:
        self.board = board
        self.token = token

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        refused = refuse_method(request)
        if refused is not None:
            return refused
        if self.token is not None and not is_authorized(request, self.token):
            return unauthorized()
        if request.content_type != "application/json":
            return text_response("Content-Type must be application/json\n", 415)
        raw = await read_body_or_413(request, MAX_BODY_BYTES, "body too large\n")
        if isinstance(raw, web.Response):
            return raw
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            return _json(_error(None, -32700, "Parse error: the body is not JSON"))
        if (
            not isinstance(body, dict)
            or body.get("jsonrpc") != "2.0"
            or not isinstance(body.get("method"), str)
        ):
            return _json(_error(None, -32600, "Invalid Request: not a JSON-RPC 2.0 request"))
        request_id = body.get("id")
        method = body["method"]
        found = DIALECTS.get(method)
        if found is None:
            return _json(_error(request_id, -32601, f"Method not found: {method}"))
        operation, dialect = found
        params = body.get("params")
        try:
            if operation == "stream":
                return await self._stream(request, request_id, dialect, self._send(params))
            if operation == "send":
                record = self._send(params)
                if not _returns_at_once(params):
                    await record.finished.wait()
                return _json(_answer(request_id, dialect.send_result(record)))
            record = self._find(params)
            if operation == "cancel":
                if record.terminal:
                    raise MessageError(-32002, f"Task not cancelable: task {record.id} is {record.state}")
                self.board.cancel(record)
                await record.finished.wait()
                return _json(_answer(request_id, dialect.task(record)))
            return _json(_answer(request_id, dialect.task(record, _history_length(params))))
        except MessageError as exc:
            return _json(_error(request_id, exc.code, exc.message))

    def _send(self, params: Any) -> TaskRecord:
        message = parse_message(params)
        if message.task_id is not None:
            known = self.board.get(message.task_id)
            if known is None:
                raise MessageError(-32001, f"Task not found: {message.task_id}")
            raise MessageError(
                -32004,
                f"Unsupported operation: task {known.id} takes no more messages; send a new message "
                f"with contextId {known.context_id} to continue the conversation",
            )
        context = message.context_id or new_session_id("a2a")
        record = TaskRecord(new_session_id("task"), context, message.message_id, message.text)
        return self.board.start(record)

    def _find(self, params: Any) -> TaskRecord:
        task_id = params.get("id") if isinstance(params, dict) else None
        if not isinstance(task_id, str) or not task_id:
            raise MessageError(-32602, 'Invalid params: "id" must be a task id')
        record = self.board.get(task_id)
        if record is None:
            raise MessageError(-32001, f"Task not found: {task_id}")
        return record

    async def _stream(
        self, request: web.BaseRequest, request_id: Any, dialect: Dialect, record: TaskRecord
    ) -> web.StreamResponse:
        queue: asyncio.Queue[Update] = asyncio.Queue()
        record.listeners.append(queue)
        try:
            response = web.StreamResponse(status=200, headers=SSE_HEADERS)
            await response.prepare(request)

            async def send(item: Json) -> None:
                data = json.dumps(_answer(request_id, item), ensure_ascii=False)
                await response.write(f"data: {data}\n\n".encode())

            await send(dialect.stream_task(record))
            streamed = False
            while True:
                try:
                    update = await asyncio.wait_for(queue.get(), PING_INTERVAL_S)
                except TimeoutError:
                    await response.write(b": ping\n\n")
                    continue
                if isinstance(update, str):
                    await send(dialect.artifact_update(record, update, append=streamed, last=False))
                    streamed = True
                    continue
                if update.terminal:
                    if streamed:
                        await send(dialect.artifact_update(record, "", append=True, last=True))
                    await send(dialect.status_update(record, update))
                    break
                await send(dialect.status_update(record, update))
            await response.write_eof()
            return response
        finally:
            record.listeners.remove(queue)


def _returns_at_once(params: Any) -> bool:
    config = params.get("configuration") if isinstance(params, dict) else None
    if not isinstance(config, dict):
        return False
    return config.get("returnImmediately") is True or config.get("blocking") is False


def _history_length(params: Any) -> int | None:
    value = params.get("historyLength") if isinstance(params, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def create_rpc_handler(board: TaskBoard, token: InvokeToken | None) -> Handler:
    return A2aRpc(board, token).handle
