"""Feishu/Lark pure pieces: the content decoder, summons by open_id, the envelope, cards, chunks."""

from __future__ import annotations

import json

from fastagent_cli.channels.feishu.api import chunk_text
from fastagent_cli.channels.feishu.card import card_summary, final_card, streaming_card
from fastagent_cli.channels.feishu.parse import decode_content, default_feishu_route, feishu_envelope


def test_decoding_each_message_type() -> None:
    mentions = [{"key": "@_user_1", "name": "Bot", "id": {"open_id": "ou_bot"}}]
    assert decode_content("text", json.dumps({"text": "@_user_1 hi"}), mentions) == ("@Bot hi", [])
    post = {
        "title": "T",
        "content": [[{"tag": "text", "text": "see "}, {"tag": "img", "image_key": "img_1"}]],
    }
    assert decode_content("post", json.dumps(post)) == ("T\nsee [image]", [{"kind": "image", "key": "img_1"}])
    assert decode_content("file", json.dumps({"file_key": "f1", "file_name": "a.pdf"})) == (
        "[file: a.pdf]",
        [{"kind": "file", "key": "f1", "name": "a.pdf"}],
    )
    assert decode_content("text", "{not json")[0] == "[unreadable text message]"
    assert decode_content("sticker", "{}")[0] == "[sticker message]"


def test_summons_and_the_envelope() -> None:
    event = {
        "sender": {"sender_type": "user", "sender_id": {"open_id": "ou_a"}},
        "message": {
            "message_id": "om_1",
            "chat_id": "oc_g",
            "chat_type": "group",
            "message_type": "text",
            "content": '{"text":"hi"}',
            "parent_id": "om_0",
        },
    }
    assert default_feishu_route(event, bot_open_id="ou_bot") is None
    event["message"]["mentions"] = [{"key": "@_user_1", "id": {"open_id": "ou_bot"}}]
    assert default_feishu_route(event, bot_open_id="ou_bot") is not None
    assert default_feishu_route(event, bot_open_id=None) is None  # fail-closed until the identity is known
    assert default_feishu_route({**event, "sender": {"sender_type": "app"}}, bot_open_id="ou_bot") is None
    assert feishu_envelope(event, "lark").startswith(
        "[lark: chat oc_g (group), from user ou_a, msg om_1]\n[group chat"
    )
    assert "[in reply to msg om_0]" in feishu_envelope(event)


def test_cards_and_chunks() -> None:
    live = json.loads(streaming_card("💭 Thinking…"))
    assert live["config"]["streaming_mode"] is True
    assert [e["element_id"] for e in live["body"]["elements"]] == ["process", "answer"]
    settled = json.loads(final_card("# Title\n**bold** answer"))
    assert settled["config"]["streaming_mode"] is False and settled["config"]["summary"]["content"] == "Title"
    assert card_summary("```\ncode\n```\n- [link](http://x) text") == "link text"
    parts = chunk_text("é" * 1000 + "\n" + "x" * 10, 1200)
    assert (
        all(len(p.encode()) <= 1200 for p in parts)
        and "".join(parts).replace("\n", "") == "é" * 1000 + "x" * 10
    )
