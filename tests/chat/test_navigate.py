"""``/navigate`` in the running chat: it lists the session's prompts, moves the leaf back to before
one of them, and the next message branches from there (the record keeps both branches)."""

from __future__ import annotations

from tests.chat.harness import ChatHarness, session_lines


async def test_navigate_back_and_branch(chat: ChatHarness) -> None:
    out = await chat.submit("/navigate")
    assert "no prompts in this session yet" in out
    await chat.submit("first")
    await chat.submit("second")
    out = await chat.submit("/navigate 1")
    assert f"moved session {chat.ctl.session} back to before 'second'" in out
    await chat.submit("third")
    out = await chat.submit("/navigate nope")
    assert "✗ no entry 'nope' in session" in out
    path = chat.ctl.session_path
    assert path is not None
    messages = {e["id"]: e for e in session_lines(path) if e.get("type") == "message"}
    users = {
        e["message"]["content"][0]["text"]: e for e in messages.values() if e["message"]["role"] == "user"
    }
    assert users["third"]["parentId"] == users["second"]["parentId"]  # a sibling: second is off the path
    assert messages[users["third"]["parentId"]]["message"]["role"] == "assistant"
