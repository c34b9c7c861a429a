#!/usr/bin/env bash
# Builds the docker target's sandbox root filesystem from Debian packages (mmdebstrap --variant=minbase, the
# faster of Debian's two bootstrappers here; debootstrap when mmdebstrap is missing):
# Debian 12 with python3, pandas, matplotlib, pip and the wheel the stub package index serves (tabulate),
# as a tar that harness/dockertarget imports as a local image (no container registry is used).
#
#   .ci/docker-sandbox-rootfs.sh OUT.tar WHEEL_DIR
#
# The result is cached by the caller under a content hash of this script, the package list and the wheels,
# so a rerun does not rebuild it. Needs root and mmdebstrap or debootstrap (make docker-engine installs both).
# Progress goes to stderr as it goes: "rootfs [n/5] …" with the seconds since the start.
set -euo pipefail
out=${1:?usage: docker-sandbox-rootfs.sh OUT.tar WHEEL_DIR}
wheels=${2:?usage: docker-sandbox-rootfs.sh OUT.tar WHEEL_DIR}
suite=bookworm
mirror=${OSB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=python3,python3-pandas,python3-matplotlib,python3-pip,ca-certificates

tool=${OSB_ROOTFS_TOOL:-}
if [ -z "$tool" ]; then
  if command -v mmdebstrap >/dev/null; then tool=mmdebstrap; elif command -v debootstrap >/dev/null; then tool=debootstrap; fi
fi
[ -n "$tool" ] || { echo "docker-sandbox-rootfs: neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap)" >&2; exit 1; }
t0=$SECONDS
step() { echo "docker-sandbox-rootfs [$1/5] $2 ($((SECONDS - t0)) s)" >&2; }
work=$(mktemp -d /var/tmp/osb-rootfs.XXXXXX)
cleanup() {
  # debootstrap mounts /proc (and more) inside the target while it runs: unmount anything left before removing.
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
step 2 "the stub index's wheels"
# The stub index's wheels, installed from files (no index is contacted).
mkdir -p "$root/tmp/wheels"
cp "$wheels"/*.whl "$root/tmp/wheels/"
chroot "$root" sh -c 'python3 -m pip install -q --no-index --no-deps --break-system-packages /tmp/wheels/*.whl'
rm -rf "$root/tmp/wheels"
step 3 "trimming docs, manuals, locales"
# Trim what a sandbox never needs.
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/cache/apt/archives/*.deb \
  "$root"/var/lib/apt/lists/* "$root"/var/log/*.log
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'C*' -exec rm -rf {} + 2>/dev/null || true
mkdir -p "$root/workspace"
awk -v r="$root/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
step 4 "writing the tarball"
tar --numeric-owner --one-file-system -C "$root" -cf "$out.tmp" .
mv "$out.tmp" "$out"
step 5 "done: $out"
