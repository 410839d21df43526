"""The model transport over TLS, against local HTTPS servers with a test CA (trustme): trust
through a provider's ``caFile`` and through ``SSL_CERT_FILE``, long streams, keep-alive reuse,
servers that close without ``close_notify``, a stalled handshake, a local ``CONNECT`` proxy, and
the failures a retry cannot fix (each at once, one line, not retryable)."""

from __future__ import annotations

import asyncio
import datetime
import ssl
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
import trustme

from fastagent_cli.errors import ProviderError
from fastagent_cli.models.http_pool import PoolLimits
from fastagent_cli.models.openai_chat import OpenAIChatClient
from fastagent_cli.models.types import AssistantMessage, ModelInfo, ModelRequest, StreamDelta
from tests.fakes.fake_providers import FakeOpenAI, openai_chunk, openai_reply
from tests.models.tls_servers import ConnectProxy, RawTlsServer, StalledServer

PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def server_context(ca: trustme.CA, *names: str, **issue: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*(names or ("localhost", "127.0.0.1")), **issue).configure_cert(context)
    return context


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*PROXY_VARS, "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def tls_fake(ca: trustme.CA) -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(tls=server_context(ca), delay=0) as server:
        yield server


@pytest.fixture
async def client() -> AsyncIterator[OpenAIChatClient]:
    c = OpenAIChatClient(pool=PoolLimits(connect_timeout_s=2, first_byte_timeout_s=5, read_timeout_s=5))
    yield c
    await c.aclose()


def ask(model: ModelInfo, text: str = "hi") -> ModelRequest:
    return ModelRequest(
        model=model,
        system="",
        messages=[{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}],
        api_key="sk-test",
    )


async def run(client: OpenAIChatClient, model: ModelInfo) -> tuple[str, AssistantMessage]:
    text: list[str] = []
    final: AssistantMessage | None = None
    async with aclosing(client.stream(ask(model))) as stream:
        async for item in stream:
            if isinstance(item, StreamDelta):
                text.append(item.text)
            else:
                final = item
    assert final is not None
    return "".join(text), final


async def fails(client: OpenAIChatClient, model: ModelInfo) -> tuple[ProviderError, float]:
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await run(client, model)
    return caught.value, time.monotonic() - started


def tokens(count: int) -> list[str]:
    return [f"t{i} " for i in range(count)]


def stream_of(pieces: Sequence[str]) -> list[Any]:
    return [openai_chunk({"content": piece}) for piece in pieces]


# ----------------------------------------------------------------------------- it works


async def test_a_long_stream_arrives_whole_over_tls_trusted_by_ca_file(
    tls_fake: FakeOpenAI, client: OpenAIChatClient, ca_file: str
) -> None:
    pieces = tokens(3000)
    tls_fake.enqueue_stream(stream_of(pieces))
    text, final = await run(client, tls_fake.model_info(ca_file=ca_file))
    assert text == "".join(pieces)
    assert final["stopReason"] == "stop"


