"""The collector's settings: for start-up and once a server listens (:mod:`fastagent_cli.heap`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from fastagent_cli.heap import YOUNG_THRESHOLD, settle_heap


@pytest.fixture(autouse=True)
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_start_up_is_frozen_and_the_young_generation_grows() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    survivors = [[object()] for _ in range(100)]  # alive at start-up: frozen, never scanned again
    settle_heap()
    assert gc.get_freeze_count() >= len(survivors)
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)


def test_a_threshold_raised_already_or_a_collector_switched_off_is_kept() -> None:
    gc.set_threshold(YOUNG_THRESHOLD * 3, 5, 20)
    settle_heap()
    assert gc.get_threshold() == (YOUNG_THRESHOLD * 3, 5, 20)
    gc.set_threshold(0, 10, 10)
    settle_heap()
    assert gc.get_threshold() == (0, 10, 10)


def test_the_command_line_raises_the_threshold_first_thing(capsys: pytest.CaptureFixture[str]) -> None:
    from fastagent_cli.cli.main import run

    gc.set_threshold(700, 10, 10)
    assert run(["--help"]) == 0
    assert "Usage" in capsys.readouterr().out
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
