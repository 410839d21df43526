"""The web chat page in a real headless Chromium, against a real ``fastagent dev`` on a scripted
model: a streamed Markdown answer, a tool line expanding, stop, steer and a follow-up, skills
completion, model and thinking, switching, renaming, forking and deleting conversations, a reload
mid-run, a dev reload (the server restarts) mid-conversation, the spend in the status line, a
phone-sized screen, and a wrong token. Screenshots of the main states go to ``build/screenshots/``."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serving.webchat.browser import DevServer, browser_marks, dev_server, screenshot, wait_until

pytestmark = browser_marks()

MODEL = """
STORY = " ".join(f"word{i}" for i in range(1, 121))
CODE = (
    "Here is **bold**, `inline code` and a block:\\n\\n"
    "```python\\ndef add(a: int, b: int) -> int:\\n    # add two numbers\\n    return a + b\\n```\\n\\n"
    "| name | value |\\n|---|---:|\\n| a | 1 |\\n| b | 2 |\\n"
)
EVERY = "\\n".join([
    "https://example.com/bare first, then <https://example.com/auto> and "
    "[https://example.com/same](https://example.com/same)",
    "[a named link](https://example.com/named \\"title\\") and <mailto:team@example.com> "
    "and [no](javascript:alert(1))",
    "",
    "# Heading with https://example.com/in-heading",
    "",
    "**bold https://example.com/in-bold** *em* __strong__ _em_ ~~struck~~ `code https://x.example`",
    "",
    "> a quote with [a link](https://example.com/quoted)",
    "",
    "- item https://example.com/item",
    "  - nested item",
    "1. first",
    "2. second",
    "- [x] done task",
    "",
    "| url | text |",
    "|---|:---:|",
    "| https://example.com/cell | [cell](https://example.com/cell-link) |",
    "",
    "---",
    "",
    "```js",
    "const url = 'https://example.com/in-code';",
    "```",
    "",
    "![an image](https://example.com/img.png) \\\\*not em\\\\* done",
])


def reply(request):
    text = request.last_user_text.strip()
    if text == "weather in Paris":
        if request.round == 0:
            return {
                "thinking": "The user wants the weather: I will call the tool.",
                "toolCalls": [{"name": "weather", "args": {"city": "Paris"}}],
            }
        return "It is **sunny** in Paris."
    if text == "work slowly":
        if request.round == 0:
            return {"toolCalls": [{"name": "pause", "args": {"seconds": 4}}]}
        return "done working"
    if text == "tell a long story":
        return {"text": STORY, "chunkDelayMs": 80}
    if text == "show code":
        return {"text": CODE, "chunkDelayMs": 60}
    if text == "every construct":
        return EVERY
    if text == "nest deeply":
        return ">" * 40 + " deep"
    if text == "ramble":
        return {"text": "on and on and on", "stopReason": "length"}
    return "You said: " + text
