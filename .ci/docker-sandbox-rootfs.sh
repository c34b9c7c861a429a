#!/usr/bin/env bash
# Builds the docker target's sandbox root filesystem from Debian packages (mmdebstrap --variant=minbase, the
# faster of Debian's two bootstrappers here; debootstrap when mmdebstrap is missing):
# Debian 12 with python3, pandas, matplotlib, pip and the wheel the stub package index serves (tabulate),
# as a tar that harness/dockertarget imports as a local image (no container registry is used).
# The bootstrap itself is .ci/debian-rootfs.sh's, shared with .ci/grader-rootfs.sh.
#
#   .ci/docker-sandbox-rootfs.sh OUT.tar WHEEL_DIR
#
# The result is cached by the caller under a content hash of this script, .ci/debian-rootfs.sh and the wheels,
# so a rerun does not rebuild it. Needs root and mmdebstrap or debootstrap (make docker-engine installs both).
# Progress goes to stderr as it goes: "docker-sandbox-rootfs [n/5] …" with the seconds since the start.
set -euo pipefail
out=${1:?usage: docker-sandbox-rootfs.sh OUT.tar WHEEL_DIR}
wheels=${2:?usage: docker-sandbox-rootfs.sh OUT.tar WHEEL_DIR}
packages=python3,python3-pandas,python3-matplotlib,python3-pip,ca-certificates
# shellcheck source=.ci/debian-rootfs.sh
. "$(dirname "$0")/debian-rootfs.sh"

rootfs_start docker-sandbox-rootfs 5 osb-rootfs
rootfs_bootstrap "$packages"
step 2 "the stub index's wheels"
# The stub index's wheels, installed from files (no index is contacted).
mkdir -p "$root/tmp/wheels"
cp "$wheels"/*.whl "$root/tmp/wheels/"
chroot "$root" sh -c 'python3 -m pip install -q --no-index --no-deps --break-system-packages /tmp/wheels/*.whl'
rm -rf "$root/tmp/wheels"
step 3 "trimming docs, manuals, locales"
# Trim what a sandbox never needs.
rootfs_trim
mkdir -p "$root/workspace"
rootfs_tar 4 "$out"
