"""OpenAI's error JSON, and a failed turn as the status and error an OpenAI client expects.

Every error the face answers is ``{"error": {"message", "type", "param", "code"}}`` (what the
official SDKs parse into ``openai.APIStatusError`` and its subclasses by status):

=========================  ======  =========================  =========================
what                       status  type                       code
=========================  ======  =========================  =========================
a bad request body         400     ``invalid_request_error``  (the field's own, or null)
no / a wrong bearer token  401     ``invalid_request_error``  ``invalid_api_key``
an unknown model id        404     ``invalid_request_error``  ``model_not_found``
an unknown path / method   404     ``invalid_request_error``  ``unknown_url``
a body over the cap        413     ``invalid_request_error``  ``request_too_large``
the session is busy        409     ``invalid_request_error``  ``session_busy``
the context is full        400     ``invalid_request_error``  ``context_length_exceeded``
the model failed           502     ``server_error``           ``model_error``
any other failed turn      500     ``server_error``           the turn's code
=========================  ======  =========================  =========================

A busy session answers ``Retry-After: 1``: it is free again once the running turn settles (the
SDKs retry a 409 by themselves, twice by default).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from fastagent_cli.contract import SESSION_BUSY_CODE, Failed, json_text

__all__ = [
    "INVALID",
    "error_body",
    "error_response",
    "failure_error",
    "failure_response",
    "not_found",
]

INVALID = "invalid_request_error"
SERVER = "server_error"


def error_body(
    message: str, type_: str = INVALID, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def error_response(
    status: int,
    message: str,
    type_: str = INVALID,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    return web.Response(
        text=json_text(error_body(message, type_, param, code)),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def not_found(method: str, path: str) -> web.Response:
    return error_response(404, f"Invalid URL ({method} {path})", code="unknown_url")


def failure_error(event: Failed) -> tuple[int, dict[str, Any]]:
    """The status and error JSON of a turn that failed."""
    code = event.code
    if code == SESSION_BUSY_CODE:
        message = f"{event.details} (retry once the running turn has settled)"
        return 409, error_body(message, INVALID, None, SESSION_BUSY_CODE)
    if code == "context_overflow":
        return 400, error_body(event.details, INVALID, "messages", "context_length_exceeded")
    if code == "invalid_schema":  # the request's response_format the agent cannot use
        return 400, error_body(event.details, INVALID, "response_format", code)
    if code == "model_error":
        return 502, error_body(event.details, SERVER, None, code)
    return 500, error_body(event.details, SERVER, None, code or "internal_error")


def failure_response(event: Failed) -> web.Response:
    status, body = failure_error(event)
    headers = {"Retry-After": "1"} if status == 409 else None
    return web.Response(text=json_text(body), status=status, content_type="application/json", headers=headers)
