package mockserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	osbruntime "github.com/osb-capstone/acceptance/mock-server/runtime"
)

// Default limits and per-tenant quotas (a deviation from OpenSandbox 1.1.1,
// whose Docker runtime starts a container without a limit a create's
// resourceLimits leaves out, and has no quota at all).
//
// Every sandbox gets a CPU, memory and pids limit: the value its create's
// resourceLimits gives (cpu, memory, pids), else the server's default
// (Config.DefaultLimits; DefaultSandboxLimits). A value that does not parse
// counts as left out (the real server ignores it).
//
// The sandboxes of one tenant (tenancy.go: the keys of one graded
// submission) are bounded together (Config.TenantQuota; DefaultTenantQuota):
//   - how many are live (or starting) at once: a create over it answers 400
//     SANDBOX::INVALID_PARAMETER ("Quota exceeded: …"), the code the real
//     server gives a create whose limits the host cannot satisfy (more CPUs
//     than it has), and starts nothing;
//   - what they use together, whatever each one's own limits: their cgroups
//     live in one parent group per tenant (runtime Spec.Group) limited to the
//     quota's CPU, memory and pids. Past it a fork fails (EAGAIN), memory is
//     reclaimed or a process of the tenant is OOM-killed, CPU is throttled.
//     A sandbox left behind idle costs its tenant little; one tenant cannot
//     take the machine's pids or memory from the others.
//
// Untenanted keys (the server's own --api-key) have no quota.

// DefaultSandboxLimits are the limits of a sandbox whose create omits them.
var DefaultSandboxLimits = osbruntime.Limits{CPUMilli: 1000, MemoryBytes: 1 << 30, Pids: 256}

// Quota bounds one tenant's sandboxes together. A zero field takes
// DefaultTenantQuota's value; a negative one means unbounded.
type Quota struct {
	Sandboxes   int64 // live (or starting) sandboxes: a create over it is refused
	CPUMilli    int64 // CPU they use at once (1000 = one CPU): throttled past it
	MemoryBytes int64 // memory they use at once (their disks' tmpfs included)
	Pids        int64 // processes they run at once: a fork past it fails
}

// DefaultTenantQuota is the quota of a tenant when Config.TenantQuota leaves
// a field zero: 64 live sandboxes (a submission that never deletes its
// sandboxes leaves one per run of a grade until their TTL), and together at
// most 2 CPUs, 6 GiB of memory and 2048 processes in use.
var DefaultTenantQuota = Quota{Sandboxes: 64, CPUMilli: 2000, MemoryBytes: 6 << 30, Pids: 2048}

// usage is what sandboxes hold against a quota.
type usage struct{ sandboxes, cpu, mem, pids int64 }

func (u *usage) add(l osbruntime.Limits, sign int64) {
	u.sandboxes += sign
	u.cpu += sign * l.CPUMilli
	u.mem += sign * l.MemoryBytes
	u.pids += sign * l.Pids
}

func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// limitsFor are the limits a sandbox of req runs with: the request's, and
// the server's defaults for what it leaves out (or gives unparseable).
func (s *Server) limitsFor(req *createRequest) osbruntime.Limits {
	def := osbruntime.Limits{
		CPUMilli:    orDefault(s.cfg.DefaultLimits.CPUMilli, DefaultSandboxLimits.CPUMilli),
		MemoryBytes: orDefault(s.cfg.DefaultLimits.MemoryBytes, DefaultSandboxLimits.MemoryBytes),
		Pids:        orDefault(s.cfg.DefaultLimits.Pids, DefaultSandboxLimits.Pids),
	}
	l := osbruntime.Limits{
		CPUMilli:    parseCPU(req.ResourceLimits["cpu"]),
		MemoryBytes: parseMemory(req.ResourceLimits["memory"]),
	}
	if p, err := strconv.ParseInt(req.ResourceLimits["pids"], 10, 64); err == nil && p > 0 {
		l.Pids = p
	}
	pick := func(v, d int64) int64 {
		switch {
		case v > 0:
			return v
		case d > 0:
			return d
		}
		return 0 // a negative default: no limit of this kind
	}
	return osbruntime.Limits{CPUMilli: pick(l.CPUMilli, def.CPUMilli), MemoryBytes: pick(l.MemoryBytes, def.MemoryBytes), Pids: pick(l.Pids, def.Pids)}
}

// tenantQuota is the effective quota (negative fields: unbounded).
func (s *Server) tenantQuota() Quota {
	q := s.cfg.TenantQuota
	return Quota{
		Sandboxes:   orDefault(q.Sandboxes, DefaultTenantQuota.Sandboxes),
		CPUMilli:    orDefault(q.CPUMilli, DefaultTenantQuota.CPUMilli),
		MemoryBytes: orDefault(q.MemoryBytes, DefaultTenantQuota.MemoryBytes),
		Pids:        orDefault(q.Pids, DefaultTenantQuota.Pids),
	}
}

