# shellcheck shell=bash
# The Debian 12 minbase bootstrap that .ci/grader-rootfs.sh and .ci/docker-sandbox-rootfs.sh share: sourced by both
# (their callers' cache keys hash this file with the script that sources it, so a change here rebuilds both).
#
#   rootfs_start NAME STEPS WORK   picks the bootstrapper (OSB_ROOTFS_TOOL, else mmdebstrap, else debootstrap) or exits
#                                  1 saying neither is installed; makes the work directory /var/tmp/WORK.XXXXXX, removed
#                                  at exit (what is mounted under it unmounted first), with root=$work/root in it.
#   step N MESSAGE                 progress on stderr: "NAME [N/STEPS] MESSAGE (seconds since the start)".
#   rootfs_bootstrap PACKAGES      step 1: $tool --variant=minbase bookworm with PACKAGES (comma-separated) into $root,
#                                  from OSB_DEBIAN_MIRROR (default deb.debian.org); its log's tail on failure.
#   rootfs_trim                    removes what a root filesystem run from an image never reads: docs, manuals, info,
#                                  .deb archives, apt lists, logs, locales other than C*.
#   rootfs_tar N OUT               step N: unmounts what is left under $root, writes it as the tar OUT (through OUT.tmp);
#                                  step N+1: done.

rootfs_start() {
  rootfs_name=$1 rootfs_steps=$2
  tool=${OSB_ROOTFS_TOOL:-}
  if [ -z "$tool" ]; then
    if command -v mmdebstrap >/dev/null; then tool=mmdebstrap; elif command -v debootstrap >/dev/null; then tool=debootstrap; fi
  fi
  [ -n "$tool" ] || { echo "$rootfs_name: neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap)" >&2; exit 1; }
  rootfs_t0=$SECONDS
  work=$(mktemp -d "/var/tmp/$3.XXXXXX")
  trap rootfs_cleanup EXIT
  root=$work/root
}

step() { echo "$rootfs_name [$1/$rootfs_steps] $2 ($((SECONDS - rootfs_t0)) s)" >&2; }

# rootfs_unmount DIR: unmounts everything mounted under DIR, deepest first (debootstrap mounts /proc, and more, inside
# the target while it runs).
rootfs_unmount() {
  awk -v r="$1/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
}

rootfs_cleanup() {
  rootfs_unmount "$work"
  rm -rf --one-file-system "$work"
}

rootfs_bootstrap() {
  local suite=bookworm mirror=${OSB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  step 1 "$tool --variant=minbase $suite with $1"
  if [ "$tool" = mmdebstrap ]; then
    mmdebstrap --mode=root --variant=minbase --include="$1" "$suite" "$root" "$mirror" >"$work/bootstrap.log" 2>&1 \
      || { tail -20 "$work/bootstrap.log" >&2; exit 1; }
  else
    debootstrap --variant=minbase --include="$1" "$suite" "$root" "$mirror" >"$work/bootstrap.log" 2>&1 \
      || { tail -20 "$work/bootstrap.log" >&2; exit 1; }
  fi
}

rootfs_trim() {
  rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/lib/apt/lists/* "$root"/var/log/*.log
  find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'C*' -exec rm -rf {} + 2>/dev/null || true
}

rootfs_tar() {
  local out=$2
  rootfs_unmount "$root"
  step "$1" "writing the tarball"
  tar --numeric-owner --one-file-system -C "$root" -cf "$out.tmp" .
  mv "$out.tmp" "$out"
  step $(($1 + 1)) "done: $out"
}
