"""The helpers every sandbox has in scope: ``items``, ``names``, ``dig``, ``count_by``, ``to_json``.

They are plain Python, defined in the sandbox itself when a session starts (and again after a
reset), so using them costs no host round trip: ``dig`` inside a loop over a thousand rows is a
thousand sandbox calls, not a thousand suspensions. Their names are reserved: a tool called
``items`` is left out of the catalog with a warning, as a tool called ``print`` is.

The source is written for Monty's subset of Python (no ``callable``, no classes, no generators).
"""

from __future__ import annotations

__all__ = ["HELPER_NAMES", "HELPERS_DOC", "HELPERS_SOURCE"]

HELPER_NAMES = ("items", "names", "dig", "count_by", "to_json")

HELPERS_SOURCE = """\
import json as _helpers_json

_LIST_KEYS = ("items", "results", "data", "entries", "records", "rows", "values", "content")


def _dig_path(path):
    if isinstance(path, int):
        return [path]
    if isinstance(path, str):
        keys = []
        for part in path.split("."):
            if part == "":
                continue
            digits = part[1:] if part.startswith("-") else part
            keys.append(int(part) if digits.isdigit() else part)
        return keys
    return list(path)


def dig(value, path, default=None):
    for key in _dig_path(path):
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, dict) and isinstance(key, int) and str(key) in value:
            value = value[str(key)]
        elif isinstance(value, (list, tuple)) and isinstance(key, int) and -len(value) <= key < len(value):
            value = value[key]
        else:
            return default
    return value


def items(value, key=None):
    if key is not None:
        value = dig(value, key)
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, dict):
        for name in _LIST_KEYS:
            if isinstance(value.get(name), list):
                return value[name]
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
        return [value]
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") or text.startswith("{"):
            return items(_helpers_json.loads(text))
        return [line for line in value.splitlines() if line.strip()]
    return [value]


def names(value, key=None):
    found = []
    for row in items(value):
        if key is not None:
            name = dig(row, key)
        elif isinstance(row, dict):
            name = None
            for field in ("name", "title", "id", "key", "uri"):
                if row.get(field) is not None:
                    name = row[field]
                    break
        else:
            name = row
        if name is not None:
            found.append(name)
    return found


def count_by(rows, key):
    counts = {}
    for row in items(rows):
        if isinstance(key, (str, int, list, tuple)):
            value = dig(row, key)
        else:
            value = key(row)
        if isinstance(value, (list, dict)):
            value = _helpers_json.dumps(value, sort_keys=True)
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items(), key=lambda pair: -pair[1]))


def to_json(value, indent=None):
    return _helpers_json.dumps(value, indent=indent, ensure_ascii=False)
"""

HELPERS_DOC = """\
Helpers in scope (no call budget, they run in the sandbox):
- `items(value, key=None)`: the list inside a result: the value itself if a list, else the list \
under items/results/data/entries/records/rows/values/content (or its only list), parsing JSON \
text first; `key` (a path, see dig) picks where to look.
- `names(value, key=None)`: the name of each of those items (name, title, id, key or uri; or \
the value at `key`).
- `dig(value, path, default=None)`: a nested value by a dotted path or a list of keys \
(`dig(r, "owner.login")`, `dig(r, "rows.0.id")`); `default` when any step is missing.
- `count_by(rows, key)`: `{value: count}` over the items, largest first; `key` is a path or a \
function.
- `to_json(value, indent=None)`: JSON text (non-ASCII kept)."""
