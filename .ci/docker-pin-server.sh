#!/usr/bin/env bash
# Pins opensandbox-server==VERSION and its dependencies with hashes for the docker target:
#   .ci/docker-pin-server.sh 1.1.2   → harness/dockertarget/requirements/opensandbox-server-1.1.2.txt
# (resolves with pip against PyPI in a throwaway venv; commit the file).
#   .ci/docker-pin-server.sh 1.1.2 OUT.txt   → writes OUT.txt instead (the docker target's run-time pin of a version
#   with no committed file, kept in the machine's docker-target cache, pins/: harness/dockertarget CacheDir).
set -euo pipefail
cd "$(dirname "$0")/.."
v=${1:?usage: docker-pin-server.sh VERSION}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --disable-pip-version-check --dry-run --ignore-installed --report "$tmp/report.json" "opensandbox-server==$v"
out=${2:-harness/dockertarget/requirements/opensandbox-server-$v.txt}
{
  echo "# opensandbox-server==$v and its dependencies for CPython $(/usr/bin/python3 -c 'import sys;print("%d.%d"%sys.version_info[:2])') on linux $(uname -m), pinned with hashes."
  echo "# Regenerate (or add another version) with: .ci/docker-pin-server.sh VERSION"
  /usr/bin/python3 - "$tmp/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lines = []
for it in r["install"]:
    m = it["metadata"]
    h = it["download_info"].get("archive_info", {}).get("hashes", {}).get("sha256")
    lines.append(f"{m['name'].lower()}=={m['version']} --hash=sha256:{h}")
print("\n".join(sorted(lines)))
PY
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