async def test_ssl_cert_file_is_trusted(
    tls_fake: FakeOpenAI, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    client = OpenAIChatClient()
    try:
        tls_fake.enqueue_stream(openai_reply("trusted"))
        assert (await run(client, tls_fake.model_info()))[0] == "trusted"
    finally:
        await client.aclose()


async def test_turns_reuse_one_kept_alive_tls_connection(
    tls_fake: FakeOpenAI, client: OpenAIChatClient, ca_file: str
) -> None:
    model = tls_fake.model_info(ca_file=ca_file)
    for i in range(5):
        tls_fake.enqueue_stream(openai_reply(f"turn {i}"))
        assert (await run(client, model))[0] == f"turn {i}"
    assert len({r.peer for r in tls_fake.requests}) == 1  # one TLS handshake for five turns


async def test_one_hundred_concurrent_streams_over_tls(
    tls_fake: FakeOpenAI, client: OpenAIChatClient, ca_file: str
) -> None:
    tls_fake.answer_always(stream_of(tokens(50)))
    model = tls_fake.model_info(ca_file=ca_file)
    texts = await asyncio.wait_for(asyncio.gather(*(run(client, model) for _ in range(100))), 60)
    assert all(text == "".join(tokens(50)) for text, _ in texts)


@pytest.mark.parametrize("close_notify", [False, True])
async def test_a_server_that_closes_with_or_without_close_notify_after_a_whole_answer(
    ca: trustme.CA, client: OpenAIChatClient, ca_file: str, close_notify: bool
) -> None:
    async with RawTlsServer(server_context(ca), RawTlsServer.sse("bye"), close_notify=close_notify) as server:
        text, final = await run(client, server.model_info(ca_file=ca_file))
    assert text == "bye" and final["stopReason"] == "stop"


async def test_a_cut_without_close_notify_before_any_text_is_transient(
    ca: trustme.CA, client: OpenAIChatClient, ca_file: str
) -> None:
    async with RawTlsServer(server_context(ca), b"", close_notify=False, complete=False) as server:
        err, _ = await fails(client, server.model_info(ca_file=ca_file))
    assert err.retryable and "stream interrupted" in err.message


async def test_a_stalled_tls_handshake_times_out_at_the_providers_connect_timeout(
    client: OpenAIChatClient,
) -> None:
    async with StalledServer() as server:
        model = server.model_info(timeouts={"connect": 0.5})
        err, elapsed = await fails(client, model)
    assert err.retryable  # a slow network is worth another try
    assert elapsed < 2.0
    assert err.message.startswith(
        "fake-openai: connection timed out: timed out after 0.5 s (https://localhost:"
    )
    assert "timeouts.connect" in err.message


async def test_https_proxy_tunnels_through_connect(
    tls_fake: FakeOpenAI, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        client = OpenAIChatClient()
        try:
            model = tls_fake.model_info(ca_file=ca_file)
            for i in range(3):
                tls_fake.enqueue_stream(openai_reply(f"via proxy {i}"))
                assert (await run(client, model))[0] == f"via proxy {i}"
        finally:
            await client.aclose()
    assert proxy.tunnels == [f"localhost:{tls_fake.origin_port}"]  # one tunnel, kept alive
    assert len({r.peer for r in tls_fake.requests}) == 1


async def test_a_proxy_that_refuses_connect_says_so(
    tls_fake: FakeOpenAI, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with ConnectProxy(answer=b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n") as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        client = OpenAIChatClient()
        try:
            err, _ = await fails(client, tls_fake.model_info(ca_file=ca_file))
        finally:
            await client.aclose()
    assert f"the proxy {proxy.url} refused CONNECT localhost:{tls_fake.origin_port}" in err.message
    assert "407 Proxy Authentication Required" in err.message and "credentials" in err.message


async def test_proxy_credentials_are_sent(
    tls_fake: FakeOpenAI, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("http://", "http://me:s%40cret@"))
        client = OpenAIChatClient()
        try:
            tls_fake.enqueue_stream(openai_reply("ok"))
            assert (await run(client, tls_fake.model_info(ca_file=ca_file)))[0] == "ok"
        finally:
            await client.aclose()
    assert proxy.authorizations == ["Basic bWU6c0BjcmV0"]  # me:s@cret


# ----------------------------------------------------------------------------- lasting failures


async def test_an_untrusted_certificate_fails_at_once_naming_the_fix(
    tls_fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    err, elapsed = await fails(client, tls_fake.model_info())
    assert not err.retryable and elapsed < 1.0
    assert err.message == (
        f"fake-openai: the TLS certificate of localhost is not trusted (unable to get local issuer "
        f"certificate; https://localhost:{tls_fake.origin_port}/v1/chat/completions): if the server uses "
        "a private CA, set caFile for the provider in models.json (or SSL_CERT_FILE to a CA bundle that "
        "includes it)"
    )
    assert "\n" not in err.message


async def test_an_expired_certificate_fails_at_once(
    ca: trustme.CA, client: OpenAIChatClient, ca_file: str
) -> None:
    past = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    context = server_context(ca, not_before=past, not_after=past + datetime.timedelta(days=1))
    async with FakeOpenAI(tls=context) as server:
        err, elapsed = await fails(client, server.model_info(ca_file=ca_file))
    assert not err.retryable and elapsed < 1.0
    assert "the TLS certificate of localhost has expired (certificate has expired;" in err.message
    assert err.message.endswith("the server's certificate must be renewed (or this machine's clock is wrong)")


async def test_a_certificate_for_another_name_fails_at_once(
    ca: trustme.CA, client: OpenAIChatClient, ca_file: str
) -> None:
    async with FakeOpenAI(tls=server_context(ca, "models.example.test")) as server:
        err, elapsed = await fails(client, server.model_info(ca_file=ca_file))
    assert not err.retryable and elapsed < 1.0
    assert "the TLS certificate of localhost is not valid for that name (" in err.message
    assert err.message.endswith("use the host name the certificate was issued for in the provider's baseUrl")


async def test_https_to_a_plain_http_port_is_a_tls_protocol_error(client: OpenAIChatClient) -> None:
    async with FakeOpenAI() as plain:
        model = plain.model_info(base_url=f"https://127.0.0.1:{plain.origin_port}/v1")
        err, elapsed = await fails(client, model)
    assert not err.retryable and elapsed < 1.0
    assert err.message.startswith(f"fake-openai: TLS handshake with https://127.0.0.1:{plain.origin_port}/v1")
    assert err.message.endswith("the server does not speak TLS there: is it plain http://?")


async def test_a_host_name_that_does_not_resolve_fails_at_once(client: OpenAIChatClient) -> None:
    model = ModelInfo(
        provider="vllm", id="m", api="openai-completions", base_url="https://no-such-host.invalid/v1"
    )
    err, elapsed = await fails(client, model)
    assert not err.retryable and elapsed < 5.0
    assert err.message.startswith(
        "vllm: cannot resolve the host name 'no-such-host.invalid' "
        "(https://no-such-host.invalid/v1/chat/completions: "
    )
    assert err.message.endswith(
        "check the provider's baseUrl in models.json, or this machine's network and DNS"
    )


async def test_a_proxy_scheme_that_is_not_supported_fails_at_once(
    tls_fake: FakeOpenAI, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    client = OpenAIChatClient()
    try:
        err, _ = await fails(client, tls_fake.model_info(ca_file=ca_file))
    finally:
        await client.aclose()
    assert not err.retryable
    assert err.message == (
        "fake-openai: invalid request: the proxy socks5://127.0.0.1 is not supported: model requests go "
        "through http:// proxies (HTTPS_PROXY=http://host:port)"
    )


async def test_an_untrusted_certificate_through_the_proxy_fails_at_once(
    tls_fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        client = OpenAIChatClient()
        try:
            err, elapsed = await fails(client, tls_fake.model_info())
        finally:
            await client.aclose()
    assert not err.retryable and elapsed < 1.0
    assert "the TLS certificate of localhost is not trusted" in err.message


async def test_http_proxy_gets_plain_http_requests_in_absolute_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """The "proxy" is the fake model itself: the model's host name does not resolve, so the answer
    can only have come through the proxy, which saw the absolute URL and the credentials."""
    async with FakeOpenAI() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.origin.replace("http://", "http://me:pw@"))
        client = OpenAIChatClient()
        try:
            proxy.enqueue_stream(openai_reply("forwarded"))
            model = ModelInfo(
                provider="p", id="m", api="openai-completions", base_url="http://models.upstream.invalid/v1"
            )
            assert (await run(client, model))[0] == "forwarded"
        finally:
            await client.aclose()
    seen = proxy.last_request
    assert seen.path == "/v1/chat/completions" and seen.headers["host"] == "models.upstream.invalid"
    assert seen.headers["proxy-authorization"] == "Basic bWU6cHc="
