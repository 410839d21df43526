from __future__ import annotations

import email.utils
import json
import time

import httpx
import pytest

from fastagent_cli.models.http_errors import (
    classify_status,
    error_from_exception,
    error_from_response,
    parse_retry_after,
)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (403, False), (404, False), (422, False), (408, True), (429, True)]
    + [(500, True), (502, True), (503, True), (529, True)],
)
def test_classify_status(status: int, retryable: bool) -> None:
    assert classify_status(status) is retryable


def test_retry_after_seconds_ms_and_case() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after(httpx.Headers({"retry-after": "1.5"})) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "-4"}) == 0.0


def test_retry_after_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    value = parse_retry_after({"Retry-After": when})
    assert value is not None and 27 <= value <= 31
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert parse_retry_after({"Retry-After": past}) == 0.0


def body(value: object) -> bytes:
    return json.dumps(value).encode()


def test_openai_style_error() -> None:
    err = error_from_response(
        "openai",
        401,
        body({"error": {"message": "Incorrect API key provided: sk-xx.", "type": "invalid_request_error"}}),
        {},
    )
    assert err.message == "openai: 401 Unauthorized: Incorrect API key provided: sk-xx."
    assert err.status == 401 and err.retryable is False and err.retry_after is None


def test_anthropic_style_error_529() -> None:
    raw = body({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    err = error_from_response("anthropic", 529, raw, {"retry-after": "4"})
    assert err.message == "anthropic: 529 Overloaded"
    assert err.retryable is True and err.retry_after == 4.0


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"error": "model not loaded"}, "model not loaded"),
        ({"message": "bad thing"}, "bad thing"),
        ({"detail": "Not Found"}, "Not Found"),
        (
            {"detail": [{"loc": ["body"], "msg": "field required"}]},
            '[{"loc": ["body"], "msg": "field required"}]',
        ),
        ([{"error": {"code": 400, "message": "Gemini says no"}}], "Gemini says no"),
        ({"error": {"code": "rate_limited"}}, "rate_limited"),
    ],
)
def test_other_json_shapes(payload: object, expected: str) -> None:
    err = error_from_response("p", 400, body(payload), {})
    assert err.message == f"p: 400 Bad Request: {expected}"


def test_text_body_is_trimmed_to_one_line() -> None:
    raw = b"  <html>\n<body>Bad gateway\r\n  upstream   died</body></html>\n" + b"x" * 2000
    err = error_from_response("groq", 502, raw, {})
    assert err.message.startswith("groq: 502 Bad Gateway: <html> <body>Bad gateway upstream died")
    assert "\n" not in err.message and len(err.message) < 600
    assert err.retryable


def test_empty_body_and_unknown_status() -> None:
    assert error_from_response("x", 503, b"", {}).message == "x: 503 Service Unavailable"
    assert error_from_response("x", 599, b"oops", {}).message == "x: 599: oops"


def test_multiline_provider_message_becomes_one_line() -> None:
    err = error_from_response("openai", 400, body({"error": {"message": "line one\nline two"}}), {})
    assert err.message == "openai: 400 Bad Request: line one line two"


def request() -> httpx.Request:
    return httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")


@pytest.mark.parametrize(
    ("exc", "fragment", "retryable"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), "connection failed: [Errno 111]", True),
        (httpx.ConnectTimeout("timed out"), "connection timed out", True),
        (httpx.ReadTimeout("read"), "timed out waiting for the response", True),
        (httpx.PoolTimeout(""), "every model connection is busy", True),
        (
            httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
            "stream interrupted: peer closed connection",
            True,
        ),
        (httpx.ReadError("reset"), "stream interrupted: reset", True),
        (httpx.WriteError("broken pipe"), "connection error: broken pipe", True),
        (httpx.UnsupportedProtocol("Request URL is missing a scheme"), "invalid request", False),
        (RuntimeError("boom"), "request failed: boom", False),
    ],
)
def test_error_from_exception(exc: Exception, fragment: str, retryable: bool) -> None:
    err = error_from_exception("openai", exc)
    assert err.message.startswith("openai: ")
    assert fragment in err.message
    assert err.retryable is retryable
    assert err.status is None


def _refused_at(url: str) -> httpx.ConnectError:
    exc = httpx.ConnectError("All connection attempts failed", request=httpx.Request("POST", url))
    exc.__cause__ = ConnectionRefusedError(111, "Connection refused")
    return exc


def test_a_refused_remote_connection_names_the_url_and_stays_retryable() -> None:
    err = error_from_exception("vllm", _refused_at("http://10.1.2.3:8000/v1/chat/completions?x=1"))
    assert err.message == "vllm: connection refused by http://10.1.2.3:8000/v1/chat/completions"
    assert err.retryable


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
def test_a_refused_connection_on_this_machine_is_final(host: str) -> None:
    err = error_from_exception("local", _refused_at(f"http://{host}:8080/v1/chat/completions"))
    assert not err.retryable
    assert f"nothing is listening at http://{host}:8080/v1/chat/completions" in err.message
    assert "is the model server running?" in err.message


def test_other_connection_failures_name_the_url() -> None:
    exc = httpx.ConnectTimeout("timed out", request=httpx.Request("POST", "https://api.example/v1/messages"))
    err = error_from_exception("anthropic", exc)
    assert err.message == (
        "anthropic: connection timed out: timed out (https://api.example/v1/messages) (connect timeout; "
        "set connect_timeout in [engine], or timeouts.connect for the provider in models.json)"
    )


def test_a_context_overflow_answer_says_what_to_do_and_is_not_retried() -> None:
    body = json.dumps(
        {
            "error": {
                "code": 500,
                "message": "the request exceeds the available context size, try increasing it",
            }
        }
    ).encode()
    err = error_from_response("local", 500, body, {})
    assert not err.retryable
    assert err.message.startswith("local: 500 Internal Server Error: the request exceeds the available")
    assert "no longer fits the model's context window: start a new session (/new in chat" in err.message


def test_a_404_names_the_url_and_hints_only_where_it_helps() -> None:
    bare = error_from_response("v", 404, b"404: Not Found", {}, "http://h:8000/chat/completions?x=1")
    assert bare.message == "v: 404 Not Found at http://h:8000/chat/completions: " + (
        "does the provider's baseUrl in models.json end in /v1?"
    )
    unknown = error_from_response("v", 404, b'{"detail": "Not Found"}', {}, "http://h/v1/other")
    assert (
        unknown.message
        == "v: 404 Not Found at http://h/v1/other: is the provider's baseUrl in models.json right?"
    )
    model = body({"error": {"message": "The model `gpt-9` does not exist"}})
    explained = error_from_response("openai", 404, model, {}, "https://api.openai.com/v1/chat/completions")
    assert explained.message == (
        "openai: 404 Not Found at https://api.openai.com/v1/chat/completions: "
        "The model `gpt-9` does not exist"
    )
