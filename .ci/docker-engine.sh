#!/usr/bin/env bash
# The project's own Docker engine for the docker target (`make docker-engine`), set up so that no container can
# send anything off this machine:
#   - Debian's docker.io (installed with apt when dockerd is missing; the package's own service is not started);
#   - its own dockerd: data-root /var/lib/osb-acceptance/docker, socket/pid/exec-root under /run/osb-acceptance;
#   - a dedicated bridge (osbacc0, 10.213.47.1/24) as the default bridge network, --iptables=false
#     --ip-forward=false --ip-masq=false (no MASQUERADE, no NAT), and iptables rules that DROP everything
#     forwarded from or to the bridge and every new connection from the bridge to the host itself;
#   - container DNS pointed at the bridge's own address (OSB_DOCKER_DNS overrides it): during a docker-target
#     run the harness answers there, for the data API stub's name only (everything else REFUSED, nothing
#     forwarded; harness/dockertarget/bridge.go); between runs nothing listens and the bridge's INPUT DROP
#     holds, so nothing resolves;
#   - registry pulls fail at once (the daemon's proxy is a closed loopback port) unless OSB_DOCKER_ALLOW_PULL=1
#     (`make docker-engine ALLOW_PULL=1`); the daemon's setting is kept in $RUN_DIR/allow-pull, and a start asking
#     for the other one restarts the daemon (its running containers stop), so the setting asked for is the one in force;
#   - overlay2 storage when the kernel allows it, else vfs.
# Published ports are bound to 127.0.0.1 by the control plane; docker-proxy carries them (no iptables DNAT).
#
#   .ci/docker-engine.sh start    idempotent: starts it unless it already answers; prints DOCKER_HOST
#   .ci/docker-engine.sh stop     stops it and removes the bridge and the iptables rules it added
#   .ci/docker-engine.sh status   exit 0 when it answers
#   .ci/docker-engine.sh env      prints the DOCKER_HOST line to eval
set -euo pipefail

BRIDGE=${OSB_DOCKER_BRIDGE:-osbacc0}
BRIDGE_CIDR=${OSB_DOCKER_BRIDGE_CIDR:-10.213.47.1/24}
DATA_ROOT=${OSB_DOCKER_DATA_ROOT:-/var/lib/osb-acceptance/docker}
RUN_DIR=${OSB_DOCKER_RUN_DIR:-/run/osb-acceptance}
SOCK=$RUN_DIR/docker.sock
PIDFILE=$RUN_DIR/dockerd.pid
PULLFILE=$RUN_DIR/allow-pull   # 1 when the running daemon may pull, 0 when it may not
WANT_PULL=0; [ "${OSB_DOCKER_ALLOW_PULL:-}" = 1 ] && WANT_PULL=1
LOG=${OSB_DOCKER_LOG:-/var/log/osb-acceptance-dockerd.log}
HOSTURL=unix://$SOCK
TAG=osb-acceptance-docker   # iptables comment marking the rules this script adds

say() { echo "docker-engine: $*" >&2; }

answers() { [ -S "$SOCK" ] && timeout 5 curl -sf --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1; }

install_engine() {
  local need=()
  command -v dockerd >/dev/null || need+=(docker.io)
  command -v iptables >/dev/null || need+=(iptables)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
  command -v curl >/dev/null || need+=(curl)
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "missing: ${need[*]} (apt-get install -y ${need[*]})"; exit 1
  fi
  say "apt-get install -y ${need[*]} (the package's own docker service is kept from starting)"
  # The distribution's service would start a dockerd with NAT and the default docker0 bridge: never.
  local own_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; own_policy=1
  fi
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  [ -n "$own_policy" ] && rm -f /usr/sbin/policy-rc.d
  return 0
}

rule() { # rule TABLE-CMD CHAIN ARGS...: insert once, marked
  local ipt=$1 chain=$2; shift 2
  "$ipt" -w -C "$chain" "$@" -m comment --comment "$TAG" 2>/dev/null || "$ipt" -w -I "$chain" 1 "$@" -m comment --comment "$TAG"
}

