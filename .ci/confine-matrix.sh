#!/usr/bin/env bash
# The confinement matrix of docs/confinement.md ("What a machine allows"), measured: `acceptance confine-probe`
# run on this host and in containers of the project's docker engine (make docker-engine; no registry: the image is
# one the docker target built locally, or IMAGE=...), one column per setting:
#   host          this machine, as the grader runs here
#   privileged    docker run --privileged (the grader image's documented full-level way)
#   near-privileged  every capability but CAP_SYS_RESOURCE, seccomp and AppArmor unconfined (what this engine gives
#                 when --privileged cannot start: its host lacks CAP_SYS_RESOURCE)
#   default       Docker's default seccomp profile and capabilities, root inside (Gradescope; ~ Pod Security "baseline")
#   default+nnp   the same with --security-opt no-new-privileges
#   restricted    Pod Security "restricted" as Docker options: no-new-privileges, --cap-drop ALL, a non-root user
# The static acceptance binary and the host's bwrap are bound in read-only; containers get --network none.
#   .ci/confine-matrix.sh            prints the markdown table
set -euo pipefail
cd "$(dirname "$0")/.."
export DOCKER_HOST=${DOCKER_HOST:-unix:///run/osb-acceptance/docker.sock}
IMAGE=${IMAGE:-$(docker images --format '{{.Repository}}:{{.Tag}}' osb-acceptance/sandbox | head -1)}
[ -n "$IMAGE" ] || { echo "confine-matrix: no local image osb-acceptance/sandbox (make test-docker builds it; or IMAGE=...)" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
CGO_ENABLED=0 go build -o "$work/acceptance" ./cmd/acceptance
binds=(-v "$work/acceptance:/acceptance:ro")
[ -x /usr/bin/bwrap ] && binds+=(-v /usr/bin/bwrap:/usr/bin/bwrap:ro)
probe() { # name, docker options...
  local name=$1; shift
  if [ "$name" = host ]; then "$work/acceptance" confine-probe --json >"$work/$name.json"; return; fi
  docker run --rm --network none "${binds[@]}" "$@" "$IMAGE" /acceptance confine-probe --json >"$work/$name.json" 2>"$work/$name.err" ||
    { why=$(grep -m1 -o 'unable to [^:]*: [^:]*' "$work/$name.err" || head -c 200 "$work/$name.err" | tr -d '\n"')
      printf '[{"name":"container started","works":false,"detail":"%s"}]\n' "$why" >"$work/$name.json"; }
}
probe host
probe privileged --privileged
probe near-privileged --cap-add ALL --cap-drop SYS_RESOURCE --security-opt seccomp=unconfined --security-opt apparmor=unconfined
probe default
probe default+nnp --security-opt no-new-privileges
probe restricted --security-opt no-new-privileges --cap-drop ALL --user 65534:65534
echo "Image $IMAGE; engine $(docker version --format '{{.Server.Version}}'); kernel $(uname -r); $(date -u +%Y-%m-%dT%H:%MZ)."
echo
python3 - "$work" host privileged near-privileged default default+nnp restricted <<'PY'
import json, sys
d, cols = sys.argv[1], sys.argv[2:]
data = {c: {r["name"]: r for r in json.load(open(f"{d}/{c}.json"))} for c in cols}
names = ["container started"]
for c in cols:
    for n in data[c]:
        if n not in names:
            names.append(n)
def cell(r, c=None):
    if r is None:
        return "works" if c is not None else "—"
    v = r["detail"].replace("|", "\\|")
    if len(v) > 90:
        v = v[:87] + "…"
    return v if r["works"] else "**no**: " + v
print("| mechanism | " + " | ".join(cols) + " |")
print("|---|" + "---|" * len(cols))
for n in names:
    print(f"| {n} | " + " | ".join(cell(data[c].get(n), c if n == "container started" else None) for c in cols) + " |")
PY
