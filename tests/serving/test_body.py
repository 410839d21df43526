"""``parse_off_loop``: a body large enough to carry files is parsed in a thread (decoding their
base64 to check it takes about 10 ms a MiB: the event loop does not wait for it), a small one at
once."""

from __future__ import annotations

import threading

from fastagent_cli.serving.body import OFF_LOOP_BYTES, parse_off_loop


async def test_a_large_body_is_parsed_in_a_thread_and_a_small_one_on_the_loop() -> None:
    def where(raw: bytes) -> tuple[int, str]:
        return len(raw), threading.current_thread().name

    loop = threading.current_thread().name
    assert await parse_off_loop(where, b"x" * (OFF_LOOP_BYTES - 1)) == (OFF_LOOP_BYTES - 1, loop)
    size, thread = await parse_off_loop(where, b"x" * OFF_LOOP_BYTES)
    assert size == OFF_LOOP_BYTES and thread != loop
