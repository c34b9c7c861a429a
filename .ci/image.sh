#!/usr/bin/env bash
# `make image`: the grader as an OCI image, built on the project's Docker engine from this repository and Debian
# packages, without any registry pull (docs/grading.md, "The grader as an image"):
#   1. base  osb-acceptance/grader-base:<hash of .ci/grader-rootfs.sh and .ci/debian-rootfs.sh>: Debian 12 with the
#            packages grading needs, bootstrapped by .ci/grader-rootfs.sh into .cache/image/grader-rootfs-<hash>.tar
#            and imported (both kept: the tarball for another engine, the image for the next build);
#   2. the SDK wheels (mock-server/testdata/sdk/requirements.txt) downloaded once into .cache/image/wheelhouse-<hash>
#      by pip on the host; the image's build steps have no network;
#   3. $IMAGE (default osb-acceptance/grader:local) = base + SDK venv + stub wheels + repository + a static
#      build of ./cmd/acceptance, with the engine's layer cache: a rebuild after a code change redoes two small layers.
# DOCKER_HOST picks another engine; unset, the project's own (.ci/docker-engine.sh start).
# Prints the image id on stdout; progress and each step's seconds on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-osb-acceptance/grader:local}
BASE_REPO=osb-acceptance/grader-base
GO=${GO:-go}
cache=.cache/image
t0=$SECONDS
say() { echo "image: $* ($((SECONDS - t0)) s)" >&2; }
if [ -z "${DOCKER_HOST:-}" ]; then
  eval "$(bash .ci/docker-engine.sh start)"
  export DOCKER_HOST
fi
command -v docker >/dev/null || { echo "image: the docker CLI is missing (make docker-engine installs Debian's docker.io)" >&2; exit 1; }
mkdir -p "$cache"
# One build at a time in this checkout (two would share .cache/image/ctx).
exec 9>"$cache/.lock"
flock 9

# 1. The base image.
# Keyed by the rootfs script and the Debian bootstrap it sources (cmd/acceptance's image test computes it too).
h=$(cat .ci/grader-rootfs.sh .ci/debian-rootfs.sh | sha256sum | cut -c1-16)
base=$BASE_REPO:$h
if docker image inspect "$base" >/dev/null 2>&1; then
  say "base $base: in the engine"
else
  tarball=$cache/grader-rootfs-$h.tar
  if [ ! -f "$tarball" ]; then
    say "base: bootstrapping Debian 12 into $tarball (minutes; cached)"
    bash .ci/grader-rootfs.sh "$tarball"
  fi
  say "base: importing $tarball as $base"
  docker import --message "grader base from .ci/grader-rootfs.sh ($h)" "$tarball" "$base" >/dev/null
fi

# 2. The SDK wheels.
wheelhouse=$(bash .ci/sdk-wheelhouse.sh)
ls .cache/wheels/*.whl >/dev/null 2>&1 || { echo "image: no wheels in .cache/wheels (run make deps)" >&2; exit 1; }

# 3. The build context: Dockerfile, wheels, the repository's files (tracked and untracked, not ignored), the binary.
ctx=$cache/ctx
rm -rf "$ctx"; mkdir -p "$ctx/src" "$ctx/wheels"
cp .ci/image/Dockerfile "$ctx/Dockerfile"
cp -a "$wheelhouse" "$ctx/wheelhouse"
cp -a .cache/wheels/. "$ctx/wheels/"
git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | xargs -0 cp -a --parents -t "$ctx/src"
say "building a static ./cmd/acceptance"
CGO_ENABLED=0 "$GO" build -trimpath -o "$ctx/acceptance" ./cmd/acceptance
say "docker build $IMAGE"
DOCKER_BUILDKIT=0 docker build -q --build-arg BASE="$base" -t "$IMAGE" "$ctx" >"$cache/build.id" 2>"$cache/build.err" \
  || { cat "$cache/build.err" >&2; exit 1; }
say "built $IMAGE $(cat "$cache/build.id")"
cat "$cache/build.id"
