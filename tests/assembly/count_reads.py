"""Run the real CLI with an audit hook that logs every open of an agent's directory files.

    python tests/assembly/count_reads.py <agent dir> <log file> -- <fastagent args...>

Each open of ``fastagent.toml``, ``.env`` or ``models.json`` in the agent directory (attempted or
not: ``.env`` may be absent) appends its file name as one line to the log, as it happens, so the
count survives a process that ends by a signal.
"""

from __future__ import annotations

import os
import sys
from typing import Any

WATCHED = ("fastagent.toml", ".env", "models.json")


def main() -> None:
    agent, log, sep, *args = sys.argv[1:]
    assert sep == "--"
    watched = {os.path.join(os.path.realpath(agent), name) for name in WATCHED}

    def hook(event: str, payload: tuple[Any, ...]) -> None:
        if event != "open" or not isinstance(payload[0], str | bytes | os.PathLike):
            return
        path = os.path.realpath(os.fsdecode(payload[0]))
        if path in watched:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (os.path.basename(path) + "\n").encode())
            finally:
                os.close(fd)

    sys.addaudithook(hook)
    from fastagent_cli.cli.main import main as fastagent

    sys.argv = ["fastagent", *args]
    fastagent()


if __name__ == "__main__":
    main()
