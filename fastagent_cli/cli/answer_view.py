"""``invoke``'s answer rendered as Markdown on a terminal (rich), as it streams.

Each stretch of answer text between tool lines is one live region: while it streams it shows the
last screenful of the rendered Markdown (so the newest words stay in view); when it ends (a tool
starts, the turn ends) it is printed in full. Lines written to stderr meanwhile go above it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.live import Live

__all__ = ["MarkdownAnswer"]

_REDRAW_S = 0.08
"""At most this often the growing text is parsed again (the whole text each time)."""


class _Tail:
    """The last screenful of a renderable."""

    def __init__(self, renderable: Any) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        lines = console.render_lines(self.renderable, options, pad=False)
        for line in lines[-max(1, console.size.height - 1) :]:
            yield from line
            yield Segment.line()


class MarkdownAnswer:
    def __init__(self, out: TextIO) -> None:
        from rich.console import Console

        self.console = Console(file=out, highlight=False)
        self._text = ""
        self._live: Live | None = None
        self._drawn_at = 0.0

    def write(self, delta: str) -> None:
        from rich.live import Live
        from rich.markdown import Markdown

        self._text += delta
        if self._live is None:
            self._live = Live(
                console=self.console,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=True,
                vertical_overflow="visible",
            )
            self._live.start()
        now = time.monotonic()
        if now - self._drawn_at >= _REDRAW_S:
            self._drawn_at = now
            self._live.update(_Tail(Markdown(self._text)), refresh=True)

    def pause(self) -> None:
        """End this stretch of text: print it in full (a tool line or the end follows)."""
        from rich.markdown import Markdown

        if self._live is None:
            return
        self._live.update(Markdown(self._text))
        self._live.stop()
        self._live = None
        self._text = ""
        self._drawn_at = 0.0
