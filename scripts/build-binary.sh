#!/usr/bin/env bash
# Build the fastagent binary with PyInstaller (spec: build/fastagent.spec), then smoke-test it with
# scripts/smoke_binary.py (init, invoke, info, tool, MCP, start + HTTP, chat in a pty).
#
#   FASTAGENT_BINARY_MODE=onedir (default; what releases ship) -> build/dist/onedir/fastagent/fastagent
#   FASTAGENT_BINARY_MODE=onefile                               -> build/dist/onefile/fastagent
#   --no-smoke   build only
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
MODE=${FASTAGENT_BINARY_MODE:-onedir}
export FASTAGENT_BINARY_MODE=$MODE
case "$MODE" in
  onedir) BIN=build/dist/onedir/fastagent/fastagent ;;
  onefile) BIN=build/dist/onefile/fastagent ;;
  *) echo "FASTAGENT_BINARY_MODE must be onedir or onefile" >&2; exit 2 ;;
esac
start=$(date +%s)
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "build/dist/$MODE" --workpath "build/work/$MODE" build/fastagent.spec
echo "built $BIN ($MODE, $(du -sh "$(dirname "$BIN")" | cut -f1) on disk) in $(( $(date +%s) - start )) s"
if [ "${1:-}" != "--no-smoke" ]; then
  "$PY" scripts/smoke_binary.py "$BIN"
fi
