"""An MCP stdio server that speaks only the wire before 2026-07-28 (revision 2025-11-25), as
servers built on older SDKs do: newline-delimited JSON-RPC, the ``initialize`` handshake,
``resources/subscribe`` with ``notifications/resources/updated``, and ``-32601 Method not found``
for ``server/discover`` and ``subscriptions/listen``. Written by hand (the installed SDK serves
both eras, so it cannot stand in for an old server).

It serves the resource ``note://current`` (the text of the file ``NOTE_FILE`` names, polled) and
two tools: ``add`` and ``crash`` (exits mid-call)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

VERSION = "2025-11-25"
NOTE_URI = "note://current"
_out = threading.Lock()
_subscribed: set[str] = set()


def send(message: dict[str, Any]) -> None:
    with _out:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def note() -> str:
    path = os.environ.get("NOTE_FILE")
    try:
        return Path(path).read_text() if path else "(no note)"
    except FileNotFoundError:
        return "(no note)"


def poll() -> None:
    last = note()
    while True:
        time.sleep(0.05)
        current = note()
        if current != last:
            last = current
            if NOTE_URI in _subscribed:
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/resources/updated",
                        "params": {"uri": NOTE_URI},
                    }
                )


TOOLS = [
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
    {"name": "crash", "description": "Exit mid-call.", "inputSchema": {"type": "object", "properties": {}}},
]


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {
            "protocolVersion": VERSION,
            "capabilities": {"tools": {}, "resources": {"subscribe": True}},
            "serverInfo": {"name": "old-server", "version": "0.1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        if params.get("name") == "crash":
            os._exit(3)
        args = params.get("arguments") or {}
        total = int(args.get("a", 0)) + int(args.get("b", 0))
        return {"content": [{"type": "text", "text": str(total)}], "isError": False}
    if method == "resources/list":
        return {"resources": [{"uri": NOTE_URI, "name": "note", "mimeType": "text/plain"}]}
    if method == "resources/read":
        if params.get("uri") != NOTE_URI:
            raise LookupError(f"no such resource: {params.get('uri')}")
        return {"contents": [{"uri": NOTE_URI, "mimeType": "text/plain", "text": note()}]}
    if method == "resources/subscribe":
        if params.get("uri") != NOTE_URI:
            raise LookupError(f"no such resource: {params.get('uri')}")
        _subscribed.add(NOTE_URI)
        return {}
    if method == "resources/unsubscribe":
        _subscribed.discard(str(params.get("uri")))
        return {}
    raise NotImplementedError(method)


def main() -> None:
    threading.Thread(target=poll, daemon=True).start()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification or a response: nothing to answer
        try:
            result = answer(message["method"], message.get("params") or {})
        except NotImplementedError:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
        except LookupError as exc:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32002, "message": str(exc)}})
        else:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
