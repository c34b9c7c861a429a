#!/usr/bin/env bash
# Leak check: run after the test suite (and after `acceptance run`). Fails (exit 1,
# listing every finding) if anything a sandbox or the bundled server owns is left:
#   - network namespaces osb-* (sandboxes), osbprobe-* (the runtime's isolation probe) and acc-* (the
#     confinement's boxes)
#   - live processes of a sandbox: the agent (`__osb_agent__`), bwrap/nsenter started by
#     the runtime (their command lines name /.osb/agent or /run/netns/osb-*), and subjects
#     or servers the suite started (`acceptance reference|serve-mock|run`, same for *.test)
#   - cgroups under <controller>/osb/ (cgroup v1) or /sys/fs/cgroup/osb/ (v2)
#   - the submission confinement's boxes (harness/confine): their cgroups under
#     <controller>/acceptance-confine/ (v1) or /sys/fs/cgroup/acceptance-confine/ (v2), their
#     records and scratch directories under /run/acceptance-confine
#     (the per-uid lock files in uids/ are kept on purpose)
#   - state directories in ${TMPDIR:-/tmp}: osb-mock-* (bundled server), osbt-*
#     (cmd/acceptance tests), egn*/egt*/egp* (egress tests), and any directory up to
#     three levels down holding a bundled-server `sandboxes/` directory (t.TempDir()
#     state dirs left by a killed test binary)
#   - bundled-server instance directories under the state root
#     (${OSB_STATE_ROOT:-/var/lib/osb-capstone/instances} and ${TMPDIR:-/tmp}/osb-capstone-*/instances)
#   - named volumes in the default volume root (<state root>/volumes: the root itself, empty or
#     holding only its .osb registry, is fine) and in temporary volume roots a killed test left
#   - sandbox disk mounts (tmpfs whose source is osb-<id>)
#   - iptables INPUT rules marked osb-acceptance-docker-vault (a docker-target run's bridge exceptions)
# Prints "leakcheck: clean" and exits 0 otherwise.
#
# Cleanup can lag a moment behind a test's end, so the check is retried for
# LEAKCHECK_WAIT seconds (default 10) before it fails. It looks at the whole
# machine: run it when no other suite or `acceptance run` is active.
set -uo pipefail

wait_s="${LEAKCHECK_WAIT:-10}"
tmp="${TMPDIR:-/tmp}"
tmp="${tmp%/}"
self=$$

findings=()

