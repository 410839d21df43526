"""The OpenAI face's refusals over raw HTTP: OpenAI's error JSON with the matching status, and the
bearer token when others can reach the face."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from tests.serving.openai.conftest import Spawn
from tests.serving.serving_proc import ServerProcess

USER = [{"role": "user", "content": "hi"}]
ERROR_KEYS = {"message", "type", "param", "code"}

CASES: list[tuple[str, dict[str, Any], int, str | None, str | None]] = [
    ("/chat/completions", {"messages": USER}, 400, "model", None),
    ("/chat/completions", {"model": "nope", "messages": USER}, 404, "model", "model_not_found"),
    ("/chat/completions", {"model": "helper", "messages": []}, 400, "messages", None),
    (
        "/chat/completions",
        {"model": "helper", "messages": [{"role": "assistant", "content": "x"}]},
        400,
        "messages",
        None,
    ),
    (
        "/chat/completions",
        {"model": "helper", "messages": [{"role": "tool", "content": "x", "tool_call_id": "1"}]},
        400,
        "messages[0]",
        None,
    ),
    (
        "/chat/completions",
        {"model": "helper", "messages": USER, "tools": [{"type": "function", "function": {"name": "f"}}]},
        400,
        "tools",
        "unsupported_parameter",
    ),
    (
        "/chat/completions",
        {
            "model": "helper",
            "messages": USER,
            "response_format": {"type": "json_schema", "json_schema": {"schema": {}}},
        },
        400,
        "response_format.json_schema.name",
        None,
    ),
    ("/chat/completions", {"model": "helper", "messages": USER, "n": 2}, 400, "n", "unsupported_value"),
    (
        "/chat/completions",
        {"model": "helper", "messages": USER, "stream_options": {"include_usage": True}},
        400,
        "stream_options",
        None,
    ),
    ("/chat/completions", {"model": "helper", "messages": USER, "stream": "yes"}, 400, "stream", None),
    (
        "/chat/completions",
        {
            "model": "helper",
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}],
                }
            ],
        },
        400,
        "messages[0].content[0]",
        "invalid_image_url",
    ),
    (
        "/chat/completions",
        {
            "model": "helper",
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}],
                }
            ],
        },
        400,
        "messages[0].content[0]",
        None,
    ),
    (
        "/chat/completions",
        {
            "model": "helper",
            "messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}],
        },
        400,
        "messages[0].content[0]",
        None,
    ),
    ("/responses", {"model": "helper"}, 400, "input", None),
    (
        "/responses",
        {"model": "helper", "input": "x", "previous_response_id": "resp_unknown"},
        400,
        "previous_response_id",
        "previous_response_not_found",
    ),
    (
        "/responses",
        {"model": "helper", "input": "x", "text": {"format": {"type": "xml"}}},
        400,
        "text.format.type",
        "unsupported_value",
    ),
    (
        "/responses",
        {"model": "helper", "input": [{"type": "function_call_output", "call_id": "1", "output": "x"}]},
        400,
        "input[0]",
        None,
    ),
]


def assert_error(body: dict[str, Any]) -> dict[str, Any]:
    assert set(body) == {"error"}, body
    assert set(body["error"]) == ERROR_KEYS, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    error: dict[str, Any] = body["error"]
    return error


async def test_bad_requests_answer_openai_errors(serve_probe: Spawn) -> None:
    async with serve_probe() as (server, base), aiohttp.ClientSession() as http:
        for path, body, status, param, code in CASES:
            async with http.post(f"{base}{path}", json=body) as response:
                assert response.status == status, (path, body, await response.text())
                assert response.content_type == "application/json"
                error = assert_error(await response.json())
                assert (error["type"], error["param"], error["code"]) == (
                    "invalid_request_error",
                    param,
                    code,
                ), body
        async with http.post(
            f"{base}/chat/completions", data=b"{not json", headers={"content-type": "application/json"}
        ) as response:
            assert response.status == 400
            assert_error(await response.json())
        async with http.post(
            f"{base}/chat/completions",
            data=json.dumps({"model": "helper"}),
            headers={"content-type": "text/plain"},
        ) as response:
            assert response.status == 415
            assert_error(await response.json())
        big = json.dumps({"model": "helper", "messages": [{"role": "user", "content": "x" * (1 << 20)}]})
        upload = io.BytesIO(big.encode())
        async with http.post(
            f"{base}/chat/completions", data=upload, headers={"content-type": "application/json"}
        ) as response:
            assert response.status == 413
            assert assert_error(await response.json())["code"] == "request_too_large"
        async with http.get(f"{base}/embeddings") as response:
            assert response.status == 404
            assert assert_error(await response.json())["code"] == "unknown_url"
        async with http.get(f"{base}/chat/completions") as response:
            assert response.status == 405 and response.headers["Allow"] == "POST"
            assert_error(await response.json())
        async with http.post(f"{base}/models", json={}) as response:
            assert response.status == 405 and response.headers["Allow"] == "GET"
        assert "Traceback" not in server.text


async def test_off_loopback_the_face_needs_the_token(serve_probe: Spawn, probe_agent: Path) -> None:
    async with ServerProcess.spawn("start", str(probe_agent), "--port", "0", "--bind", "0.0.0.0") as server:
        code = await server.wait()
    assert code == 1
    assert "[http] openai = true needs a bearer token when others can reach it" in server.text
    assert "Traceback" not in server.text
    env = {"FASTAGENT_TOKEN": "s3cret-token"}
    async with serve_probe("--bind", "0.0.0.0", env=env) as (server, base):
        await server.wait_for(
            r"OpenAI-compatible API: http://127\.0\.0\.1:\d+/v1 .*API key: \$FASTAGENT_TOKEN"
        )
        async with openai.AsyncOpenAI(base_url=base, api_key="wrong", max_retries=0) as api:
            with pytest.raises(openai.AuthenticationError) as refused:
                await api.models.list()
            assert refused.value.code == "invalid_api_key"
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{base}/chat/completions", json={}) as response,
        ):
            assert response.status == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")
            assert_error(await response.json())
        async with openai.AsyncOpenAI(base_url=base, api_key="s3cret-token", max_retries=0) as api:
            answer = await api.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": "hi"}]
            )
            assert json.loads(answer.choices[0].message.content or "")["seen"] == ["user: hi"]
