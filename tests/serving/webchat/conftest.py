"""The browser the web chat tests of one module share (a fresh headless Chromium profile)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.serving.webchat.browser import chromium


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as browser:
        yield browser
