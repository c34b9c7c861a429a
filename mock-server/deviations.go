package mockserver

// Deviation is one deliberate difference between this server and the
// OpenAPI spec (specs/sandbox-lifecycle.yml). Almost all are faithful copies
// of the real OpenSandbox 1.1.1 implementation, which the SDKs follow
// (CONTRACT §1). The contract-validation test tolerates exactly these.
type Deviation struct {
	ID     string // stable key, used by tests
	Spec   string // what the spec says
	Server string // what this server does (and the real implementation does)
	Source string // CONTRACT section
}

// Deviations is the one list of deliberate spec deviations.
var Deviations = []Deviation{
	{ID: "validation-422", Spec: "request errors are 400 {code,message}",
		Server: "request-validation errors are 422 with FastAPI's {\"detail\":[{type,loc,msg,input}]} body", Source: "§1.2"},
	{ID: "no-location-header", Spec: "create (202) sends a Location header",
		Server: "no Location header on create", Source: "§1.3"},
	{ID: "request-id-hex", Spec: "X-Request-ID has format uuid",
		Server: "a generated X-Request-ID is uuid4().hex: 32 hex characters without dashes (an incoming one is echoed)", Source: "§1.1"},
	{ID: "create-running", Spec: "create returns state Pending",
		Server: "create returns 202 with state Running, reason CONTAINER_RUNNING", Source: "§1.5"},
	{ID: "renew-shorten", Spec: "renew must be later than the current expiresAt",
		Server: "any future time is accepted (shortening allowed)", Source: "§1.8"},
	{ID: "renew-lax-datetime", Spec: "renew expiresAt is an RFC 3339 date-time string",
		Server: "expiresAt is read as pydantic reads a datetime: a JSON number or a string of one is a Unix timestamp (milliseconds above 2e10; {\"expiresAt\":12} is 1970, so 400 not in the future), a date alone is midnight UTC, a time may omit seconds; other JSON types and years outside 1..9999 are 422", Source: "§1.8"},
	{ID: "renew-409", Spec: "renew errors are 400",
		Server: "renewing a sandbox without TTL is 409 DOCKER::INVALID_EXPIRATION", Source: "§1.8"},
	{ID: "page-size-max", Spec: "pageSize has no maximum",
		Server: "pageSize above 200 is 422", Source: "§1.7"},
	{ID: "env-null-values", Spec: "env values are strings",
		Server: "null env values are accepted and dropped (pydantic Dict[str, Optional[str]])", Source: "§1.4"},
	{ID: "extra-fields", Spec: "additionalProperties: false on requests",
		Server: "unknown request fields are ignored", Source: "§1.4"},
	{ID: "endpoint-format", Spec: "endpoint is {host}/sandboxes/{id}/port/{port}",
		Server: "endpoint is 127.0.0.1:<execd port>/proxy/<port> for every port, 44772 included (Docker bridge form), or {host}/sandboxes/{id}/proxy/{port} with use_server_proxy", Source: "§1.10"},
	{ID: "error-401-keys", Spec: "401 bodies per ErrorResponse",
		Server: "401 bodies are {code,message} (conform); 404/405 for unknown routes are FastAPI's {\"detail\":\"Not Found\"}", Source: "§1.1"},
	{ID: "snapshots", Spec: "snapshot routes return 202/200/204; a snapshot is a point-in-time capture of the sandbox",
		Server: "as 1.1.1 on Docker (create 202 Creating with Location, then Ready or Failed; list with sandboxId/name/state filters and pagination; get; delete, 409 while Creating; " +
			"create with snapshotId restores it: 404 SNAPSHOT::NOT_FOUND unknown or another tenant's, 409 SNAPSHOT::NOT_READY, entrypoint tail -f /dev/null by default, the sandbox carries snapshotId and no image), " +
			"but what is captured differs: where Docker commits the container's filesystem, this server copies the sandbox's writable directories /workspace, /tmp, /root and /var " +
			"(the rest of its root is read-only; volumes and /dev/shm are left out, as docker commit leaves mounts out) — regular files with their permission bits only: " +
			"symbolic links, special files, owners and empty directories are not kept; the copy is made while the sandbox runs (docker commit pauses it); " +
			"bounded: 512 MiB and 20000 files per snapshot, 64 snapshots and 2 GiB in all (a capture beyond fails: Failed, snapshot_runtime_failed; a create beyond the count: 409 SNAPSHOT::RUNTIME_PREFLIGHT_FAILED); " +
			"kept in memory (1.1.1: SQLite), so a restarted server has none; without a state directory every snapshot route answers 501 SNAPSHOT::NOT_IMPLEMENTED", Source: "§1.13"},
	{ID: "image-pull-500", Spec: "create errors 400/409/500",
		Server: "an image with no host profile fails create with 500 DOCKER::SANDBOX_IMAGE_PULL_FAILED", Source: "§1.5"},
	{ID: "capacity-429", Spec: "429 with Retry-After is declared (components) for capacity",
		Server: "429 KUBERNETES::POOL_CAPACITY_EXHAUSTED with Retry-After only while the admin capacity fault is on (drill D3): the answer of a 1.1.1 Kubernetes pool at capacity (services/k8s/kubernetes_service.py); the real server on Docker never sends 429", Source: "§1.3, §9 (corrected: Kubernetes pools do send it)"},
	{ID: "volumes-ossfs", Spec: "volumes with a host, pvc or ossfs backend",
		Server: "host-path volumes are bind-mounted when under an allowed host path (serve-mock --allow-host-path, the real server's storage.allowed_host_paths; default none: 400 VOLUME::HOST_PATH_NOT_ALLOWED), " +
			"resolved beneath that allowed path (a symbolic link may lead elsewhere inside it only by a relative path, and missing directories are never created through a link out of it; the real server creates them first and checks the realpath after); " +
			"pvc volumes are named volumes, as on the real Docker runtime, kept as directories <volume root>/<claimName> (serve-mock --volume-root, default <state root>/volumes) instead of Docker volumes: " +
			"their data does not count against a sandbox's disk limit (Docker volumes are not limited either), storageClass/storage/accessModes are ignored (as on Docker), " +
			"a subPath is resolved beneath the volume (a symbolic link in it may point inside the volume only by a relative path; the real server's realpath check also accepts an absolute link back into the volume) and must be a directory or regular file; " +
			"ossfs answers 400 VOLUME::UNSUPPORTED_BACKEND: there is no OSSFS here", Source: "§1.4"},
	{ID: "key-tenancy", Spec: "every API key sees every sandbox",
		Server: "the same, unless the admin adds a key with a tenant (POST /_mock/api-keys {\"key\",\"tenant\"}, or AddAPIKeyTenant): such a key's list shows only sandboxes created by keys of its tenant, and any other sandbox is answered as one that does not exist (404 DOCKER::SANDBOX_NOT_FOUND) by get, delete, pause, resume, renew, metadata, endpoints, diagnostics and the server proxy; keys without a tenant see everything. `acceptance grade` gives each submission's keys their own tenant on the bundled server", Source: "mock extension"},
	{ID: "execd-access-token", Spec: "execd requires X-EXECD-ACCESS-TOKEN on every request when it is configured with one (securitySchemes AccessToken); an endpoint's headers are what a client sends to it",
		Server: "1.1.1's server never configures one, so its execd answers anyone; this server gives each sandbox's execd an access token of its own (24 random bytes, URL-safe base64) where its sandboxes have no network namespace (--insecure-no-isolation on a host without namespaces: any process of the machine reaches every loopback port), or when asked (serve-mock --execd-access-token on; `acceptance grade` below confinement level full); " +
			"then every request to that execd, /ping, /proxy/{port}/… and unknown paths included, without the header or with another value answers as upstream execd with EXECD_ACCESS_TOKEN: 401 {\"error\":\"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN\"} (application/json; charset=utf-8), and reaches neither the sandbox nor the audit's command and file records; " +
			"the token is in the headers of that sandbox's endpoint responses only (every port: each goes through execd), so only keys that see the sandbox get it, and is stripped before anything reaches the sandbox (never in its environment, its processes' command lines or its files); " +
			"the server proxy route merges it into the forwarded request for a caller whose API key the server accepts (the owner), and for anyone else treats it as 1.1.1 treats its other auth headers there (OPENSANDBOX-EGRESS-AUTH, OpenSandbox-Secure-Access): the caller sends it itself (the SDKs do: endpoint headers go on every execd request), else execd's 401. Off (--execd-access-token off, or namespaced sandboxes by default): as 1.1.1", Source: "§1.10, §1.11, §2.1; mock extension"},
	{ID: "default-limits-quota", Spec: "resourceLimits (cpu, memory, …) are applied as given; a key left out is not limited; no quota",
		Server: "a sandbox whose resourceLimits leaves cpu, memory or pids out (or gives a value that does not parse, or 0) gets the server's default for it (1 CPU, 1Gi, 256 pids; serve-mock --default-limits); " +
			"the sandboxes of one tenant are bounded together: at most 64 live (a create over it answers 400 SANDBOX::INVALID_PARAMETER \"Quota exceeded: …\" and starts nothing), and using at most 2 CPUs, 6Gi and 2048 processes at once (one cgroup parent per tenant; serve-mock --tenant-quota); untenanted keys have no quota. " +
			"1.1.1 on Docker starts the container without the limits left out, and has no quota", Source: "mock extension; §1.4 (resourceLimits)"},
	{ID: "tenant-volumes", Spec: "a pvc claimName names one volume of the server",
		Server: "for a key with a tenant, a claimName names a volume of its tenant only: the tenant's volumes live in <volume root>/.tenants/<server>-<tenant>, a tmpfs of 256Mi (serve-mock --tenant-volume-quota) mounted nosuid,nodev, removed when the tenant is released (POST /_mock/tenants/release) or the server stops; " +
			"a write past the quota fails with ENOSPC. Untenanted keys use the shared volume root, as before", Source: "mock extension; §1.4"},
	{ID: "undocumented-routes", Spec: "not in the spec",
		Server: "server proxy, diagnostics (logs and events: the stable JSON descriptor with scope, as 1.1.1 on Docker, deprecated text without; inspect and summary text), pools (501), POST /v1/metrics/events (204), GET /health and the /_mock admin API", Source: "§1.3, §4, §8"},

	// execd (specs/execd-api.yaml, components/execd): differences of the in-sandbox agent.
	{ID: "execd-code-kernels", Spec: "POST /code, /code/context(s) run code in Jupyter kernels",
		Server: "a run with no language (or command, background-command) is a plain command in every image, as there; contexts exist only in a code interpreter's image (opensandbox/code-interpreter), where Python runs in a kernel of the agent's own, not Jupyter (state kept between runs, stdout/stderr per write, a last expression's repr as text/plain or text/html, plain tracebacks without ANSI colours; port 44771 answers the SDK's readiness probe but is no Jupyter server); another language answers 500 \"no kernel specs found\" at once (real execd retries for minutes); in any other image 500 \"language runtime server not configured\", as there", Source: "§2.3, §2.4"},
	{ID: "execd-pty-501", Spec: "/pty sessions (WebSocket terminal)",
		Server: "every /pty route answers 501 NOT_SUPPORTED", Source: "§2.4"},
	{ID: "execd-non-regular-400", Spec: "files routes read or write any path",
		Server: "download (whole, Range, offset/limit), replace, upload onto, and permissions of a device, FIFO or socket answer 400 \"not a regular file\" (real execd would block on a FIFO or read /dev/zero without end); info, search and list still describe them", Source: "§2.5"},
	{ID: "execd-rmdir-mountpoint", Spec: "DELETE /directories removes the directory (real execd: os.RemoveAll)",
		Server: "/workspace, /tmp, /root and /var are bind mounts on a read-only root here (plain directories on Docker): deleting one of them removes its contents and answers 200 as on Docker, but the empty directory stays; / is refused (400)", Source: "§2.5"},
	{ID: "execd-size-caps", Spec: "no size limits",
		Server: "replace reads at most 64 MiB (413 beyond, file unchanged); one upload at most MaxUploadBytes (413); a background command's log keeps its first 32 MiB (real execd: an unbounded log file)", Source: "§2.4, §2.5"},
	{ID: "execd-after-removal", Spec: "a removed sandbox's execd is gone",
		Server: "the removed sandbox's execd port keeps listening for a grace period (default 10 min), records each call (audit kind execd_after_removal) and resets the connection: the client still sees a connection error", Source: "mock extension"},
}

// DeviationIDs returns the set of deviation IDs.
func DeviationIDs() map[string]bool {
	out := make(map[string]bool, len(Deviations))
	for _, d := range Deviations {
		out[d.ID] = true
	}
	return out
}
