"""The :class:`~fastagent_cli.chat.commands.ChatUI` of the terminal: rich output for command
results, and pickers (``/resume``, ``/model``) as a numbered list plus a completing prompt."""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import WordCompleter
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from rich.columns import Columns
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from fastagent_cli.chat.render import ChatRenderer
from fastagent_cli.chat.tool_lines import ToolRecord
from fastagent_cli.errors import one_line

__all__ = ["TerminalUI"]

_COLUMNS_OVER = 12
"""Longer pickers are printed in columns."""


class TerminalUI:
    def __init__(self, console: Console, renderer: ChatRenderer, inp: Input, out: Output) -> None:
        self.console = console
        self.renderer = renderer
        self._picker: PromptSession[str] = PromptSession(input=inp, output=out)

    @property
    def show_thinking(self) -> bool:
        return self.renderer.show_thinking

    @show_thinking.setter
    def show_thinking(self, value: bool) -> None:
        self.renderer.show_thinking = value

    def info(self, text: str) -> None:
        self.console.print(Text(text, "cyan"))

    def error(self, text: str) -> None:
        self.console.print(Text(f"✗ {text}", "red"))

    def rows(self, title: str, rows: list[tuple[str, str]]) -> None:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")  # paths and ids are never cut
        for key, value in rows:
            table.add_row(Text(key), Text(value))
        self.console.print(Text(title, "bold underline"))
        self.console.print(table)

    def tool_output(self, record: ToolRecord) -> None:
        self.renderer.tool_output(record)

    def show_session(self, prompt: str, answer: str) -> None:
        if prompt:
            self.console.print(Text(f"› {one_line(prompt, 200)}", "dim"))
        if answer:
            self.console.print(Markdown(answer, code_theme=self.renderer.code_theme))

    async def choose(self, title: str, options: list[tuple[str, str]]) -> str | None:
        self.console.print(Text(title, "bold"))
        numbered = [Text.assemble((f"{i:>3} ", "cyan"), label) for i, (_, label) in enumerate(options, 1)]
        shown = self._fitting(numbered)
        if len(shown) > _COLUMNS_OVER:
            self.console.print(Columns(shown, padding=(0, 3)))
        else:
            for line in shown:
                self.console.print(line)
        if len(shown) < len(numbered):  # the rest is one keystroke away: the prompt filters as you type
            self.console.print(Text(f"  … {len(numbered) - len(shown)} more: type a part of a name", "dim"))
        values = [value for value, _ in options]
        completer = WordCompleter(values, match_middle=True, sentence=True)
        try:
            answer = await self._picker.prompt_async(
                [("bold", "number or name (Enter cancels)› ")],
                completer=completer,
                complete_while_typing=True,
            )
        except (EOFError, KeyboardInterrupt):
            return None
        answer = answer.strip()
        if not answer:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(values):
            return values[int(answer) - 1]
        return answer

    def _fitting(self, numbered: list[Text]) -> list[Text]:
        """The first options that fit the terminal with the title, a "more" line and the prompt."""
        budget = max(3, self.console.height - 4)

        def rows(items: list[Text]) -> int:
            if len(items) <= _COLUMNS_OVER:
                return len(items)
            return len(self.console.render_lines(Columns(items, padding=(0, 3)), pad=False))

        shown = numbered
        while len(shown) > 1 and (height := rows(shown)) > budget:
            shown = shown[: max(1, min(len(shown) - 1, len(shown) * budget // height))]
        return shown

    def terminal_writer(self) -> Callable[[str], None] | None:
        if not self.console.is_terminal:
            return None
        stream = self.console.file

        def write(data: str) -> None:
            stream.write(data)
            stream.flush()

        return write