"""
WEATHER = '''
from fastagent_cli import tool


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return city + ": sunny, 21 C"
'''
PAUSE = '''
import asyncio

from fastagent_cli import tool


@tool
async def pause(seconds: float) -> str:
    """Wait a while."""
    await asyncio.sleep(seconds)
    return f"paused {seconds} s"
'''
SKILL = "---\nname: triage\ndescription: Sort an inbox by urgency\n---\nSort it.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    files = {
        "fastagent.toml": 'model = "scripted/model:reply"\ncoding_tools = false\n',
        "model.py": MODEL,
        "tools/weather.py": WEATHER,
        "tools/pause.py": PAUSE,
        "skills/triage/SKILL.md": SKILL,
    }
    dev = dev_server(tmp_path_factory.mktemp("webchat"), files)
    try:
        yield dev
    finally:
        dev.close()
    # The token is printed in the web chat line of each worker start, and nowhere else (no access log).
    assert dev.text.count(dev.token) == dev.text.count("web chat: http") >= 1


class Page:
    """The page in the browser, as a user sees and drives it."""

    def __init__(self, driver: Any, server: DevServer) -> None:
        self.driver = driver
        self.server = server

    def open(self, session: str | None = None, token: str | None = None) -> Page:
        self.driver.get("about:blank")  # a new document: a hash-only change would not reload
        self.driver.get(self.server.page(session=session, token=token))
        return self

    def ready(self) -> Page:
        try:
            wait_until(
                lambda: self.visible("#app") and self.attr("#connection", "data-state") == "live",
                "the page live",
            )
        except AssertionError:
            screenshot(self.driver, "failed-ready")
            raise AssertionError(
                f"not ready: {self.driver.current_url}: {self.driver.get_log('browser')}"
            ) from None
        return self

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def click(self, css: str) -> None:
        """Click what ``css`` finds, again if it was re-rendered in between (the list is redrawn
        whenever it is refreshed)."""
        wait_until(lambda: self.find(css).click() or True, f"a click on {css}")

    def all(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def visible(self, css: str) -> bool:
        found = self.all(css)
        return bool(found) and found[0].is_displayed()

    def attr(self, css: str, name: str) -> str | None:
        found = self.all(css)
        return found[0].get_attribute(name) if found else None

    def text(self, css: str = "#transcript") -> str:
        return str(self.find(css).text)

    def type(self, text: str, *keys: str) -> None:
        self.find("#input").send_keys(text, *keys)

    def send(self, text: str) -> None:
        from selenium.webdriver.common.keys import Keys

        self.type(text, Keys.ENTER)

    def wait_text(self, needle: str, css: str = "#transcript", within: float = 20) -> None:
        wait_until(lambda: needle in self.text(css), f"{needle!r} in {css}", within)

    def idle(self, within: float = 20) -> None:
        wait_until(
            lambda: self.text("#run-status") == "Idle" and not self.visible("#stop"), "the run to end", within
        )

    def control(self, method: str, path: str, body: Any = None) -> Any:
        """The plane, as another client (the test) sees it."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.server.base}/control{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.server.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def errors(self) -> list[str]:
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]


@pytest.fixture
def page(driver: Any, server: DevServer) -> Iterator[Page]:
    driver.set_window_size(1280, 860)
    shown = Page(driver, server)
    yield shown
    problems = [m for m in shown.errors() if "favicon" not in m and "401" not in m]
    assert not problems, problems


def new_id() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def test_a_message_streams_in_as_rendered_markdown(page: Page) -> None:
    session = new_id()
    page.open(session).ready()
    assert "token=" not in page.driver.current_url and f"#s={session}" in page.driver.current_url
    page.send("show code")
    page.wait_text("show code", ".msg.user")
    # Rendered while it streams, not at the end: the bold word is already bold.
    wait_until(lambda: "bold" in page.text(".msg.streaming strong"), "the answer streaming, rendered")
    assert page.visible("#stop") and page.text("#run-status") == "Running"
    screenshot(page.driver, "01-streaming")
    page.idle()

    def rendered() -> dict[str, Any]:
        # Read in one go, again if the transcript redrew in between (a stale element).
        answer = page.all(".msg.assistant")[-1]
        code = answer.find_element("css selector", ".code pre code")
        return {
            "strong": answer.find_element("css selector", "strong").text,
            "inline": answer.find_element("css selector", "code.inline").text,
            "code": code.text,
            "keywords": [k.text for k in code.find_elements("css selector", ".t-keyword")][:2],
            "comment": code.find_element("css selector", ".t-comment").text,
            "cells": [c.text for c in answer.find_elements("css selector", "table td")],
            "streaming": len(page.all(".msg.streaming")),
        }

    shown = wait_until(rendered, "the finished answer read whole")
    assert shown["strong"] == "bold" and shown["inline"] == "inline code"
    assert "def add(a: int, b: int) -> int:" in shown["code"]
    assert shown["keywords"] == ["def", "return"]
    assert shown["comment"] == "# add two numbers"
    assert shown["cells"] == ["a", "1", "b", "2"]
    assert shown["streaming"] == 0
    screenshot(page.driver, "02-answer")


