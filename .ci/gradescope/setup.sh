#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image; the autograder zip
# (`make gradescope-zip`) is unpacked in /autograder/source. It installs what grading needs and checks the grader:
#   - Debian/Ubuntu packages, only those missing (the list of .ci/deps.sh, without the test-only ones);
#   - the official Python SDK (opensandbox==1.1.1, pinned) in the venv /autograder/source/.cache/py-sdk, from the
#     zip's wheels when they fit this Python (no index contacted), else from the package index;
#   - the grader, bin/acceptance, a static build made by `make gradescope-zip` (no Go needed here).
set -euo pipefail
cd /autograder/source
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v setpriv >/dev/null || need+=(util-linux)
command -v nsenter >/dev/null || need+=(util-linux)
command -v ip >/dev/null || need+=(iproute2)
command -v iptables >/dev/null || need+=(iptables)
command -v sysctl >/dev/null || need+=(procps)
command -v curl >/dev/null || need+=(curl)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import pandas' 2>/dev/null || need+=(python3-pandas)
python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: apt-get install -y ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! .cache/py-sdk/bin/python -c 'import opensandbox' 2>/dev/null; then
  rm -rf .cache/py-sdk
  python3 -m venv .cache/py-sdk
  if .cache/py-sdk/bin/pip install -q --disable-pip-version-check --no-index --find-links wheelhouse -r wheelhouse/requirements.txt; then
    echo "setup: SDK venv from the zip's wheels"
  else
    echo "setup: the zip's wheels do not fit this Python; installing the pinned SDK from the package index"
    .cache/py-sdk/bin/pip install -q --disable-pip-version-check -r wheelhouse/requirements.txt
  fi
fi
chmod 0755 bin/acceptance
bin/acceptance rubric --format text >/dev/null
echo "setup: ready ($(bin/acceptance rubric --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["entries"]))' 2>/dev/null || echo '?') rubric entries)"
