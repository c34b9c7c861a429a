#!/usr/bin/env bash
# Downloads (once) the wheels of the official Python SDK, pinned in mock-server/testdata/sdk/requirements.txt, for
# this machine's Python, into .cache/image/wheelhouse-<hash of the pins> with requirements.txt beside them; prints
# that directory. `make image` installs the image's SDK venv from it and `make gradescope-zip` ships it, so neither
# the image's build steps nor Gradescope's setup.sh need a package index (setup.sh falls back to one when the
# wheels do not fit its Python).
set -euo pipefail
cd "$(dirname "$0")/.."
req=mock-server/testdata/sdk/requirements.txt
dir=.cache/image/wheelhouse-$(sha256sum <"$req" | cut -c1-16)
if [ ! -f "$dir/requirements.txt" ]; then
  echo "sdk-wheelhouse: pip download -r $req into $dir" >&2
  rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
  /usr/bin/python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$dir.tmp" -r "$req" >&2
  cp "$req" "$dir.tmp/requirements.txt"
  rm -rf "$dir"; mv "$dir.tmp" "$dir"
fi
echo "$dir"