def test_the_status_line_shows_the_sessions_spend_from_the_ledger(page: Page) -> None:
    session = new_id()
    page.open(session).ready()
    page.send("show code")
    page.idle()
    # the ledger's line is written as the turn settles, which may follow the idle status shown
    wait_until(lambda: "totals" in page.control("GET", f"/sessions/{session}"), "the session's totals")
    totals = page.control("GET", f"/sessions/{session}")["totals"]
    tokens = totals["totalTokens"]
    assert tokens > 0 and not totals.get("cost")  # the scripted model has no prices: no $ part
    shown = f"{tokens}" if tokens < 1000 else f"{tokens / 1000:.1f}k"
    wait_until(lambda: page.text("#usage").endswith(f"{shown} tokens"), "the spend in the status line")


def test_urls_and_every_markdown_construct_render_and_a_failed_message_shows_as_text(page: Page) -> None:
    session = new_id()
    page.open(session).ready()
    page.send("every construct")
    page.wait_text("every construct", ".msg.user")
    page.idle()

    def shown() -> dict[str, Any]:
        answer = page.all(".msg.assistant")[-1]
        found = lambda css: answer.find_elements("css selector", css)  # noqa: E731
        return {
            "links": [(a.text, a.get_attribute("href")) for a in found("a")],
            "targets": {(a.get_attribute("target"), a.get_attribute("rel")) for a in found("a")},
            "tags": {
                tag: len(found(tag))
                for tag in ("h3", "strong", "em", "del", "blockquote", "ul ul", "ol", "table", "hr")
            },
            "checkbox": [box.is_selected() for box in found("input[type=checkbox]")],
            "code": found(".code pre code")[0].text,
            "plain": len(found(".md-plain")),
            "text": answer.text,
        }

    got = wait_until(shown, "the answer read whole")
    assert got["links"] == [
        ("https://example.com/bare", "https://example.com/bare"),
        ("https://example.com/auto", "https://example.com/auto"),
        ("https://example.com/same", "https://example.com/same"),
        ("a named link", "https://example.com/named"),
        ("mailto:team@example.com", "mailto:team@example.com"),
        ("https://example.com/in-heading", "https://example.com/in-heading"),
        ("https://example.com/in-bold", "https://example.com/in-bold"),
        ("a link", "https://example.com/quoted"),
        ("https://example.com/item", "https://example.com/item"),
        ("https://example.com/cell", "https://example.com/cell"),
        ("cell", "https://example.com/cell-link"),
        ("an image", "https://example.com/img.png"),
    ]
    assert got["targets"] == {("_blank", "noopener noreferrer")}
    assert got["tags"] == {
        "h3": 1,
        "strong": 2,
        "em": 2,
        "del": 1,
        "blockquote": 1,
        "ul ul": 1,
        "ol": 1,
        "table": 1,
        "hr": 1,
    }
    assert got["checkbox"] == [True] and got["plain"] == 0
    assert "const url = 'https://example.com/in-code';" in got["code"]
    assert "no" in got["text"] and "*not em*" in got["text"]  # javascript: is text, escapes are kept
    screenshot(page.driver, "03-every-construct")
    # one message the renderer refuses shows as its text; the rest of the transcript stays
    page.send("nest deeply")
    page.idle()

    def fallback() -> str:
        last = page.all(".msg.assistant")[-1]
        return str(last.find_element("css selector", ".md-plain").text)

    assert wait_until(fallback, "the plain-text fallback") == ">" * 40 + " deep"
    assert "every construct" in page.text() and "https://example.com/bare" in page.text()
    page.send("after")
    page.wait_text("You said: after")


