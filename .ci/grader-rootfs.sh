#!/usr/bin/env bash
# Builds the base root filesystem of the grader image (`make image`, .ci/image.sh) from Debian packages:
# Debian 12 minbase (mmdebstrap, or debootstrap when mmdebstrap is missing) with what grading needs at run time,
# the packages .ci/deps.sh installs on a grading machine: bubblewrap, util-linux (setpriv, nsenter), iproute2,
# iptables, procps, python3 with pandas, matplotlib, pip and venv, ca-certificates, curl, nodejs, chromium (the
# HTML checks), plus tini (PID 1 that reaps orphans) and unzip (a Gradescope autograder zip).
# Written as a tar that .ci/image.sh imports as a local image: no container registry is used.
#
#   .ci/grader-rootfs.sh OUT.tar
#
# The caller caches the result under a content hash of this script, so a rerun does not rebuild it.
# Needs root and mmdebstrap or debootstrap (make docker-engine installs both), and a Debian mirror.
# Progress goes to stderr: "grader-rootfs [n/4] …" with the seconds since the start.
set -euo pipefail
out=${1:?usage: grader-rootfs.sh OUT.tar}
suite=bookworm
mirror=${OSB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=bubblewrap,util-linux,iproute2,iptables,procps,python3,python3-pandas,python3-matplotlib,python3-pip,python3-venv
packages+=,ca-certificates,curl,nodejs,chromium,tini,unzip

tool=${OSB_ROOTFS_TOOL:-}
if [ -z "$tool" ]; then
  if command -v mmdebstrap >/dev/null; then tool=mmdebstrap; elif command -v debootstrap >/dev/null; then tool=debootstrap; fi
fi
[ -n "$tool" ] || { echo "grader-rootfs: neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap)" >&2; exit 1; }
t0=$SECONDS
step() { echo "grader-rootfs [$1/4] $2 ($((SECONDS - t0)) s)" >&2; }
work=$(mktemp -d /var/tmp/osb-grader-rootfs.XXXXXX)
cleanup() {
  awk -v r="$work/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
root=$work/root
step 1 "$tool --variant=minbase $suite with $packages"
if [ "$tool" = mmdebstrap ]; then
  mmdebstrap --mode=root --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >"$work/bootstrap.log" 2>&1 \
    || { tail -20 "$work/bootstrap.log" >&2; exit 1; }
else
  debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >"$work/bootstrap.log" 2>&1 \
    || { tail -20 "$work/bootstrap.log" >&2; exit 1; }
fi
step 2 "trimming docs, manuals, locales, apt lists"
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/cache/apt/archives/*.deb \
  "$root"/var/lib/apt/lists/* "$root"/var/log/*.log
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'C*' -exec rm -rf {} + 2>/dev/null || true
awk -v r="$root/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
step 3 "writing the tarball"
tar --numeric-owner --one-file-system -C "$root" -cf "$out.tmp" .
mv "$out.tmp" "$out"
step 4 "done: $out"
