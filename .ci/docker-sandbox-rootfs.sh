#!/usr/bin/env bash
# Builds the docker target's sandbox root filesystem from Debian packages (mmdebstrap --variant=minbase, the
# faster of Debian's two bootstrappers here; debootstrap when mmdebstrap is missing):
# Debian 12 with python3, pandas, matplotlib and pip, trusting this machine's stub CA, as a tar that
# harness/dockertarget imports as a local image (no container registry is used).
#
# It deliberately does NOT carry the package the install step asks for (tabulate,
# cmd/acceptance/reference.InstallPackage): a subject's install asks the run's stub package index, which the docker
# target serves on the engine's bridge as https://pypi.org and https://files.pythonhosted.org (harness/dockertarget,
# bridge_tls.go), so drill D1 (the index denied mid-run) is met on the default image; the build fails if the image
# carries tabulate. The index's certificate is signed by the stub CA (harness/dockertarget/stubca.go); its
# certificate (never its key) goes into the image's trust store, /etc/ssl/certs/ca-certificates.crt, which is the
# bundle Debian's pip verifies with (its vendored certifi is patched to return that file; checked below).
# The bootstrap itself is .ci/debian-rootfs.sh's, shared with .ci/grader-rootfs.sh.
#
#   .ci/docker-sandbox-rootfs.sh OUT.tar STUB_CA.crt
#
# The result is cached by the caller under a content hash of this script, .ci/debian-rootfs.sh and the CA
# certificate, so a rerun does not rebuild it. Needs root and mmdebstrap or debootstrap (make docker-engine
# installs both). Progress goes to stderr as it goes: "docker-sandbox-rootfs [n/5] …" with the seconds since the start.
set -euo pipefail
out=${1:?usage: docker-sandbox-rootfs.sh OUT.tar STUB_CA.crt}
ca=${2:?usage: docker-sandbox-rootfs.sh OUT.tar STUB_CA.crt}
grep -q 'BEGIN CERTIFICATE' "$ca" || { echo "docker-sandbox-rootfs: $ca is not a PEM certificate" >&2; exit 1; }
if grep -q 'PRIVATE KEY' "$ca"; then echo "docker-sandbox-rootfs: $ca carries a private key; only the certificate goes into the image" >&2; exit 1; fi
packages=python3,python3-pandas,python3-matplotlib,python3-pip,ca-certificates
# shellcheck source=.ci/debian-rootfs.sh
. "$(dirname "$0")/debian-rootfs.sh"

rootfs_start docker-sandbox-rootfs 5 osb-rootfs
rootfs_bootstrap "$packages"
step 2 "no tabulate in the image; the stub CA in its trust store, as pip reads it"
# The install step's package must come from an index, never from the image.
if chroot "$root" python3 -c 'import tabulate' 2>/dev/null; then
  echo "docker-sandbox-rootfs: the root filesystem carries tabulate (a Debian package pulled it in); D1 could not be met" >&2
  exit 1
fi
cp "$ca" "$root/usr/local/share/ca-certificates/osb-acceptance-stub-index.crt"
chroot "$root" update-ca-certificates >/dev/null
bundle=$(chroot "$root" python3 -c 'from pip._vendor import certifi; print(certifi.where())')
if [ "$bundle" != /etc/ssl/certs/ca-certificates.crt ]; then
  echo "docker-sandbox-rootfs: pip verifies with $bundle, not the system trust store; the stub index would be refused" >&2
  exit 1
fi
want=$(openssl x509 -in "$ca" -noout -fingerprint -sha256 2>/dev/null || true)
if ! chroot "$root" python3 - "$bundle" <<'PY'
import ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
sys.exit(0 if any("osb-acceptance stub package index CA" in str(c.get("subject")) for c in ctx.get_ca_certs()) else 1)
PY
then
  echo "docker-sandbox-rootfs: the stub CA is not in $bundle after update-ca-certificates ($want)" >&2
  exit 1
fi
step 3 "trimming docs, manuals, locales"
# Trim what a sandbox never needs.
rootfs_trim
mkdir -p "$root/workspace"
rootfs_tar 4 "$out"