def test_a_tool_call_is_a_line_that_expands_to_its_arguments_and_result(page: Page) -> None:
    page.open(new_id()).ready()
    page.send("weather in Paris")
    page.wait_text("It is sunny in Paris.")
    line = page.find("details.tool")
    assert line.get_attribute("data-status") == "done" and line.get_attribute("open") is None
    assert "weather" in line.text and "city: Paris" in line.text
    assert not page.find("details.tool .tool-args").is_displayed()
    thinking = page.find("details.thinking")
    assert thinking.get_attribute("open") is None  # thinking is folded away
    page.find("details.tool summary").click()
    wait_until(lambda: page.find("details.tool .tool-result").is_displayed(), "the tool line open")
    assert json.loads(page.text("details.tool .tool-args")) == {"city": "Paris"}
    assert page.text("details.tool .tool-result") == "Paris: sunny, 21 C"
    page.find("details.thinking summary").click()
    wait_until(lambda: "call the tool" in page.text("details.thinking"), "the thinking open")
    screenshot(page.driver, "03-tool-expanded")


def test_stop_ends_a_long_run(page: Page) -> None:
    session = new_id()
    page.open(session).ready()
    page.send("tell a long story")
    wait_until(lambda: "word5" in page.text(), "the story streaming")
    screenshot(page.driver, "04-running")
    page.find("#stop").click()
    page.wait_text("Stopped.")
    page.idle()
    assert "word120" not in page.text()
    assert page.control("GET", f"/sessions/{session}")["status"] == "idle"
    time.sleep(1)  # nothing keeps streaming after the stop
    assert "word120" not in page.text()
    assert "word5" in page.text(), "the stopped partial answer stays on screen"
    screenshot(page.driver, "05-stopped")
    entries = page.control("GET", f"/sessions/{session}/entries")["entries"]
    assert entries[-1]["kind"] == "assistant" and entries[-1]["data"]["stopReason"] == "aborted"
    page.open(session).ready()  # a reload: the partial answer is in the history, marked
    page.wait_text("word5")
    assert page.text(".msg.assistant .cut-off") == "Stopped"


def test_typing_while_it_runs_steers_it_and_alt_enter_queues_a_follow_up(page: Page) -> None:
    from selenium.webdriver.common.keys import Keys

    page.open(new_id()).ready()
    page.send("work slowly")
    wait_until(lambda: page.attr("details.tool", "data-status") == "running", "the tool running")
    assert page.text("#send") == "Steer"
    page.send("use uv, not pip")
    page.type("then summarise", Keys.ALT, Keys.ENTER)
    wait_until(
        lambda: "Steering" in page.text("#pending") and "Queued" in page.text("#pending"), "both queues shown"
    )
    assert "use uv, not pip" in page.text("#pending") and "then summarise" in page.text("#pending")
    screenshot(page.driver, "06-steering")
    page.wait_text("You said: then summarise", within=30)
    page.idle()
    expected = ["work slowly", "use uv, not pip", "then summarise"]
    wait_until(
        lambda: [b.text for b in page.all(".msg.user .bubble")] == expected, "each prompt where it went in"
    )
    said = page.text()
    assert (
        said.index("pause") < said.index("You said: use uv, not pip") < said.index("You said: then summarise")
    )
    assert page.attr("details.tool", "data-status") == "done"  # the tool batch was not cut short
    assert not page.visible("#pending")


def test_slash_completes_skills_and_the_model_and_thinking_change(page: Page) -> None:
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    session = new_id()
    page.open(session).ready()
    assert page.find("#thinking").get_attribute("disabled") is not None  # no session yet: nothing to set
    page.type("/tr")
    wait_until(lambda: page.visible("#commands"), "the skills menu")
    assert "/triage" in page.text("#commands") and "Sort an inbox by urgency" in page.text("#commands")
    screenshot(page.driver, "07-skills")
    page.type(Keys.TAB)
    assert page.find("#input").get_attribute("value") == "/triage "
    page.send("my inbox")
    page.wait_text('Use the "triage" skill.', ".msg.user")
    page.idle()
    wait_until(lambda: page.find("#thinking").is_enabled(), "the thinking select enabled")
    Select(page.find("#thinking")).select_by_visible_text("high")
    wait_until(
        lambda: page.control("GET", f"/sessions/{session}")["thinkingLevel"] == "high", "thinking high"
    )
    Select(page.find("#model")).select_by_visible_text("anthropic/claude-sonnet-4-5")
    wait_until(
        lambda: page.control("GET", f"/sessions/{session}")["model"] == "anthropic/claude-sonnet-4-5", "moved"
    )
    Select(page.find("#model")).select_by_visible_text("scripted/model:reply")
    wait_until(lambda: page.control("GET", f"/sessions/{session}")["model"] == "scripted/model:reply", "back")
    assert Select(page.find("#thinking")).first_selected_option.text == "high"
    page.send("still here?")
    page.wait_text("You said: still here?")


