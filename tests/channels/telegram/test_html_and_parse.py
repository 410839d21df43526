"""Telegram HTML (sanitising, HTML-aware splitting) and the pure update parsing and routing."""

from __future__ import annotations

import random

import pytest

from fastagent_cli.channels.telegram.html import split_message, telegram_html, utf16_len
from fastagent_cli.channels.telegram.parse import (
    TelegramRoute,
    bot_id_from_token,
    default_telegram_route,
    mentions_bot,
    mentions_others,
    place_of,
    telegram_envelope,
)
from tests.fakes.fake_telegram import Updates, mention, visible_text


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("<b>bold</b> & <i>it</i>", "<b>bold</b> &amp; <i>it</i>"),
        ("<strong>a</strong><em>b</em><del>c</del>", "<b>a</b><i>b</i><s>c</s>"),
        ("<p>one</p><p>two<br>three</p>", "one\n\ntwo\nthree"),
        ("<ul><li>a</li><li>b</li></ul>", "• a\n• b"),
        ("<h2>Title</h2>body", "<b>Title</b>\nbody"),
        ("if x <y and z> w", "if x &lt;y and z&gt; w"),
        ("<b>unclosed", "<b>unclosed</b>"),
        ("stray </i> end", "stray  end"),  # a stray closing tag of a known kind is dropped
        ("stray </x> end", "stray &lt;/x&gt; end"),
        ('<a href="https://e.com?a=1&b=2">link</a>', '<a href="https://e.com?a=1&amp;b=2">link</a>'),
        (
            '<pre><code class="language-py">x = <b>1</b></code></pre>',
            '<pre><code class="language-py">x = 1</code></pre>',
        ),
        ('<span class="tg-spoiler">s</span><span>t</span>', '<span class="tg-spoiler">s</span>t'),
        ("a &lt; b &amp;&amp; c", "a &lt; b &amp;&amp; c"),
        ("<blockquote>q</blockquote>", "<blockquote>q</blockquote>"),
    ],
)
def test_model_html_becomes_what_telegram_accepts(given: str, expected: str) -> None:
    assert telegram_html(given) == expected
    visible_text(expected, "HTML")  # the fake's strict checker (Telegram's rules) accepts it


def test_a_short_message_is_not_split() -> None:
    assert split_message("hello") == ["hello"]


def test_plain_splitting_prefers_line_breaks_and_keeps_every_character() -> None:
    lines = [f"line {n}: " + "x" * random.Random(n).randint(10, 300) for n in range(200)]
    text = "\n".join(lines)
    parts = split_message(text)
    assert all(utf16_len(p) <= 4096 for p in parts)
    assert "\n".join(parts) == text
    assert all(p.startswith("line ") for p in parts)


def test_a_line_longer_than_a_message_is_cut_after_a_space() -> None:
    text = ("word " * 2000).strip()
    parts = split_message(text)
    assert len(parts) == 3 and all(utf16_len(p) <= 4096 for p in parts)
    assert " ".join(p.strip() for p in parts) == text


def test_emoji_count_as_two_units() -> None:
    parts = split_message("😀" * 3000)
    assert [utf16_len(p) for p in parts] == [4096, 1904]


def test_html_splitting_closes_and_reopens_tags_across_a_cut() -> None:
    code = "\n".join(f"print({n}) # " + "y" * 60 for n in range(150))
    text = f'Here:\n<pre><code class="language-py">{code}</code></pre>\n<b>done &amp; dusted</b>'
    parts = split_message(text, html_mode=True)
    assert len(parts) >= 3
    for part in parts:
        assert utf16_len(part) <= 4096
        visible_text(part, "HTML")  # each part is valid Telegram HTML on its own
    assert parts[1].startswith('<pre><code class="language-py">')
    assert parts[0].endswith("</code></pre>")
    joined = "".join(visible_text(p, "HTML") for p in parts)
    assert joined.replace("\n", "") == visible_text(text, "HTML").replace("\n", "")


def test_html_splitting_never_cuts_an_entity_or_a_tag() -> None:
    text = ("&amp;<i>x</i>" * 600).strip()
    for part in split_message(text, html_mode=True):
        visible_text(part, "HTML")


# --- parsing -------------------------------------------------------------------------------------


def test_mentions_are_read_from_entities_with_utf16_offsets() -> None:
    text = "😀 hey @fa_test_bot and @carol"
    entities = mention(text, "fa_test_bot") + mention(text, "carol")
    message = Updates().message(text, chat_type="group", entities=entities)["message"]
    assert mentions_bot(message, "FA_Test_Bot") and mentions_bot(message, "@fa_test_bot")
    assert mentions_others(message, "fa_test_bot")
    plain = Updates().message("hey @fa_test_bot", chat_type="group")["message"]  # no entity: no mention
    assert not mentions_bot(plain, "fa_test_bot")


def test_the_default_route() -> None:
    updates = Updates()
    assert default_telegram_route(updates.message("hi")) == TelegramRoute()
    group = updates.message("hi all", chat_type="group")
    assert default_telegram_route(group, bot_username="fa_test_bot", bot_id=5) is None
    ask = "@fa_test_bot hi"
    summon = updates.message(ask, chat_type="supergroup", entities=mention(ask, "fa_test_bot"))
    assert default_telegram_route(summon, bot_username="fa_test_bot") == TelegramRoute()
    assert default_telegram_route(summon) is None  # unknown username: fail closed
    to_bot = {
        "message_id": 1,
        "from": {"id": 5, "is_bot": True, "username": "fa_test_bot"},
        "chat": {"id": 1},
    }
    reply = updates.message("ok", chat_type="group", reply_to=to_bot)
    assert default_telegram_route(reply, bot_id=5) == TelegramRoute()
    assert default_telegram_route(reply, bot_id=6) is None
    assert default_telegram_route(reply, bot_username="fa_test_bot") == TelegramRoute()
    assert default_telegram_route({"update_id": 1, "edited_message": group["message"]}) is None


def test_places_tokens_and_the_envelope() -> None:
    updates = Updates()
    assert place_of(updates.message("x", chat_id=-5, thread_id=77)["message"]) == "-5:77"
    # A reply in a supergroup without topics carries the chain's root as message_thread_id: not a topic.
    reply = updates.message("x", chat_id=-5, chat_type="supergroup", message_thread_id=12)["message"]
    assert place_of(reply) == "-5"
    assert bot_id_from_token("123:abc") == 123 and bot_id_from_token("abc") is None
    original = {
        "message_id": 3,
        "from": {"id": 9, "first_name": "Bo"},
        "chat": {"id": -5},
        "text": "q" * 5000,
    }
    message = updates.message(
        "what about this?",
        chat_id=-5,
        chat_type="supergroup",
        thread_id=77,
        reply_to=original,
        location={"latitude": 1.5, "longitude": 2.5},
        poll={"question": "Lunch?", "options": [{"text": "yes"}, {"text": "no"}]},
    )["message"]
    envelope = telegram_envelope(message)
    head, group_line, reply_line, *rest = envelope.split("\n")
    assert head == "[telegram: chat -5 (supergroup), thread 77, from @alice]"
    assert group_line == "[group chat — several people; each message names its sender]"
    assert reply_line.startswith("[in reply to Bo (id 9) (msg 3): qqq") and len(reply_line) == 32 + 4096 + 1
    assert rest == ["what about this?", "[location: 1.5,2.5]", "[poll: Lunch? — yes / no]"]
