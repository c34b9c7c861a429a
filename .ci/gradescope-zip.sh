#!/usr/bin/env bash
# `make gradescope-zip`: writes a Gradescope autograder into bin/gradescope/ and zips it as
# bin/gradescope/autograder.zip (upload that zip as the assignment's autograder; docs/grading.md, "Gradescope"):
#   setup.sh, run_autograder   (.ci/gradescope/; Gradescope runs setup.sh once as root, then run_autograder per submission)
#   bin/acceptance             a static build of ./cmd/acceptance (Gradescope's image needs no Go)
#   wheelhouse/                the SDK's pinned wheels (.ci/sdk-wheelhouse.sh) and their requirements.txt
#   .cache/wheels/             the stub package index's wheels (make deps)
#   the repository's files     features, fixtures, baselines, docs (tracked and untracked, not ignored)
# Prints the zip's path.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
dir=bin/gradescope/autograder
zip=bin/gradescope/autograder.zip
ls .cache/wheels/*.whl >/dev/null 2>&1 || { echo "gradescope-zip: no wheels in .cache/wheels (run make deps)" >&2; exit 1; }
mkdir -p bin/gradescope
exec 9>bin/gradescope/.lock   # one writer at a time in this checkout
flock 9
wheelhouse=$(bash .ci/sdk-wheelhouse.sh)
rm -rf "$dir" "$zip"; mkdir -p "$dir/bin" "$dir/.cache/wheels"
git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | xargs -0 cp -a --parents -t "$dir"
cp -a "$wheelhouse" "$dir/wheelhouse"
cp -a .cache/wheels/. "$dir/.cache/wheels/"
cp .ci/gradescope/setup.sh .ci/gradescope/run_autograder "$dir/"
CGO_ENABLED=0 "$GO" build -trimpath -o "$dir/bin/acceptance" ./cmd/acceptance
# setup.sh and run_autograder at the zip's root, as Gradescope expects; modes kept (zipfile records them).
(cd "$dir" && /usr/bin/python3 - <<'PY'
import os, zipfile
with zipfile.ZipFile("../autograder.zip", "w", zipfile.ZIP_DEFLATED) as z:
    for root, dirs, files in os.walk("."):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            if os.path.isfile(p) and not os.path.islink(p):
                z.write(p, os.path.relpath(p, "."))
PY
)
echo "gradescope-zip: $zip ($(du -m "$zip" | cut -f1) MB): setup.sh, run_autograder, bin/acceptance, the SDK wheels, the repository" >&2
echo "$zip"
