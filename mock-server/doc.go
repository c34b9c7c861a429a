// Package mockserver is the bundled OpenSandbox-compatible server: the
// lifecycle API of OpenSandbox 1.1.1 as implemented (CONTRACT §1), a
// per-sandbox execd endpoint that reverse-proxies to the in-sandbox agent
// while recording an audit trail, and the /_mock admin API. Sandboxes come
// from a runtime.Runtime (the Linux namespace runtime in production, a fake in
// unit tests); networkPolicy is enforced by an EgressHub (package egress).
//
// # Embedding
//
//	b, err := mockserver.StartBundled(ctx, mockserver.BundledConfig{APIKey: key, AdminToken: tok, Upstreams: ups})
//	defer b.Close()                 // every sandbox killed and removed
//	b.Server.Domain()               // "127.0.0.1:41234" = OPEN_SANDBOX_DOMAIN
//
// or, with your own runtime: New(Config{...}) then Start(ctx). The command
// `acceptance serve-mock` is ServeMain.
//
// Without a StateDir, StartBundled keeps its state in a fresh instance
// directory under BundledConfig.StateRoot (DefaultStateRoot), locked (flock)
// while the server runs; every start reaps the instances whose lock is free
// (a server killed with SIGKILL): processes, network namespaces, cgroups, disk
// mounts, egress sockets, directories. A live instance is never touched.
//
// # Lifecycle API
//
// Every route of CONTRACT §1.3 at /v1 and at the root. Create is synchronous
// and answers 202 with state Running. Request-validation errors are 422 with
// FastAPI's {"detail":[…]} body; service errors are {code,message}; every
// error has a non-empty JSON body. Snapshots as 1.1.1 on Docker (create,
// list, get, delete, restore with snapshotId), capturing the sandbox's
// writable directories' regular files (snapshots.go; Deviations, snapshots);
// pools answer 501 as on Docker; secureAccess
// answers 400 SANDBOX::INVALID_PARAMETER as 1.1.1 on Docker;
// diagnostics logs and events with scope answer 1.1.1's Docker descriptor
// (inline text; logs container|all, events runtime|all), without scope the
// deprecated text. A sandbox is Running only once its egress sidecar listens
// (the agent binds it before execd answers the readiness ping). Python
// sandboxes have python/pip in /usr/local/bin and every sandbox has
// /etc/os-release, as the images do. The deliberate differences from the
// OpenAPI spec are listed in Deviations; the other known differences from a
// real OpenSandbox in harness/fidelity (FIDELITY.md).
//
// Endpoints use the Docker bridge form: every port, 44772 included →
// 127.0.0.1:<execd port>/proxy/<port>; 18080 always resolves and carries OPENSANDBOX-EGRESS-AUTH when the sandbox has a policy;
// use_server_proxy=true → <host>/sandboxes/<id>/proxy/<port>.
//
// # Admin API (documented mock extension)
//
// Prefix /_mock, header X-Mock-Admin-Token (its own token; without a
// configured token the admin API is disabled and answers 401). Every route
// is registered with its usage line in adminRoutes (admin.go); this list and
// README.md's are generated from them (TestAdminRoutesAreDocumented fails
// while either is stale; go test ./mock-server -run
// TestAdminRoutesAreDocumented -update rewrites both):
//
//	GET    /_mock/info  200
//	       {"version","isolation":{"enforced","reason"},"limits":{…},"snapshots":"writable_directories"|"not_implemented","egress":bool,"egress_enforcement":"network"|"proxy","audit_seq":N}
//	GET    /_mock/audit[?sandbox_id=&kind=&since=SEQ&key_fingerprint=FP]  200 {"events":[wire.Event…],"last_seq":N}
//	       (kind e.g. command, file, execd_after_removal; key_fingerprint: the lifecycle calls made with that key and
//	       every event of the sandboxes it created; last_seq: the cursor for the next since)
//	GET    /_mock/sandboxes  200 {"sandboxes":[SandboxInfo…]}: every sandbox of this run
//	POST   /_mock/sandboxes/{id}/expire  204 (as a TTL expiry: kill, remove, GET → 404); 404 unknown
//	POST   /_mock/faults/egress-deny {"targets":[…][,"key_fingerprint":"…"]}  204: every sandbox (or every sandbox
//	       created with that key from then on) denies them (409 without an egress hub)
//	DELETE /_mock/faults/egress-deny[?key_fingerprint=…]  204: clears that rule (409 without an egress hub)
//	POST   /_mock/faults/capacity {"retry_after_seconds":N[,"key_fingerprint":"…"]}  204: every create (or every create
//	       with that key) answers 429 + Retry-After
//	DELETE /_mock/faults/capacity[?key_fingerprint=…]  204: clears that rule
//	POST   /_mock/faults/execd {"key_fingerprint":"…","call":N,"status":5xx}  204: the Nth execd operation (command,
//	       upload, download, file operation) of each sandbox created with that key answers the status (audited)
//	DELETE /_mock/faults/execd?key_fingerprint=…  204: clears it (every key without one)
//	POST   /_mock/api-keys {"key":"…"[,"tenant":"…"]}  204: the key is accepted from now on; with a tenant (key
//	       tenancy, off unless asked for; tenancy.go) its lifecycle calls see only the sandboxes created by keys of
//	       that tenant, any other answers 404 as unknown; 400 for an empty key, a bad tenant, a key already in another
//	       tenant or a released tenant
//	POST   /_mock/tenants/release {"tenant":"…"}  200 wire.TenantRelease: the tenant's keys revoked, its sandboxes
//	       (processes, cgroups, mounts), snapshots and named volumes removed (release.go); 400 for a bad body
//	PUT    /_mock/canaries {"canaries":{label:value}}  204 (must keep every planted canary: add-only, else 409)
//	POST   /_mock/canaries {"canaries":{label:value}}  204 (adds; changing a planted value is 409)
//	POST   /_mock/markers {"markers":{label:value}}  204: input markers (values of the run's input data, at least 12
//	       characters): the canary scan never looks for them, the egress gateway looks for them in what it forwards
//	GET    /_mock/sandboxes/{id}/canary-scan  200 {"findings":[wire.Canary…]} (labels, never values)
//
// # Audit
//
// Every lifecycle call (method, path, status, request id, API-key
// fingerprint, create/renew/patch bodies with env values fingerprinted), every
// execd command (command, cwd, timeout, exit code parsed from the SSE stream,
// duration, output bytes), every file transfer (path, size, sha256, streamed)
// and file operation, every state change with its reason, faults and canary
// findings; before a sandbox is removed, the outcome of its background
// commands (a second Command event with the same id), a canary scan (a Canary event with
// Location "scan" says it ran) and the manifest of every place it can write:
// /workspace, /tmp, /root, /var, /dev/shm and writable volumes
// (File events with Op "final-manifest"). A foreground command whose stream
// is still open when its sandbox is removed (delete, expiry, shutdown) is
// recorded then, before the removal returns: exit code -1, error "killed:
// sandbox removed (<reason>)", the output bytes seen so far. Kept in memory
// and appended to <StateDir>/audit.jsonl.
//
// # Removal is atomic
//
// A sandbox's removal (DELETE, TTL expiry, admin expiry, shutdown) takes
// effect at one instant: the registry forgets it and its execd endpoint is
// marked gone under the registry's lock, before anything is torn down. From
// then on every request for it answers as for an unknown sandbox, never a
// 5xx: 404 DOCKER::SANDBOX_NOT_FOUND on the lifecycle and server-proxy routes,
// a reset connection at its execd endpoint; calls in flight at the removal
// too (removal.go, server_proxy.go, execdEndpoint.refuse).
//
// # Execd after removal (documented mock extension)
//
// A removed sandbox's execd port keeps listening for a grace period
// (Config.ExecdGracePeriod: default 10 minutes, negative off; Close ends it).
// Each connection is accepted, its request line read (1 s deadline), recorded
// as an audit event of kind execd_after_removal (sandbox_id, time, and
// {method, path} or a note when no request line came; a call in flight at
// the removal, or sent on a connection opened before it, is recorded and
// reset the same way) and then reset
// (SO_LINGER 0): the client sees a connection error, as with the real, gone
// container, and a grader sees who went on calling a vanished sandbox (D2).
//
// # Execd
//
// The agent (package agent) implements execd as the SDKs call it, including
// bash sessions; /code (Jupyter) and /pty answer 501. Its deliberate
// differences (caps on replace and background logs, devices and FIFOs
// refused on content routes) are in Deviations with IDs execd-*.
package mockserver
