#!/usr/bin/env bash
# Builds the base root filesystem of the grader image (`make image`, .ci/image.sh) from Debian packages:
# Debian 12 minbase (mmdebstrap, or debootstrap when mmdebstrap is missing) with what grading needs at run time,
# the packages .ci/deps.sh installs on a grading machine: bubblewrap, util-linux (setpriv, nsenter), iproute2,
# iptables, procps, python3 with pandas, matplotlib, pip and venv, ca-certificates, curl, nodejs, chromium (the
# HTML checks), plus tini (PID 1 that reaps orphans) and unzip (a Gradescope autograder zip).
# Written as a tar that .ci/image.sh imports as a local image: no container registry is used.
# The bootstrap itself is .ci/debian-rootfs.sh's, shared with .ci/docker-sandbox-rootfs.sh.
#
#   .ci/grader-rootfs.sh OUT.tar
#
# The caller caches the result under a content hash of this script and .ci/debian-rootfs.sh, so a rerun does not
# rebuild it. Needs root and mmdebstrap or debootstrap (make docker-engine installs both), and a Debian mirror.
# Progress goes to stderr: "grader-rootfs [n/4] …" with the seconds since the start.
set -euo pipefail
out=${1:?usage: grader-rootfs.sh OUT.tar}
packages=bubblewrap,util-linux,iproute2,iptables,procps,python3,python3-pandas,python3-matplotlib,python3-pip,python3-venv
packages+=,ca-certificates,curl,nodejs,chromium,tini,unzip
# shellcheck source=.ci/debian-rootfs.sh
. "$(dirname "$0")/debian-rootfs.sh"

rootfs_start grader-rootfs 4 osb-grader-rootfs
rootfs_bootstrap "$packages"
step 2 "trimming docs, manuals, locales, apt lists"
rootfs_trim
rootfs_tar 3 "$out"
