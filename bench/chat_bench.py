"""Benchmarks for ``fastagent chat``.

1. Start to first prompt: the real ``fastagent chat`` process in a pseudo-terminal, from spawn
   until the prompt and its status toolbar are on the screen (median of several runs), next to
   ``fastagent --version`` (the interpreter's own start-up).
2. Streaming render cost: a 50 000-character Markdown answer fed to the chat renderer in small
   deltas as a 500 deltas/s stream would deliver them, on a terminal console writing to a StringIO;
   the live region is refreshed at the app's 12.5 Hz on a simulated clock. Reports renderer CPU per
   delta (all, first and last tenth, worst), the total, and the share of one core the stream needs
   (below 100 % keeps up), plus what a single full re-render of the answer costs for comparison.

Run: ``.venv/bin/python bench/chat_bench.py [--runs 5] [--delta-chars 4]``
"""

from __future__ import annotations

import argparse
import io
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ANSWER_CHARS = 50_000
DELTAS_PER_S = 500
TICK_S = 0.08  # the chat app refreshes the live region every 80 ms


# --- 1. start to first prompt ---------------------------------------------------------------------


def _spawn_until(argv: list[str], needle: bytes, cwd: Path, timeout: float = 30.0) -> float:
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    seen = b""
    try:
        while needle not in seen:
            if time.perf_counter() - started > timeout:
                raise RuntimeError(f"no {needle!r} after {timeout}s: {seen[-400:]!r}")
            ready, _, _ = select.select([master], [], [], 0.01)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                seen += chunk
                if b"\x1b[6n" in chunk:
                    os.write(master, b"\x1b[1;1R")
        elapsed = time.perf_counter() - started
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    return elapsed * 1000


def bench_start(runs: int) -> None:
    exe = str(ROOT / ".venv" / "bin" / "fastagent")
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent"
        agent.mkdir()
        (agent / "fastagent.toml").write_text('model = "scripted/echo"\n', encoding="utf-8")
        version = [_spawn_until([exe, "--version"], b"fastagent", agent) for _ in range(runs)]
        toolbar = "· session chat-".encode()  # the status toolbar, drawn with the prompt
        chat = [_spawn_until([exe, "chat", str(agent)], toolbar, agent) for _ in range(runs)]
    print(f"start to first prompt ({runs} runs, pty 120x40, scripted/echo):")
    print(f"  fastagent chat     median {statistics.median(chat):7.1f} ms   min {min(chat):7.1f} ms")
    print(f"  fastagent --version median {statistics.median(version):6.1f} ms   min {min(version):7.1f} ms")


# --- 2. streaming render --------------------------------------------------------------------------


def make_answer(chars: int) -> str:
    parts: list[str] = []
    i = 0
    while sum(len(p) for p in parts) < chars:
        i += 1
        parts.append(f"## Section {i}\n")
        parts.append(
            "The engine streams **text deltas** as they arrive, and the chat must keep up with them "
            "without re-rendering the whole answer. Here is `inline code` and a [link](https://x.y).\n"
        )
        parts.append("- first point about the design\n- second point, a bit longer than the first\n")
        parts.append("1. step one\n2. step two\n3. step three\n")
        parts.append(
            "```python\ndef handler(event: dict) -> str:\n    total = sum(range(100))\n"
            f"    return f'{{event}} {{total}} {i}'\n```\n"
        )
        parts.append("> A quoted remark that spans a line of text for the renderer to wrap nicely.\n")
    text = "\n".join(parts)
    return text[:chars]


def bench_render(delta_chars: int) -> None:
    from rich.console import Console
    from rich.markdown import Markdown

    from fastagent_cli.chat.render import ChatRenderer
    from fastagent_cli.contract import Completed

    answer = make_answer(ANSWER_CHARS)
    deltas = [answer[i : i + delta_chars] for i in range(0, len(answer), delta_chars)]
    clock = [0.0]
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system="truecolor")
    renderer = ChatRenderer(console, clock=lambda: clock[0])
    step = 1 / DELTAS_PER_S
    per_delta: list[float] = []
    per_tick: list[float] = []
    next_tick = TICK_S
    renderer.begin_turn()
    total_started = time.process_time()
    for delta in deltas:
        started = time.process_time()
        renderer.text(delta)
        per_delta.append(time.process_time() - started)
        clock[0] += step
        if clock[0] >= next_tick:  # what the app's ticker does between deltas
            started = time.process_time()
            renderer.refresh()
            per_tick.append(time.process_time() - started)
            next_tick += TICK_S
    renderer.completed(Completed({}))
    renderer.end_turn()
    total = time.process_time() - total_started
    stream_s = len(deltas) / DELTAS_PER_S

    full_started = time.process_time()
    Console(file=io.StringIO(), width=100, force_terminal=True).print(Markdown(answer))
    full = time.process_time() - full_started

    def mean_ms(values: list[float]) -> str:
        return f"{statistics.mean(values) * 1000:7.3f} ms"

    tenth = max(1, len(per_tick) // 10)
    print(
        f"render of a {len(answer)} char answer in {len(deltas)} deltas of {delta_chars} chars "
        f"(a {stream_s:.1f} s stream at {DELTAS_PER_S} deltas/s), terminal console to StringIO:"
    )
    share = total / stream_s * 100
    print(f"  renderer CPU total          {total * 1000:7.1f} ms = {share:.1f} % of one core")
    print(f"  per delta (split only)      {mean_ms(per_delta)} mean, {max(per_delta) * 1000:.3f} ms worst")
    print(
        f"  per refresh ({len(per_tick)} at {1 / TICK_S:.1f} Hz)  {mean_ms(per_tick)} mean, "
        f"{max(per_tick) * 1000:.1f} ms worst"
    )
    print(f"  per refresh, first tenth    {mean_ms(per_tick[:tenth])}")
    print(f"  per refresh, last tenth     {mean_ms(per_tick[-tenth:])}")
    print(f"  renderer CPU per delta      {total / len(deltas) * 1000:7.3f} ms (budget {step * 1000:.3f} ms)")
    print(f"  one full Markdown render of the whole answer: {full * 1000:.1f} ms (the cost per token if")
    print("  every delta re-rendered the answer)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--delta-chars", type=int, default=4)
    parser.add_argument("--skip-start", action="store_true")
    args = parser.parse_args()
    if not args.skip_start:
        bench_start(args.runs)
    bench_render(args.delta_chars)


if __name__ == "__main__":
    main()
