"""Verifying a key: one request per API shape; valid / invalid (401, 403) / inconclusive."""

from __future__ import annotations

import socket

import pytest

from fastagent_cli.auth.verify import verification_request, verify_key
from fastagent_cli.models.registry import ModelRegistry, ProviderInfo
from tests.auth.fake_key_server import KeyServer


def openai_at(base_url: str) -> ProviderInfo:
    provider = ModelRegistry().providers["openai"]
    provider.base_url = base_url
    return provider


def anthropic_at(base_url: str) -> ProviderInfo:
    provider = ModelRegistry().providers["anthropic"]
    provider.base_url = base_url
    return provider


async def test_openai_good_key_is_valid_with_one_bearer_request(key_server: KeyServer) -> None:
    verdict = await verify_key(openai_at(key_server.openai_base), "sk-good")
    assert (verdict.outcome, verdict.message) == ("valid", "")
    assert len(key_server.requests) == 1
    method, path, headers = key_server.requests[0]
    assert (method, path, headers["authorization"]) == ("GET", "/v1/models", "Bearer sk-good")


async def test_openai_bad_key_is_invalid_with_the_providers_message(key_server: KeyServer) -> None:
    verdict = await verify_key(openai_at(key_server.openai_base), "sk-wrong")
    assert verdict.outcome == "invalid"
    assert verdict.message == "openai: 401 Unauthorized: Incorrect API key provided"


async def test_anthropic_shape_uses_x_api_key_and_version(key_server: KeyServer) -> None:
    assert (await verify_key(anthropic_at(key_server.anthropic_base), "sk-good")).valid
    method, path, headers = key_server.requests[0]
    assert (method, path) == ("GET", "/anthropic/v1/models")
    assert headers["x-api-key"] == "sk-good"
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    assert (await verify_key(anthropic_at(key_server.anthropic_base), "nope")).invalid


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("sk-quota", "openai: 429 Too Many Requests: You exceeded your current quota"),
        ("sk-down", "openai: 503 Service Unavailable: upstream is down"),
    ],
)
async def test_quota_and_server_errors_are_inconclusive(
    key_server: KeyServer, key: str, message: str
) -> None:
    verdict = await verify_key(openai_at(key_server.openai_base), key)
    assert (verdict.outcome, verdict.message) == ("inconclusive", message)


async def test_closed_connection_is_inconclusive(key_server: KeyServer) -> None:
    verdict = await verify_key(openai_at(key_server.openai_base), "sk-close")
    assert verdict.outcome == "inconclusive"
    assert verdict.message.startswith("openai: ")
    assert "\n" not in verdict.message


async def test_refused_connection_is_inconclusive() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    verdict = await verify_key(openai_at(f"http://127.0.0.1:{port}/v1"), "sk-good")
    assert verdict.outcome == "inconclusive"
    assert verdict.message.startswith(f"openai: nothing is listening at http://127.0.0.1:{port}/v1/models")


async def test_403_is_invalid_and_404_inconclusive(key_server: KeyServer) -> None:
    verdict = await verify_key(openai_at(key_server.openai_base), "sk-forbidden")
    assert (verdict.outcome, verdict.message) == (
        "invalid",
        "openai: 403 Forbidden: This key is not allowed here",
    )
    provider = openai_at(f"{key_server.origin}/nowhere")  # aiohttp answers 404 there
    verdict = await verify_key(provider, "sk-good")
    assert verdict.outcome == "inconclusive"
    assert verdict.message.startswith("openai: 404 Not Found")


def test_request_shapes_and_custom_headers() -> None:
    provider = openai_at("https://proxy.example/v1/")
    provider.headers = {"X-Team": "a"}
    url, headers = verification_request(provider, "k")
    assert url == "https://proxy.example/v1/models"
    assert headers["Authorization"] == "Bearer k" and headers["X-Team"] == "a"
    url, headers = verification_request(anthropic_at("https://gw.example/v1"), "k")
    assert url == "https://gw.example/v1/models"
    url, _ = verification_request(anthropic_at("https://api.anthropic.com"), "k")
    assert url == "https://api.anthropic.com/v1/models"