scan() {
	findings=()

	# 1. Network namespaces.
	local ns
	for ns in /run/netns/osb-* /run/netns/osbprobe-* /run/netns/acc-*; do
		[[ -e "$ns" ]] && findings+=("netns ${ns##*/}")
	done

	# 2. Live processes (zombies have an empty cmdline and hold nothing but a pid).
	local p pid cmd state
	local -a argv
	for p in /proc/[0-9]*; do
		pid="${p##*/}"
		[[ "$pid" == "$self" ]] && continue
		argv=()
		mapfile -d '' -t argv 2>/dev/null <"$p/cmdline" || continue
		((${#argv[@]} == 0)) && continue
		state="$(awk '/^State:/ {print $2; exit}' "$p/status" 2>/dev/null)"
		[[ "$state" == "Z" ]] && continue
		cmd="${argv[*]}"
		case "$cmd" in
		*__osb_agent__* | */.osb/agent* | *"/run/netns/osb-"* | *"$tmp/osb-mock-"*)
			findings+=("process $pid: ${cmd:0:200}")
			continue
			;;
		esac
		case "${argv[0]##*/}" in
		acceptance | *.test)
			case "${argv[1]:-}" in
			reference | serve-mock | run) findings+=("process $pid: ${cmd:0:200}") ;;
			esac
			;;
		esac
	done

	# 3. Cgroups of sandboxes.
	local cg
	for cg in /sys/fs/cgroup/*/osb/*/ /sys/fs/cgroup/osb/*/; do
		[[ -d "$cg" ]] && findings+=("cgroup ${cg%/}")
	done

	# 3b. The confinement's boxes: cgroups, records and scratch directories.
	for cg in /sys/fs/cgroup/*/acceptance-confine/*/ /sys/fs/cgroup/acceptance-confine/*/; do
		[[ -d "$cg" ]] && findings+=("confinement cgroup ${cg%/}")
	done
	local box
	for box in "/run/acceptance-confine"/boxes/* "/run/acceptance-confine"/scratch/*; do
		[[ -e "$box" ]] && findings+=("confinement box $box")
	done

	# 4. State directories in the temp dir.
	local d
	shopt -s nullglob
	for d in "$tmp"/osb-mock-* "$tmp"/osbt-*; do
		findings+=("directory $d")
	done
	for d in "$tmp"/egn* "$tmp"/egt* "$tmp"/egp*; do
		[[ -d "$d" && "${d##*/}" =~ ^eg[ntp][0-9]+$ ]] && findings+=("directory $d")
	done
	while IFS= read -r d; do
		case "$d" in "$tmp"/osb-mock-* | "$tmp"/osbt-*) continue ;; esac # already listed
		# Only a bundled server's: sandbox directories are named by UUID.
		local ids
		ids="$(ls -A "$d" 2>/dev/null | grep -E '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' | head -3 | tr '\n' ' ')"
		[[ -n "$ids" ]] && findings+=("sandbox state ${d%/sandboxes}: ${ids% }")
	done < <(find "$tmp" -mindepth 2 -maxdepth 4 -type d -name sandboxes 2>/dev/null)
	local v
	for d in "${OSB_STATE_ROOT:-/var/lib/osb-capstone/instances}"/* "$tmp"/osb-capstone-*/instances/*; do
		[[ -d "$d" ]] || continue
		if [[ "${d##*/}" == volumes ]]; then
			# The default volume root: kept (empty, or with its .osb registry) across
			# runs. Tests use temporary volume roots and the reference pipeline mounts
			# no volume, so any volume in it was left by a test or a run.
			for v in "$d"/*; do
				[[ -e "$v" ]] && findings+=("named volume $v")
			done
			continue
		fi
		findings+=("instance $d")
	done
	# A temporary volume root (t.TempDir(): $tmp/Test<name><digits>/NNN) a killed
	# test left, with volumes in it (its .osb registry says a bundled server used
	# it). A volume root an operator made on purpose elsewhere (a persistent
	# --volume-root, like a Docker named volume) is not a test's leftover.
	while IFS= read -r d; do
		d="${d%/.osb}"
		case "$d" in "$tmp"/osb-capstone-*) continue ;; esac # a state root's: listed above
		for v in "$d"/*; do
			[[ -e "$v" ]] && findings+=("named volume $v")
		done
	done < <(find "$tmp" -mindepth 2 -maxdepth 4 -type d -name .osb -path "$tmp/Test*/.osb" 2>/dev/null)
	shopt -u nullglob

	# 5. Sandbox disk mounts.
	local src mnt rest
	while read -r src mnt rest; do
		[[ "$src" == osb-* ]] && findings+=("mount $mnt")
	done </proc/self/mounts

	# 6. The docker target's INPUT exceptions for its bridge services (harness/dockertarget/bridge.go),
	#    removed when its run ends.
	local rule
	if command -v iptables >/dev/null 2>&1; then
		while read -r rule; do
			[[ -n "$rule" ]] && findings+=("iptables rule $rule")
		done < <(iptables -w -S INPUT 2>/dev/null | grep -- "--comment osb-acceptance-docker-vault" || true)
	fi
}

deadline=$((SECONDS + wait_s))
while :; do
	scan
	((${#findings[@]} == 0)) && break
	((SECONDS >= deadline)) && break
	sleep 1
done

if ((${#findings[@]} > 0)); then
	echo "leakcheck: ${#findings[@]} leftover(s):" >&2
	printf '  %s\n' "${findings[@]}" >&2
	exit 1
fi
echo "leakcheck: clean"
