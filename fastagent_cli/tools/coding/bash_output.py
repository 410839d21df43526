"""The output of one ``bash`` call: kept in memory while small, spooled to a temp file once large.

The model sees the tail (2000 lines / 50 KB, :func:`truncate_tail`). When anything is cut, the full
output is in ``$TMPDIR/pi-bash-<16 hex>.log``: streamed there as soon as the output passes 50 KB,
or written at the end when only the line limit was hit. Memory stays bounded however much a
command prints: past 50 KB only a tail window is kept.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from dataclasses import dataclass
from typing import IO, Any

from fastagent_cli.tools.coding._common import run_blocking
from fastagent_cli.tools.coding.truncate import DEFAULT_MAX_BYTES, Truncation, format_size, truncate_tail

__all__ = ["BashOutput", "FormattedOutput"]

_TAIL_WINDOW = 4 * DEFAULT_MAX_BYTES


@dataclass(frozen=True, slots=True)
class FormattedOutput:
    text: str
    details: dict[str, Any] | None


def _temp_path() -> str:
    return os.path.join(tempfile.gettempdir(), f"pi-bash-{secrets.token_hex(8)}.log")


def _open_spool(path: str, initial: bytes) -> IO[bytes]:
    handle = open(path, "wb")  # noqa: SIM115 - kept open while the command runs
    handle.write(initial)
    return handle


def _write(handle: IO[bytes], data: bytes) -> None:
    handle.write(data)


def _write_file(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


class BashOutput:
    """Collects a command's merged stdout/stderr bytes in arrival order."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._total_bytes = 0
        self._newlines = 0
        self._last_byte = b""
        self._line_bytes = 0
        self._previous_line_bytes = 0
        self._spool: IO[bytes] | None = None
        self.full_output_path: str | None = None

    def tail(self, chars: int) -> str:
        """The last ``chars`` characters of the output so far (for progress reports)."""
        return bytes(self._buffer[-4 * chars :]).decode("utf-8", "replace")[-chars:]

    async def append(self, data: bytes) -> None:
        if not data:
            return
        self._total_bytes += len(data)
        self._newlines += data.count(b"\n")
        self._last_byte = data[-1:]
        cut = data.rfind(b"\n")
        if cut < 0:
            self._line_bytes += len(data)
        else:
            before = data.rfind(b"\n", 0, cut)
            self._previous_line_bytes = cut - (before + 1) if before >= 0 else self._line_bytes + cut
            self._line_bytes = len(data) - cut - 1
        self._buffer += data
        if self._spool is None and self._total_bytes > DEFAULT_MAX_BYTES:
            self.full_output_path = _temp_path()
            self._spool = await run_blocking(_open_spool, self.full_output_path, bytes(self._buffer))
        elif self._spool is not None:
            await run_blocking(_write, self._spool, data)
        if self._spool is not None and len(self._buffer) > 2 * _TAIL_WINDOW:
            del self._buffer[: len(self._buffer) - _TAIL_WINDOW]

    def _total_lines(self) -> int:
        if self._total_bytes == 0:
            return 0
        return self._newlines + (0 if self._last_byte == b"\n" else 1)

    async def finish(self, empty_text: str = "(no output)") -> FormattedOutput:
        """Close the spool and format the tail the model sees, with pi's notice when cut."""
        if self._spool is not None:
            await run_blocking(self._spool.close)
        text = bytes(self._buffer).decode("utf-8", "replace")
        cut = truncate_tail(text)
        if not cut.truncated and self._spool is None:
            return FormattedOutput(cut.content or empty_text, None)
        if self.full_output_path is None:
            self.full_output_path = _temp_path()
            await run_blocking(_write_file, self.full_output_path, bytes(self._buffer))
        return self._notice(cut, empty_text)

    def _notice(self, cut: Truncation, empty_text: str) -> FormattedOutput:
        total_lines = self._total_lines()
        truncation = Truncation(
            cut.content,
            True,
            cut.truncated_by or "bytes",
            total_lines,
            self._total_bytes,
            cut.output_lines,
            cut.output_bytes,
            last_line_partial=cut.last_line_partial,
        )
        start = total_lines - truncation.output_lines + 1
        path = self.full_output_path
        text = truncation.content or empty_text
        if truncation.last_line_partial:
            line_bytes = self._last_line_bytes()
            text += (
                f"\n\n[Showing last {format_size(truncation.output_bytes)} of line {total_lines} "
                f"(line is {format_size(line_bytes)}). Full output: {path}]"
            )
        elif truncation.truncated_by == "lines":
            text += f"\n\n[Showing lines {start}-{total_lines} of {total_lines}. Full output: {path}]"
        else:
            text += (
                f"\n\n[Showing lines {start}-{total_lines} of {total_lines} "
                f"({format_size(DEFAULT_MAX_BYTES)} limit). Full output: {path}]"
            )
        details = {"truncation": truncation.to_json(), "fullOutputPath": path}
        return FormattedOutput(text, details)

    def _last_line_bytes(self) -> int:
        return self._line_bytes if self._line_bytes else self._previous_line_bytes
