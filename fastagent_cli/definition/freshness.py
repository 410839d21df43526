"""Is a set of files unchanged since it was read? Answered with ``stat``, never by re-reading.

A :class:`Fingerprint` is the ``(mtime_ns, ctime_ns, size, inode, mode)`` of every path a load
consulted (``None`` for a path that did not exist, so a new file is a change too). Directories
are included, so adding or removing an entry in them is seen; a symlink is followed, so an edit
to its target is seen too, and re-pointing it changes the inode.

Timestamps have a granularity (coarse kernel clocks, some filesystems a whole second), so an edit
made right around the read could keep the same stamp. As git does with its "racily clean" index,
a fingerprint that holds a stamp younger than :data:`RACY_WINDOW_NS` at the time it was taken is
never trusted: the next check reports a change and the caller re-reads. The re-read costs only
while files are being edited.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RACY_WINDOW_NS", "Fingerprint", "fingerprint"]

RACY_WINDOW_NS = 1_000_000_000

Stamp = tuple[int, int, int, int, int] | None


def _stamp(path: Path) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)


@dataclass(frozen=True, slots=True)
class Fingerprint:
    stamps: tuple[Stamp, ...]
    racy: bool

    def still_valid(self, paths: Sequence[Path]) -> bool:
        if self.racy or len(paths) != len(self.stamps):
            return False
        return all(_stamp(p) == s for p, s in zip(paths, self.stamps, strict=True))


def fingerprint(paths: Sequence[Path]) -> Fingerprint:
    stamps = tuple(_stamp(p) for p in paths)
    horizon = time.time_ns() - RACY_WINDOW_NS
    racy = any(s is not None and max(s[0], s[1]) >= horizon for s in stamps)
    return Fingerprint(stamps, racy)
