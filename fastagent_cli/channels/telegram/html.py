"""Telegram HTML: make a model's answer acceptable to ``parse_mode=HTML``, and split long messages.

:func:`telegram_html` keeps the tags Telegram renders (``b strong i em u ins s strike del a code
pre blockquote tg-spoiler``, ``span class="tg-spoiler"``, ``tg-emoji``), turns the usual slips of
a model into what they mean (``<br>`` and ``<p>`` become line breaks, list items bullets, headings
bold), escapes ``&``, ``<`` and ``>`` in text (Telegram accepts only ``&lt; &gt; &amp; &quot;``
and numeric entities), shows any other ``<thing>`` literally (``x <y and z> w`` is text, not a tag),
balances what is left open and drops tags nested inside ``code``/``pre``. Telegram may still reject
the result (a bad link); the caller then sends the original as plain text.

:func:`split_message` cuts a message into parts of at most :data:`MAX_MESSAGE` UTF-16 code units
(Telegram's limit, counted conservatively on the raw text), preferring line breaks. In HTML mode a
tag open across a cut is closed at the end of the part and reopened, attributes and all, at the
start of the next, and no cut falls inside a tag or an entity.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

__all__ = ["MAX_MESSAGE", "split_message", "telegram_html", "utf16_len"]

MAX_MESSAGE = 4096

_INLINE = {
    "b": "b",
    "strong": "b",
    "i": "i",
    "em": "i",
    "u": "u",
    "ins": "u",
    "s": "s",
    "strike": "s",
    "del": "s",
    "tg-spoiler": "tg-spoiler",
}
_BLOCK_BREAK = {"p", "div", "section", "article", "header", "footer", "table", "tr", "ul", "ol", "dl"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_DROP_TAG = {
    "span",
    "font",
    "small",
    "big",
    "sub",
    "sup",
    "mark",
    "abbr",
    "cite",
    "q",
    "kbd",
    "samp",
    "var",
    "html",
    "body",
    "head",
    "thead",
    "tbody",
    "td",
    "th",
    "dt",
    "dd",
    "hr",
    "img",
    "summary",
    "details",
}
_VERBATIM = {"code", "pre"}


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass(slots=True)
class _Open:
    name: str
    tag: str
    """The full opening tag as written out (attributes included)."""


class _Sanitizer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.stack: list[_Open] = []

    def _verbatim(self) -> bool:
        return any(o.name in _VERBATIM for o in self.stack)

    def handle_data(self, data: str) -> None:
        self.out.append(html.escape(data, quote=False))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "br":
            self.out.append("\n")
            return
        if tag in _BLOCK_BREAK or tag in _HEADINGS or tag == "li":
            self._block(tag, opening=True)
            return
        if self._verbatim() and not (tag == "code" and self.stack[-1].name == "pre"):
            return  # nothing nests inside code/pre but <pre><code class=...>
        opened = self._allowed(tag, values)
        if opened is not None:
            self.out.append(opened.tag)
            self.stack.append(opened)
        elif tag not in _DROP_TAG:
            self.handle_data(self.get_starttag_text() or f"<{tag}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self.out.append("\n")
        elif tag not in _DROP_TAG and tag not in _INLINE and tag not in {"a", "code", "pre", "blockquote"}:
            self.handle_data(self.get_starttag_text() or f"<{tag}/>")

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCK_BREAK or tag in _HEADINGS or tag == "li":
            self._block(tag, opening=False)
            return
        name = _INLINE.get(tag, tag)
        if tag == "span":
            name = "tg-spoiler-span"
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index].name == name:
                while len(self.stack) > index:
                    self._close(self.stack.pop())
                return
        if (
            tag not in _DROP_TAG
            and tag not in _INLINE
            and tag not in {"a", "code", "pre", "blockquote", "tg-emoji"}
        ):
            self.handle_data(f"</{tag}>")

    def _close(self, opened: _Open) -> None:
        self.out.append(f"</{'span' if opened.name == 'tg-spoiler-span' else opened.name}>")

    def _block(self, tag: str, *, opening: bool) -> None:
        if self._verbatim():
            return
        if tag in _HEADINGS:
            self.out.append("<b>" if opening else "</b>\n")
        elif tag == "li":
            self.out.append("\n• " if opening else "")
        elif not opening or tag in {"ul", "ol"}:
            self.out.append("\n\n" if tag == "p" else "\n")

    def _allowed(self, tag: str, attrs: dict[str, str]) -> _Open | None:
        if tag in _INLINE:
            name = _INLINE[tag]
            return _Open(name, f"<{name}>")
        if tag == "span" and "tg-spoiler" in attrs.get("class", "").split():
            return _Open("tg-spoiler-span", '<span class="tg-spoiler">')
        if tag == "a" and attrs.get("href"):
            return _Open("a", f'<a href="{html.escape(attrs["href"])}">')
        if tag == "code":
            language = attrs.get("class", "")
            if language.startswith("language-") and self.stack and self.stack[-1].name == "pre":
                return _Open("code", f'<code class="{html.escape(language)}">')
            return _Open("code", "<code>")
        if tag == "pre":
            return _Open("pre", "<pre>")
        if tag == "blockquote":
            if any(o.name == "blockquote" for o in self.stack):
                return None
            return _Open("blockquote", "<blockquote expandable>" if "expandable" in attrs else "<blockquote>")
        if tag == "tg-emoji" and attrs.get("emoji-id"):
            return _Open("tg-emoji", f'<tg-emoji emoji-id="{html.escape(attrs["emoji-id"])}">')
        return None

    def result(self) -> str:
        self.close()
        while self.stack:
            self._close(self.stack.pop())
        text = "".join(self.out)
        return re.sub(r"\n{3,}", "\n\n", text).strip()


def telegram_html(text: str) -> str:
    """``text`` (a model's answer in Telegram HTML, more or less) as Telegram-acceptable HTML."""
    parser = _Sanitizer()
    parser.feed(text)
    return parser.result()


# --- splitting -----------------------------------------------------------------------------------

_TOKEN = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*>|&#?[a-zA-Z0-9]+;")


@dataclass(slots=True)
class _Token:
    text: str
    kind: str  # "text" | "open" | "close" | "entity"
    name: str = ""


@dataclass(slots=True)
class _Part:
    tokens: list[_Token] = field(default_factory=list)
    size: int = 0


def _tokens(text: str, markup: bool) -> list[_Token]:
    out: list[_Token] = []
    position = 0
    if markup:
        for found in _TOKEN.finditer(text):
            if found.start() > position:
                out.append(_Token(text[position : found.start()], "text"))
            if found.group(2):
                kind = "close" if found.group(1) else "open"
                out.append(_Token(found.group(0), kind, found.group(2).lower()))
            else:
                out.append(_Token(found.group(0), "entity"))
            position = found.end()
    if position < len(text):
        out.append(_Token(text[position:], "text"))
    pieces: list[_Token] = []
    for token in out:
        if token.kind != "text":
            pieces.append(token)
            continue
        for line in token.text.splitlines(keepends=True):
            pieces.extend(_Token(chunk, "text") for chunk in _fit(line, MAX_MESSAGE // 2))
    return pieces


def _fit(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` UTF-16 units, cut after a space where possible."""
    pieces: list[str] = []
    while utf16_len(text) > limit:
        cut = limit
        while utf16_len(text[:cut]) > limit:
            cut -= 1
        space = text.rfind(" ", limit // 2, cut)
        cut = space + 1 if space > 0 else cut
        pieces.append(text[:cut])
        text = text[cut:]
    if text:
        pieces.append(text)
    return pieces


def split_message(text: str, *, html_mode: bool = False, limit: int = MAX_MESSAGE) -> list[str]:
    """``text`` as messages of at most ``limit`` UTF-16 units (see the module doc)."""
    if utf16_len(text) <= limit:
        return [text]
    tokens = _tokens(text, html_mode)
    parts: list[str] = []
    stack: list[_Token] = []  # tags open where the next part starts
    index = 0
    while index < len(tokens):
        opening = list(stack)
        part = "".join(t.text for t in opening)
        size = utf16_len(part)
        best: tuple[int, list[_Token], str, int] | None = None  # after a line break: resume point
        taken = 0
        while index < len(tokens):
            token = tokens[index]
            if taken == 0 and token.kind == "text" and not token.text.strip():
                index += 1  # a part never starts with the blank lines the cut fell on
                continue
            after = _after(stack, token)
            closers = sum(len(t.name) + 3 for t in after)
            cost = utf16_len(token.text)
            if size + cost + closers > limit and taken > 0:
                break
            part += token.text
            size += cost
            stack = after
            index += 1
            taken += 1
            if token.kind == "text" and token.text.endswith("\n"):
                best = (index, list(stack), part, size)
        if index < len(tokens) and best is not None and best[3] >= limit // 2 and best[0] < index:
            index, stack, part, size = best
        parts.append(part.rstrip("\n") + "".join(f"</{t.name}>" for t in reversed(stack)))
    return [part for part in parts if part.strip()]


def _after(stack: list[_Token], token: _Token) -> list[_Token]:
    if token.kind == "open":
        return [*stack, token]
    if token.kind == "close":
        for position in range(len(stack) - 1, -1, -1):
            if stack[position].name == token.name:
                return stack[:position] + stack[position + 1 :]
    return stack