isolate() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$BRIDGE_CIDR" dev "$BRIDGE"
  fi
  ip link set "$BRIDGE" up
  # Nothing is forwarded from or to the bridge (even if someone turns ip_forward on), and containers may not
  # open connections to the host itself (its other addresses included); replies to the host's own
  # connections into the bridge (docker-proxy → container) still pass. Inserted first, so they win.
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    rule $ipt FORWARD -i "$BRIDGE" -j DROP
    rule $ipt FORWARD -o "$BRIDGE" -j DROP
    rule $ipt INPUT -i "$BRIDGE" -j DROP
    rule $ipt INPUT -i "$BRIDGE" -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
  done
}

unisolate() {
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for chain in INPUT FORWARD; do
      while read -r spec; do
        [ -n "$spec" ] || continue
        eval "$ipt -w ${spec/-A /-D }" || true
      done < <($ipt -w -S "$chain" 2>/dev/null | grep -- "--comment $TAG" || true)
    done
  done
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link del "$BRIDGE" || true
}

start_daemon() { # start_daemon DRIVER
  mkdir -p "$DATA_ROOT" "$RUN_DIR"
  local proxy=(HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY=)
  [ "$WANT_PULL" = 1 ] && proxy=()
  echo "$WANT_PULL" >"$PULLFILE"
  env "${proxy[@]}" setsid dockerd \
    --host "$HOSTURL" --pidfile "$PIDFILE" --data-root "$DATA_ROOT" --exec-root "$RUN_DIR/exec" \
    --bridge "$BRIDGE" --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --ipv6=false \
    --dns "${OSB_DOCKER_DNS:-${BRIDGE_CIDR%/*}}" --userland-proxy=true --storage-driver "$1" --log-driver json-file \
    --log-opt max-size=10m --max-concurrent-downloads 1 \
    >>"$LOG" 2>&1 </dev/null &
  local i
  for i in $(seq 1 60); do
    answers && return 0
    kill -0 $! 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}

stop_daemon() {
  if [ -f "$PIDFILE" ]; then
    local pid; pid=$(cat "$PIDFILE")
    if kill -0 "$pid" 2>/dev/null && grep -q dockerd "/proc/$pid/comm" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" || true
    fi
    rm -f "$PIDFILE"
  fi
  rm -f "$PULLFILE"
}

case "${1:-start}" in
  start)
    if answers; then
      # A daemon started before the pull setting was recorded is the default one: pulls refused.
      have=$(cat "$PULLFILE" 2>/dev/null || echo 0)
      if [ "$have" = "$WANT_PULL" ]; then
        say "already running ($HOSTURL)"; isolate; echo "DOCKER_HOST=$HOSTURL"; exit 0
      fi
      [ "$(id -u)" = 0 ] || { say "needs root to restart the engine for the pull setting asked for"; exit 1; }
      say "restarting: it runs with pulls $( [ "$have" = 1 ] && echo allowed || echo refused ), pulls $( [ "$WANT_PULL" = 1 ] && echo allowed || echo refused ) asked for (its running containers stop)"
      stop_daemon
    fi
    [ "$(id -u)" = 0 ] || { say "needs root"; exit 1; }
    install_engine
    isolate
    stop_daemon   # a stale pid file from a killed daemon
    if start_daemon overlay2; then driver=overlay2
    else
      say "overlay2 did not start (see $LOG); trying vfs (every container then copies its image)"
      stop_daemon
      start_daemon vfs || { say "dockerd did not start; see $LOG"; tail -20 "$LOG" >&2; exit 1; }
      driver=vfs
    fi
    say "started: $HOSTURL, storage $driver, bridge $BRIDGE $BRIDGE_CIDR (no forwarding, no NAT)"
    echo "DOCKER_HOST=$HOSTURL"
    ;;
  stop)
    stop_daemon
    unisolate
    say "stopped; bridge $BRIDGE and the rules marked $TAG removed"
    ;;
  status) answers ;;
  env) echo "DOCKER_HOST=$HOSTURL" ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
