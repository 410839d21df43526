#!/usr/bin/env bash
# Build the release artifact: the one-directory binary (built and smoke-tested by
# scripts/build-binary.sh), packed as build/release/fastagent-<version>-<os>-<arch>.tar.gz, with its
# SHA-256 checksum beside it (<artifact>.sha256, the `sha256sum -c` format). The version comes from
# fastagent_cli/_version.py. Run it once per platform (the binary is built for the machine it runs on).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
VERSION=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' fastagent_cli/_version.py)
if [ -z "$VERSION" ]; then
  echo "release: no __version__ in fastagent_cli/_version.py" >&2
  exit 1
fi
OS=$(uname -s | tr '[:upper:]' '[:lower:]')
ARCH=$(uname -m)
NAME="fastagent-$VERSION-$OS-$ARCH"
FASTAGENT_BINARY_MODE=onedir PYTHON="$PY" scripts/build-binary.sh
built=$(build/dist/onedir/fastagent/fastagent --version)
if [ "$built" != "fastagent $VERSION" ]; then
  echo "release: the binary says '$built', _version.py says $VERSION" >&2
  exit 1
fi
mkdir -p build/release
rm -rf "build/release/$NAME" "build/release/$NAME.tar.gz" "build/release/$NAME.tar.gz.sha256"
cp -a build/dist/onedir/fastagent "build/release/$NAME"
tar -C build/release --owner=0 --group=0 --numeric-owner --sort=name -czf "build/release/$NAME.tar.gz" "$NAME"
rm -rf "build/release/$NAME"
(cd build/release && sha256sum "$NAME.tar.gz" > "$NAME.tar.gz.sha256")
echo "release $VERSION: build/release/$NAME.tar.gz ($(du -h "build/release/$NAME.tar.gz" | cut -f1))"
cat "build/release/$NAME.tar.gz.sha256"