def test_conversations_switch_rename_fork_and_delete(page: Page) -> None:
    first, second = new_id(), new_id()
    page.open(first).ready()
    page.send("alpha message")
    page.wait_text("You said: alpha message")
    page.find("#new-chat").click()
    wait_until(lambda: "alpha" not in page.text(), "a new empty conversation")
    page.send("beta message")
    page.wait_text("You said: beta message")
    second = page.driver.current_url.split("#s=")[1]
    wait_until(lambda: page.all(f'.session[data-session="{first}"]'), "the first in the list")

    page.click(f'.session[data-session="{first}"]')
    page.wait_text("You said: alpha message")
    assert "beta" not in page.text() and page.driver.current_url.endswith(f"#s={first}")

    page.click(f'.session[data-session="{first}"] button.rename')
    box = page.find(".rename-input")
    box.clear()
    from selenium.webdriver.common.keys import Keys

    box.send_keys("Alpha notes", Keys.ENTER)
    wait_until(lambda: page.text("#title") == "Alpha notes", "the new title")
    wait_until(lambda: "Alpha notes" in page.text("#sessions"), "the new name listed")
    assert page.control("GET", f"/sessions/{first}")["name"] == "Alpha notes"

    page.click(f'.session[data-session="{first}"] button.fork')
    wait_until(lambda: first not in page.driver.current_url, "the fork opened")
    fork = page.driver.current_url.split("#s=")[1]
    page.wait_text("You said: alpha message")
    wait_until(
        lambda: "Alpha notes (fork)" in page.text(f'.session[data-session="{fork}"]'), "the fork listed"
    )
    screenshot(page.driver, "08-conversations")

    page.click(f'.session[data-session="{fork}"] button.delete')
    wait_until(lambda: page.find("#confirm").is_displayed(), "the confirmation")
    page.find('#confirm button[value="yes"]').click()
    wait_until(lambda: not page.all(f'.session[data-session="{fork}"]'), "the fork gone")
    listed = [row["session"] for row in page.control("GET", "/sessions")]
    assert fork not in listed and first in listed and second in listed


def test_a_reload_mid_run_shows_the_run_going_on(page: Page) -> None:
    session = new_id()
    page.open(session).ready()
    page.send("tell a long story")
    wait_until(lambda: "word8" in page.text(), "the story streaming")
    page.driver.refresh()
    page.ready()
    assert page.driver.current_url.endswith(f"#s={session}")
    page.wait_text("tell a long story", ".msg.user")
    assert page.visible("#stop") and page.text("#run-status") == "Running"
    seen = wait_until(lambda: page.all(".msg.streaming"), "the answer streaming after the reload")
    screenshot(page.driver, "09-reloaded-mid-run")
    assert "…" in seen[0].text  # joined late: the part before the reload is still to come
    page.idle(within=30)
    # the settle reads the history back (a fetch after the run shows idle): the whole answer
    answer = wait_until(
        lambda: (text := str(page.all(".msg.assistant")[-1].text)).startswith("word1 word2") and text,
        "the whole answer read back",
    )
    assert answer.endswith("word120")


