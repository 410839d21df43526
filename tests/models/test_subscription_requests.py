"""What subscription tokens change in a request: Claude Pro/Max tokens identify as Claude Code (Bearer,
identity headers, system prefix, tool-name casing both ways); GitHub Copilot adds its per-request
headers on every API shape and authenticates Anthropic-shaped calls with a Bearer token."""

from __future__ import annotations

from fastagent_cli.models.anthropic_messages import AnthropicMessagesClient
from fastagent_cli.models.anthropic_request import build_messages_request
from fastagent_cli.models.copilot import copilot_base_url
from fastagent_cli.models.openai_request import build_chat_request
from fastagent_cli.models.responses_request import build_responses_request
from fastagent_cli.models.types import AssistantMessage, Message, ModelInfo, ModelRequest, ToolSpec
from tests.fakes.fake_providers import FakeAnthropic, FakeCall, anthropic_reply

OAT = "sk-ant-oat01-fake-access-token"
TOOLS = [
    ToolSpec("read", "Read a file.", {"type": "object"}),
    ToolSpec("get_weather", "Weather.", {"type": "object"}),
]


def user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def assistant_call(name: str) -> AssistantMessage:
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "toolu_1", "name": name, "arguments": {"path": "a.md"}}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": {}},  # type: ignore[typeddict-item]
        "stopReason": "toolUse",
        "timestamp": 1,
    }


def anthropic_request(
    key: str, provider: str = "anthropic", messages: list[Message] | None = None
) -> ModelRequest:
    model = ModelInfo(provider, "claude-sonnet-4-5", "anthropic-messages", base_url="http://x")
    return ModelRequest(model, "Be brief.", messages or [user("hi")], tools=TOOLS, api_key=key)


def test_a_claude_subscription_token_identifies_as_claude_code() -> None:
    history: list[Message] = [user("read a.md"), assistant_call("read")]
    _, headers, body = build_messages_request(anthropic_request(OAT, messages=history))
    assert headers["authorization"] == f"Bearer {OAT}" and "x-api-key" not in headers
    assert headers["anthropic-beta"].startswith("claude-code-20250219,oauth-2025-04-20")
    assert headers["user-agent"].startswith("claude-cli/") and headers["x-app"] == "cli"
    assert body["system"] == [
        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
        {"type": "text", "text": "Be brief."},
    ]
    assert [t["name"] for t in body["tools"]] == ["Read", "get_weather"]
    assert body["messages"][1]["content"][0]["name"] == "Read"


def test_an_api_key_request_is_unchanged() -> None:
    _, headers, body = build_messages_request(anthropic_request("sk-ant-api03-key"))
    assert headers["x-api-key"] == "sk-ant-api03-key" and "authorization" not in headers
    assert body["system"] == "Be brief." and [t["name"] for t in body["tools"]] == ["read", "get_weather"]


async def test_claude_code_tool_names_map_back_to_the_agents_tools() -> None:
    async with FakeAnthropic() as fake:
        fake.enqueue_stream(anthropic_reply(tool_calls=[FakeCall("Read", {"path": "a.md"}, "toolu_9")]))
        client = AnthropicMessagesClient()
        try:
            request = anthropic_request(OAT)
            request.model = ModelInfo(
                "anthropic", "claude-sonnet-4-5", "anthropic-messages", base_url=fake.base_url
            )
            items = [item async for item in client.stream(request)]
        finally:
            await client.aclose()
    final = items[-1]
    assert isinstance(final, dict)
    assert final["content"][0] == {
        "type": "toolCall",
        "id": "toolu_9",
        "name": "read",
        "arguments": {"path": "a.md"},
    }
    assert fake.last_request.headers["authorization"] == f"Bearer {OAT}"


def test_copilot_headers_on_every_api_shape() -> None:
    headers_base = {"Copilot-Integration-Id": "vscode-chat"}
    first = [user("hi")]
    follow_up: list[Message] = [
        user("hi"),
        assistant_call("get_weather"),
        {
            "role": "toolResult",
            "toolCallId": "toolu_1",
            "toolName": "get_weather",
            "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}],
            "isError": False,
            "timestamp": 2,
        },
    ]
    for api, build in (
        ("openai-completions", build_chat_request),
        ("openai-responses", build_responses_request),
        ("anthropic-messages", build_messages_request),
    ):
        model = ModelInfo("github-copilot", "m", api, base_url="http://copilot", headers=headers_base)
        _, headers, _ = build(ModelRequest(model, "", first, api_key="tid=1;proxy-ep=x"))
        assert headers["X-Initiator"] == "user" and headers["Openai-Intent"] == "conversation-edits"
        assert headers["Copilot-Integration-Id"] == "vscode-chat" and "Copilot-Vision-Request" not in headers
        assert headers.get("Authorization", headers.get("authorization")) == "Bearer tid=1;proxy-ep=x"
        _, later, _ = build(ModelRequest(model, "", follow_up, api_key="tid=1;proxy-ep=x"))
        assert later["X-Initiator"] == "agent" and later["Copilot-Vision-Request"] == "true"
    plain = ModelInfo("openai", "gpt-4.1", "openai-completions", base_url="http://x")
    _, headers, _ = build_chat_request(ModelRequest(plain, "", first, api_key="k"))
    assert "X-Initiator" not in headers


def test_copilot_token_names_its_api_host() -> None:
    token = "tid=abc;exp=1700000000;sku=monthly;proxy-ep=proxy.business.githubcopilot.com;8kp=1"
    assert copilot_base_url(token) == "https://api.business.githubcopilot.com"
    assert copilot_base_url("opaque") == "https://api.individual.githubcopilot.com"
    assert copilot_base_url("opaque", "corp.ghe.com") == "https://copilot-api.corp.ghe.com"
