package egress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// Actions of a rule or of a policy's default.
const (
	ActionAllow = "allow"
	ActionDeny  = "deny"
)

// Modes reported by GET /policy (CONTRACT §3.2 "mode values").
const (
	ModeAllowAll  = "allow_all"
	ModeDenyAll   = "deny_all"
	ModeEnforcing = "enforcing"
)

// Policy is a sandbox's networkPolicy (CONTRACT §3.2):
// {"defaultAction":"allow|deny","egress":[{"action","target"}]}.
// Egress is nil (JSON null) after a reset, as in the real sidecar.
type Policy struct {
	DefaultAction string `json:"defaultAction,omitempty"`
	Egress        []Rule `json:"egress"`
}

// Rule is one egress rule. Target is an FQDN, a wildcard "*.x", an IP or a CIDR.
type Rule struct {
	Action string `json:"action"`
	Target string `json:"target"`
}

// Decision is the outcome of evaluating a host against a policy.
type Decision struct {
	Allowed bool
	Action  string // allow | deny
	// Rule is the matching rule's target, "default" when no rule matched, or
	// "override:<target>" when a platform deny override matched.
	Rule     string
	Index    int  // index of the matching rule in Egress, -1 for default/override
	Override bool // decided by a hub-wide deny override (a simulated fault)
}

// DenyAll is the policy the sidecar falls back to on reset: deny, no rules.
func DenyAll() Policy { return Policy{DefaultAction: ActionDeny} }

// ParsePolicy parses a policy document. An empty body, "null" or "{}" yields
// deny-all, as the real sidecar does. The result is normalized.
func ParsePolicy(data []byte) (Policy, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return DenyAll(), nil
	}
	var p Policy
	if err := json.Unmarshal(data, &p); err != nil {
		return Policy{}, fmt.Errorf("invalid policy JSON: %v", err)
	}
	return p.Normalize()
}

// Normalize returns a copy with actions and targets in canonical form:
// lower case, trailing dot removed, empty action → deny, empty defaultAction →
// deny. An unknown action or an empty/invalid target is an error.
func (p Policy) Normalize() (Policy, error) {
	out := Policy{}
	def, err := normalizeAction(p.DefaultAction)
	if err != nil {
		return Policy{}, fmt.Errorf("defaultAction: %w", err)
	}
	out.DefaultAction = def
	if p.Egress != nil {
		out.Egress = make([]Rule, 0, len(p.Egress))
	}
	for i, r := range p.Egress {
		nr, err := r.Normalize()
		if err != nil {
			return Policy{}, fmt.Errorf("egress[%d]: %w", i, err)
		}
		out.Egress = append(out.Egress, nr)
	}
	return out, nil
}

// Normalize returns the rule in canonical form or an error.
func (r Rule) Normalize() (Rule, error) {
	a, err := normalizeAction(r.Action)
	if err != nil {
		return Rule{}, err
	}
	t, err := NormalizeTarget(r.Target)
	if err != nil {
		return Rule{}, err
	}
	return Rule{Action: a, Target: t}, nil
}

func normalizeAction(a string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(a)) {
	case "", ActionDeny:
		return ActionDeny, nil
	case ActionAllow:
		return ActionAllow, nil
	default:
		return "", fmt.Errorf("unknown action %q (want allow or deny)", a)
	}
}

// NormalizeTarget canonicalizes a rule target: an FQDN, "*.suffix", an IP
// address or a CIDR prefix.
func NormalizeTarget(t string) (string, error) {
	t = strings.ToLower(strings.TrimSpace(t))
	if t == "" {
		return "", fmt.Errorf("empty target")
	}
	if pfx, err := netip.ParsePrefix(t); err == nil {
		return pfx.Masked().String(), nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(t, "[]")); err == nil {
		return ip.String(), nil
	}
	t = strings.TrimSuffix(t, ".")
	name := t
	if strings.HasPrefix(t, "*.") {
		name = t[2:]
	}
	if name == "" || strings.ContainsAny(name, "*/:@ \t") || strings.HasPrefix(name, ".") || strings.Contains(name, "..") {
		return "", fmt.Errorf("invalid target %q (want an FQDN, *.domain, an IP or a CIDR)", t)
	}
	return t, nil
}

// normalizeHost canonicalizes a hostname being looked up or connected to.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.Trim(h, "[]")
	return strings.TrimSuffix(h, ".")
}

// Matches reports whether the (normalized) rule target matches host.
func (r Rule) Matches(host string) bool {
	return targetMatches(r.Target, normalizeHost(host))
}

func targetMatches(target, host string) bool {
	return newHostKey(host).matches(target)
}

// hostKey is a normalized host, parsed once per evaluation.
type hostKey struct {
	name string
	ip   netip.Addr
	isIP bool
}

func newHostKey(host string) hostKey {
	k := hostKey{name: host}
	if ip, err := netip.ParseAddr(host); err == nil {
		k.ip, k.isIP = ip.Unmap(), true
	}
	return k
}

// matches reports whether a normalized target matches: "*.x" any depth of
// subdomain but never the apex; IP/CIDR only IP hosts; else exact.
func (k hostKey) matches(target string) bool {
	if k.name == "" {
		return false
	}
	if strings.HasPrefix(target, "*.") {
		return strings.HasSuffix(k.name, target[1:])
	}
	if target == k.name {
		return true
	}
	if !k.isIP {
		return false
	}
	if strings.Contains(target, "/") {
		pfx, err := netip.ParsePrefix(target)
		return err == nil && pfx.Contains(k.ip)
	}
	tip, err := netip.ParseAddr(target)
	return err == nil && tip.Unmap() == k.ip
}

// isNormalTarget is a cheap check that a target needs no normalization.
func isNormalTarget(t string) bool {
	if t == "" || t[len(t)-1] == '.' || t[0] == ' ' || t[len(t)-1] == ' ' {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// Evaluate decides host against the policy: the lowest-index matching rule
// wins; no match → defaultAction (empty → deny). It tolerates an
// un-normalized policy by normalizing targets and actions as it goes.
func (p Policy) Evaluate(host string) Decision {
	k := newHostKey(normalizeHost(host))
	for i, r := range p.Egress {
		t := r.Target
		if !isNormalTarget(t) {
			nt, err := NormalizeTarget(t)
			if err != nil {
				continue
			}
			t = nt
		}
		if k.matches(t) {
			a, err := normalizeAction(r.Action)
			if err != nil {
				a = ActionDeny
			}
			return Decision{Allowed: a == ActionAllow, Action: a, Rule: t, Index: i}
		}
	}
	a, err := normalizeAction(p.DefaultAction)
	if err != nil {
		a = ActionDeny
	}
	return Decision{Allowed: a == ActionAllow, Action: a, Rule: "default", Index: -1}
}

// Mode is the runtime mode GET /policy reports: allow_all (allow, no rules),
// deny_all (deny, no rules), otherwise enforcing.
func (p Policy) Mode() string {
	if len(p.Egress) == 0 {
		if p.DefaultAction == ActionAllow {
			return ModeAllowAll
		}
		return ModeDenyAll
	}
	return ModeEnforcing
}

// clone returns a deep copy (nil Egress stays nil).
func (p Policy) clone() Policy {
	out := Policy{DefaultAction: p.DefaultAction}
	if p.Egress != nil {
		out.Egress = append([]Rule{}, p.Egress...)
	}
	return out
}

// isIPLiteral reports whether host is an IP address (v4 or v6).
func isIPLiteral(host string) bool {
	_, err := netip.ParseAddr(normalizeHost(host))
	return err == nil
}