// reserveQuota counts a create of tenant against the tenant's quota of live
// sandboxes: its live sandboxes plus the creates still starting. On success the
// reservation is held until unreserveLocked (the sandbox is in the table, or
// its create failed); otherwise it answers the refusal's message. Untenanted
// creates are never refused. A released tenant's creates are refused.
func (s *Server) reserveQuota(tenant string, l osbruntime.Limits) (ok bool, msg string) {
	if tenant == "" {
		return true, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released[tenant] {
		return false, "Quota exceeded: the API key's tenant has been released; it can create nothing more."
	}
	var u usage
	for _, sb := range s.sandboxes {
		if sb.tenant == tenant {
			u.add(sb.limits, 1)
		}
	}
	if p := s.pending[tenant]; p != nil {
		u.sandboxes += p.sandboxes
	}
	u.add(l, 1)
	if q := s.tenantQuota(); q.Sandboxes > 0 && u.sandboxes > q.Sandboxes {
		return false, fmt.Sprintf("Quota exceeded: this create would make the live sandboxes of the API key's tenant %d, over its quota of %d. "+
			"Delete sandboxes you no longer need.", u.sandboxes, q.Sandboxes)
	}
	if s.pending == nil {
		s.pending = map[string]*usage{}
	}
	if s.pending[tenant] == nil {
		s.pending[tenant] = &usage{}
	}
	s.pending[tenant].add(l, 1)
	return true, ""
}

// unreserveLocked drops a create's reservation. Caller holds s.mu.
func (s *Server) unreserveLocked(tenant string, l osbruntime.Limits) {
	p := s.pending[tenant]
	if tenant == "" || p == nil {
		return
	}
	p.add(l, -1)
	if p.sandboxes <= 0 {
		delete(s.pending, tenant)
	}
}

// tenantGroup is the runtime's parent group of tenant's sandboxes and its
// limits (none for untenanted creates, and none when the quota bounds
// neither CPU, memory nor pids). The name carries this server's
// token: two servers on one host never share a group.
func (s *Server) tenantGroup(tenant string) (string, osbruntime.Limits) {
	if tenant == "" {
		return "", osbruntime.Limits{}
	}
	q := s.tenantQuota()
	if q.CPUMilli < 0 && q.MemoryBytes < 0 && q.Pids < 0 {
		return "", osbruntime.Limits{} // nothing to bound them together by
	}
	h := sha256.Sum256([]byte(tenant))
	pos := func(v int64) int64 { return max(v, 0) }
	return "t-" + s.serverToken() + "-" + hex.EncodeToString(h[:8]),
		osbruntime.Limits{CPUMilli: pos(q.CPUMilli), MemoryBytes: pos(q.MemoryBytes), Pids: pos(q.Pids)}
}

// refuseQuota answers a create refused by the quota.
func refuseQuota(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusBadRequest, "SANDBOX::INVALID_PARAMETER", msg)
}

// parseLimitsFlag reads "cpu=1,memory=1Gi,pids=256" (any subset; a value
// "none": no such limit, as a negative field). Fields left out stay zero
// (the built-in default).
func parseLimitsFlag(v string) (osbruntime.Limits, error) {
	var l osbruntime.Limits
	err := parseFields(v, map[string]func(string) error{
		"cpu":    func(x string) error { return quantity(x, parseCPU, &l.CPUMilli) },
		"memory": func(x string) error { return quantity(x, parseMemory, &l.MemoryBytes) },
		"pids":   func(x string) error { return quantity(x, parseCount, &l.Pids) },
	})
	return l, err
}

// parseQuotaFlag reads "sandboxes=64,cpu=2,memory=6Gi,pids=2048" (any subset; "none": unbounded).
func parseQuotaFlag(v string) (Quota, error) {
	var q Quota
	err := parseFields(v, map[string]func(string) error{
		"sandboxes": func(x string) error { return quantity(x, parseCount, &q.Sandboxes) },
		"cpu":       func(x string) error { return quantity(x, parseCPU, &q.CPUMilli) },
		"memory":    func(x string) error { return quantity(x, parseMemory, &q.MemoryBytes) },
		"pids":      func(x string) error { return quantity(x, parseCount, &q.Pids) },
	})
	return q, err
}

func parseCount(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

func quantity(x string, parse func(string) int64, dst *int64) error {
	if x == "none" {
		*dst = -1
		return nil
	}
	n := parse(x)
	if n <= 0 || n > 1<<50 {
		return fmt.Errorf("%q is not a positive quantity", x)
	}
	*dst = n
	return nil
}

func parseFields(v string, fields map[string]func(string) error) error {
	seen := map[string]bool{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, x, ok := strings.Cut(part, "=")
		set := fields[k]
		if !ok || set == nil {
			names := make([]string, 0, len(fields))
			for n := range fields {
				names = append(names, n)
			}
			sort.Strings(names)
			return fmt.Errorf("%q: want name=value with a name among %s", part, strings.Join(names, ", "))
		}
		if seen[k] {
			return fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		if err := set(strings.TrimSpace(x)); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}
