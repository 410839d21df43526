from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.auth.fake_key_server import KeyServer


@pytest.fixture
def key_server() -> Iterator[KeyServer]:
    with KeyServer() as server:
        yield server
