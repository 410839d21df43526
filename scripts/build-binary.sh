#!/usr/bin/env bash
# Build the single-file fastagent binary with PyInstaller (spec: build/fastagent.spec) and
# smoke-test it: --version, then one `invoke` on the offline scripted model.
# Output: build/dist/fastagent
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath build/dist --workpath build/work build/fastagent.spec
BIN=build/dist/fastagent
"$BIN" --version
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'model = "scripted/echo"\n' > "$tmp/fastagent.toml"
out=$("$BIN" invoke "binary smoke test" "$tmp")
if [ "$out" != "echo: binary smoke test" ]; then
  echo "binary smoke test failed: got '$out'" >&2
  exit 1
fi
"$BIN" models openai >/dev/null
echo "binary ok: $BIN ($(du -h "$BIN" | cut -f1))"
