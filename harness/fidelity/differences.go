package fidelity

// Difference is a known difference between the bundled server and a real
// OpenSandbox that is not an OpenAPI deviation (those come from
// mock-server's Deviations list).
type Difference struct {
	Topic  string
	Bundle string // what the bundled server does
	Real   string // what OpenSandbox 1.1.1 does
	Source string // CONTRACT section or where it was seen
}

// Differences are the behaviour differences the project knows of.
var Differences = []Difference{
	{"no networkPolicy", "the sandbox has loopback only", "no sidecar: unrestricted egress", "CONTRACT §3.1; mock-server/egress/README.md"},
	{"egress TLS", "intercepted for every policy (per-server CA)", "intercepted only with credentialProxy", "docs/grading.md, Known limitations"},
	{"egress denials", "every decision audited (and optional webhook)", "not logged: a metric, or an opt-in webhook the server does not set", "CONTRACT §3.4"},
	{"allowed host without upstream", "fails closed (502 from the gateway; DNS still answers 127.0.0.1)", "resolved upstream; offline the sidecar answers SERVFAIL", "CONTRACT §3.4, §10"},
	{"credentialProxy", "works with any egress mode", "needs the server's [egress] mode = \"dns+nft\" (else 400 SANDBOX::INVALID_PARAMETER)", "CONTRACT §10"},
	{"capacity (D3)", "simulated 429 KUBERNETES::POOL_CAPACITY_EXHAUSTED + Retry-After (admin fault)", "Docker: never 429 (no pools); Kubernetes: a poolRef create that finds no pool capacity before the acquisition timeout answers 429 KUBERNETES::POOL_CAPACITY_EXHAUSTED with Retry-After. On a real target the suite's recording proxy answers the run's creates with that 429 itself, labelled injected by the harness (docs/docker.md, D3)", "server 1.1.1 services/k8s/kubernetes_service.py (CONTRACT §6 and §9 say never: wrong)"},
	{"egress policy at run time (D1)", "the package index is denied for one run through the admin fault API", "the suite denies the package index in the subject's sandbox through its egress sidecar's runtime policy API (PATCH /policy on port 18080) as soon as the create is answered; install attempts come from the recording proxy, the index's answers are not counted (the sidecar logs no denials)", "CONTRACT §3.3; docs/grading.md"},
	{"sandbox image", "python:* maps to the host's Debian python3 profile: python, python3, pip, pip3 in /usr/local/bin link to Debian's Python 3.11 (the host's own /usr/local/bin hidden); /etc/os-release is the host's Debian's", "the image is pulled and run as a container (python:3.x: its own Python build in /usr/local/bin)", "mock-server/README.md"},
	{"create → Running", "tens of milliseconds", "seconds (container start; see the ledger's run figures)", "CONTRACT §10"},
	{"audit and admin API", "/_mock/* (commands, files, egress, canaries, faults)", "none: the suite observes lifecycle calls through a recording proxy", "docs/submission.md, What is checked"},
	{"pvc (named) volumes", "untenanted keys: a directory per claim under the server's volume root (--volume-root), outside the sandbox's disk limit; a tenant's keys (every graded submission): its own volumes in a tmpfs of 256Mi (--tenant-volume-quota) mounted nosuid,nodev, removed when the tenant is released or the server stops; `acceptance grade` keeps them under the grade's own state directory (--private-volumes)", "a Docker named volume, on the host's disk, without quota, kept until removed", "mock-server/README.md; mock-server/deviations.go (tenant-volumes)"},
	{"resource limits left out", "the server's default: 1 CPU, 1Gi memory, 256 pids (--default-limits)", "not limited (Docker starts the container without them)", "mock-server/deviations.go (default-limits-quota)"},
	{"per-tenant quota", "a tenant's (a graded submission's) sandboxes: 64 live (--tenant-quota; over it a create answers 400 SANDBOX::INVALID_PARAMETER \"Quota exceeded: …\"), using together at most 2 CPUs, 6Gi and 2048 processes (one cgroup parent per tenant); the grader releases the tenant (keys revoked, sandboxes, snapshots and volumes removed) when the submission's grading ends", "no quota and no tenants", "mock-server/deviations.go (default-limits-quota)"},
	{"ossfs volumes", "400 VOLUME::UNSUPPORTED_BACKEND", "mounted through ossfs on the host (storage.ossfs_mount_root)", "mock-server/deviations.go (volumes-ossfs)"},
	{"snapshots", "the API as on Docker; a snapshot keeps the regular files (and permission bits) of /workspace, /tmp, /root and /var only, copied while the sandbox runs; bounded; lost when the server restarts", "docker commit of the whole container filesystem (links, owners, special files), the container paused meanwhile; records in SQLite", "mock-server/deviations.go (snapshots); server 1.1.1 services/docker/snapshot_runtime.py"},
	{"diagnostics logs text", "the container log: the entrypoint's output and the bundled agent's own log lines (in its words, not execd's), each stamped as docker logs --timestamps; kept up to 8 MiB (descriptor, scopes, tail, since and limits as 1.1.1's)", "docker logs of the container (its entrypoint's and execd's output), each line timestamped; kept whole (json-file driver)", "server 1.1.1 services/docker/docker_diagnostics.py"},
	{"use_server_proxy endpoint", "{host}/sandboxes/{id}/proxy/{port}", "keeps /v1: {host}/v1/sandboxes/{id}/proxy/{port}", "CONTRACT §10"},
}