def test_a_dev_reload_reconnects_and_resyncs(page: Page, server: DevServer) -> None:
    session = new_id()
    page.open(session).ready()
    page.send("before the restart")
    page.wait_text("You said: before the restart")
    page.idle()
    mark = len(server.lines)
    tool = server.agent / "tools" / "weather.py"
    tool.write_text(tool.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    server.wait_for(r"restarting the dev worker", after=mark)
    server.wait_for(r"reloaded: http host on", after=mark, within=60)
    # Said by another client while the page was away: the page picks it up from entries(since=).
    wait_until(
        lambda: page.control(
            "POST", "/invoke", {"session": session, "text": "said elsewhere", "detach": True}
        )["ok"],
        "a run",
    )
    page.wait_text("You said: said elsewhere", within=30)
    wait_until(lambda: page.attr("#connection", "data-state") == "live", "live again")
    page.send("after the restart")
    page.wait_text("You said: after the restart")
    said = page.text()
    assert said.count("You said: before the restart") == 1 and said.count("You said: said elsewhere") == 1
    lost = [m for m in page.errors() if "/control/" not in m or "net::ERR_" not in m]
    assert not lost, lost  # requests failed while the worker restarted, and nothing else did


def test_a_phone_sized_screen_gets_a_drawer(page: Page) -> None:
    page.driver.set_window_size(390, 844)
    page.open(new_id()).ready()
    assert not page.find("#sidebar").is_displayed() or page.find("#sidebar").rect["x"] < 0
    page.send("hello from a phone")
    page.wait_text("You said: hello from a phone")
    composer = page.find(".composer-form").rect
    assert composer["x"] >= 0 and composer["x"] + composer["width"] <= 390
    screenshot(page.driver, "10-phone")
    page.find("#menu").click()
    wait_until(lambda: page.find("#sidebar").rect["x"] >= 0, "the drawer open")
    screenshot(page.driver, "11-phone-drawer")
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(page.driver).move_to_element_with_offset(page.find("#scrim"), 170, 0).click().perform()
    wait_until(lambda: page.find("#sidebar").rect["x"] < 0, "the drawer closed")


def test_a_wrong_token_is_refused_and_nothing_works_without_one(page: Page) -> None:
    page.open(token="not-the-token")
    wait_until(lambda: page.visible("#signin"), "the sign-in panel")
    assert "refused" in page.text("#signin-message")
    assert not page.visible("#app") and "token=" not in page.driver.current_url
    assert page.driver.execute_script("return sessionStorage.getItem('fastagent.controlToken')") is None
    screenshot(page.driver, "12-token-refused")
    page.driver.get("about:blank")
    page.driver.get(page.server.base + "/")
    wait_until(lambda: page.visible("#signin"), "the sign-in panel without a token")
    assert "needs" in page.text("#signin-message") and not page.all(".session")
    page.find("#signin-token").send_keys(page.server.token)
    page.find("#signin-form button").click()
    page.ready()
    assert page.all("#sessions .session")


def test_a_cut_off_answer_is_marked_and_a_refusal_offers_compaction(page: Page) -> None:
    session = new_id()
    page.open(session).ready()
    page.send("ramble")
    page.wait_text("on and on and on", ".msg.assistant")
    page.wait_text("Cut off: the answer reached the output token limit", ".cut-off")
    page.idle()
    # A prompt the model's window cannot hold is refused before it is sent; the refusal says
    # compacting may help, and the page offers it right there.
    page.driver.execute_script(
        "const input = document.getElementById('input'); input.value = 'word '.repeat(140000);"
        "input.dispatchEvent(new Event('input'));"
    )
    from selenium.webdriver.common.keys import Keys

    page.find("#input").send_keys(Keys.END, Keys.ENTER)
    page.wait_text("no longer fits", ".notice.error", within=30)
    assert page.text("[data-action=compact]") == "Compact the conversation"
    screenshot(page.driver, "11-compaction-offered")
    page.click("[data-action=compact]")
    # the session is small, and asked to compact it compacts (issue 26): its whole history is
    # summarised and the transcript marks where
    try:
        page.wait_text("Earlier conversation compacted", within=30)
    except AssertionError:
        raise AssertionError(page.text() + " | " + str(page.errors())) from None
    page.idle()
