package wire

// TenantRelease is the bundled server's answer to POST /_mock/tenants/release
// {"tenant":"…"}: what releasing a tenant removed. The harness releases each
// graded submission's tenant once its grading ends.
type TenantRelease struct {
	Tenant string `json:"tenant"`
	// KeysRevoked is how many of the tenant's API keys no longer authenticate.
	KeysRevoked int `json:"keys_revoked"`
	// Sandboxes are the ids of the live sandboxes removed (processes killed).
	Sandboxes []string `json:"sandboxes"`
	// Snapshots is how many of its snapshots were removed.
	Snapshots int `json:"snapshots"`
	// Volumes are the tenant's named-volume roots removed (host paths).
	Volumes []string `json:"volumes"`
	// Error says what could not be removed (with a 500); empty on success.
	Error string `json:"error,omitempty"`
}
