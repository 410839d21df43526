"""Regenerate completions/ (the bash, zsh and fish scripts `fastagent completion <shell>` prints).

.venv/bin/python scripts/gen_completions.py          write them
.venv/bin/python scripts/gen_completions.py --check  exit 1 naming the stale files
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastagent_cli.cli.completion_cmd import SHELLS, completion_script  # noqa: E402

FILES = {"bash": "fastagent.bash", "zsh": "_fastagent", "fish": "fastagent.fish"}


def expected() -> dict[Path, str]:
    return {ROOT / "completions" / FILES[shell]: completion_script(shell) for shell in SHELLS}


def main() -> int:
    check = sys.argv[1:] == ["--check"]
    stale = []
    for path, text in expected().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not check:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if check and stale:
        print(f"stale: {', '.join(map(str, stale))} (run scripts/gen_completions.py)", file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
