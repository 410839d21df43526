"""The web chat's approval card in a real headless Chromium against a real ``fastagent dev``: a
gated tool call shows a card with its arguments on every open tab; approving in one tab runs the
call and the card leaves the other tab live; a deny's reason is what the model reads."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serving.webchat.browser import DevServer, browser_marks, dev_server, screenshot, wait_until
from tests.serving.webchat.test_browser import Page

pytestmark = browser_marks()

MODEL = """
def reply(request):
    if request.round == 0:
        return {"toolCalls": [{"name": "deploy", "args": {"env": "prod", "version": "1.4.2"}}]}
    last = request.messages[-1]
    return "tool said: " + "".join(b.get("text", "") for b in last["content"])
"""
DEPLOY = '''
from fastagent_cli import tool


@tool(approval=True)
def deploy(env: str, version: str) -> str:
    """Deploy a version."""
    return f"deployed {version} to {env}"
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    files = {
        "fastagent.toml": 'model = "scripted/approval_model:reply"\ncoding_tools = false\n',
        "approval_model.py": MODEL,
        "tools/deploy.py": DEPLOY,
    }
    dev = dev_server(tmp_path_factory.mktemp("webchat-approvals"), files)
    try:
        yield dev
    finally:
        dev.close()


@pytest.fixture
def tabs(driver: Any, server: DevServer) -> Iterator[tuple[Page, str, str]]:
    """The page in two tabs of one browser: ``(page, first tab, second tab)``."""
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    second = driver.current_window_handle
    page = Page(driver, server)
    yield page, first, second
    problems = [m for m in page.errors() if "favicon" not in m and "401" not in m and "409" not in m]
    driver.switch_to.window(second)
    driver.close()
    driver.switch_to.window(first)
    assert not problems, problems


def _card(page: Page) -> Any:
    return wait_until(lambda: page.all(".approval-card")[0], "an approval card")


def test_approve_in_one_tab_while_another_watches(tabs: tuple[Page, str, str]) -> None:
    page, first, second = tabs
    session = f"t-{uuid.uuid4().hex[:10]}"
    page.driver.switch_to.window(first)
    page.open(session).ready()
    page.send("ship it")
    card = _card(page)
    assert "deploy" in card.text and '"version": "1.4.2"' in card.text
    page.driver.switch_to.window(second)
    page.open(session).ready()  # a tab opened later finds the request in state()
    watched = _card(page)
    assert '"env": "prod"' in watched.text
    screenshot(page.driver, "approval-card")
    page.driver.switch_to.window(first)
    page.click(".approval-card .approval-approve")
    page.wait_text("tool said: deployed 1.4.2 to prod")
    wait_until(lambda: not page.all(".approval-card"), "the card gone in the answering tab")
    page.driver.switch_to.window(second)  # the watching tab follows live, without a reload
    page.wait_text("tool said: deployed 1.4.2 to prod")
    wait_until(lambda: not page.all(".approval-card"), "the card gone in the watching tab")
    assert page.control("GET", f"/sessions/{session}").get("approvals") is None


def test_deny_with_a_reason(tabs: tuple[Page, str, str]) -> None:
    page, first, _ = tabs
    page.driver.switch_to.window(first)
    page.open(f"t-{uuid.uuid4().hex[:10]}").ready()
    page.send("ship it")
    _card(page)
    page.find(".approval-card .approval-reason").send_keys("freeze until Monday")
    page.click(".approval-card .approval-deny")
    page.wait_text("tool said: Denied: freeze until Monday")
    wait_until(lambda: not page.all(".approval-card"), "the card gone")
