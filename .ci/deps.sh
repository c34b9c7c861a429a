#!/usr/bin/env bash
# Installs what the suite needs on Debian, as root; idempotent and quiet when all is present.
# Says exactly what is missing when it cannot install it.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v nsenter >/dev/null || need_apt+=(util-linux)
command -v ip >/dev/null || need_apt+=(iproute2)
# Submission commands are confined (harness/confine): setpriv drops to their
# own uid, iptables redirects their network namespace to the grader's forwarder.
command -v setpriv >/dev/null || need_apt+=(util-linux)
command -v iptables >/dev/null || need_apt+=(iptables)
/usr/bin/python3 -c 'import pandas' 2>/dev/null || need_apt+=(python3-pandas)
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need_apt+=(python3-matplotlib)
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need_apt+=(ca-certificates)
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
/usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
command -v sysctl >/dev/null || need_apt+=(procps)
# The model-endpoint tests' test commands make their chat request with curl.
command -v curl >/dev/null || need_apt+=(curl)
# Headless browser for the report.html test (harness/report/render TestHTMLInChromium, classreport TestClassHTMLInChromium).
command -v chromium >/dev/null || need_apt+=(chromium)

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "missing: ${need_apt[*]} (install them with: apt-get install -y ${need_apt[*]})" >&2
    exit 1
  fi
  echo "deps: apt-get install -y ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The wheel the stub package index serves to sandboxes (the reference pipeline installs it).
wheels=.cache/wheels
if ! ls "$wheels"/tabulate-*.whl >/dev/null 2>&1; then
  mkdir -p "$wheels"
  echo "deps: downloading the stub index's wheel (tabulate==0.9.0) into $wheels"
  /usr/bin/python3 -m pip download -q --no-deps --only-binary=:all: -d "$wheels" 'tabulate==0.9.0' \
    || { echo "could not download tabulate==0.9.0 from the package registry; the stub index will be empty and install steps will fail" >&2; }
fi

# The official SDKs, pinned, for the SDK compatibility tests (mock-server/jssdk_test.go, pysdk_test.go).
sdk=mock-server/testdata/sdk
if [ ! -f "$sdk/node_modules/@alibaba-group/opensandbox/package.json" ]; then
  echo "deps: npm ci in $sdk (@alibaba-group/opensandbox 0.1.11)"
  (cd "$sdk" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
if ! .cache/py-sdk/bin/python -c 'import opensandbox, code_interpreter' 2>/dev/null; then
  echo "deps: venv .cache/py-sdk with opensandbox==1.1.1 and opensandbox-code-interpreter==1.1.1"
  rm -rf .cache/py-sdk
  /usr/bin/python3 -m venv .cache/py-sdk
  .cache/py-sdk/bin/pip install -q --disable-pip-version-check -r "$sdk/requirements.txt"
fi
# The official OpenAI Python client (harness/model's compatibility test), in its own venv.
if ! .cache/openai-py/bin/python -c 'import openai' 2>/dev/null; then
  echo "deps: venv .cache/openai-py with openai==3.51.0"
  rm -rf .cache/openai-py
  /usr/bin/python3 -m venv .cache/openai-py
  .cache/openai-py/bin/pip install -q --disable-pip-version-check -r harness/model/testdata/openai-requirements.txt
fi
