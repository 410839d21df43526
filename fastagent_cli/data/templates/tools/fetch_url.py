"""An example tool: fetch a web page. The file name is the tool name, so this tool is `fetch_url`.

Run it without a model: fastagent tool fetch_url '{"url": "https://example.com"}'
"""

from __future__ import annotations

from fastagent_cli import tool

MAX_CHARS = 20_000


@tool
async def fetch_url(url: str, max_chars: int = MAX_CHARS) -> str:
    """Fetch a web page or another text resource over HTTP(S) and return its body as text.

    Args:
        url: The absolute http:// or https:// URL to fetch.
        max_chars: Return at most this many characters of the body.
    """
    import httpx  # imported when the tool runs, so the agent starts fast

    if not url.startswith(("http://", "https://")):
        raise ValueError(f"only http:// and https:// URLs can be fetched, not {url!r}")
    async with httpx.AsyncClient(follow_redirects=True, timeout=20.0) as client:
        response = await client.get(url, headers={"user-agent": "fastagent fetch_url"})
    kind = response.headers.get("content-type", "unknown type")
    body = response.text
    if len(body) > max_chars:
        body = body[:max_chars] + f"\n\n[truncated: showing {max_chars} of {len(body)} characters]"
    return f"HTTP {response.status_code} {response.reason_phrase} ({kind})\n\n{body}"
