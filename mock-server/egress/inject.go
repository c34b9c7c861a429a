package egress

import (
	"net/http"
	"sort"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// injection is what the gateway adds to one request. Values are secrets.
type injection struct {
	binding  string
	revision int64
	headers  [][2]string // name, value
}

// hostPrecedence: 2 for an exact host match, 1 for a wildcard, 0 for none.
func hostPrecedence(patterns []string, host string) int {
	best := 0
	for _, p := range patterns {
		if strings.HasPrefix(p, "*.") {
			if targetMatches(p, host) && best < 1 {
				best = 1
			}
		} else if p == host {
			return 2
		}
	}
	return best
}

func (b bindingSpec) precedence(scheme string, port int, method, path, host string) int {
	m := b.Match
	if !overlapStrings(m.Schemes, []string{scheme}) || !containsInt(m.Ports, port) || !overlapStrings(m.Methods, []string{method}) {
		return 0
	}
	okPath := false
	for _, p := range m.Paths {
		if pathPatternMatches(p, path) {
			okPath = true
			break
		}
	}
	if !okPath {
		return 0
	}
	return hostPrecedence(m.Hosts, host)
}

// match finds the binding for a request. An exact host outranks a wildcard;
// two bindings at the same best precedence are ambiguous.
func (v *vault) match(scheme string, port int, method, path, host string) (inj *injection, ambiguous bool) {
	host = normalizeHost(host)
	method = strings.ToUpper(method)
	bestPrec := 0
	var best []bindingRecord
	for _, b := range v.bindings {
		p := b.spec.precedence(scheme, port, method, path, host)
		switch {
		case p == 0 || p < bestPrec:
		case p > bestPrec:
			bestPrec, best = p, []bindingRecord{b}
		default:
			best = append(best, b)
		}
	}
	if len(best) == 0 {
		return nil, false
	}
	if len(best) > 1 {
		return nil, true
	}
	b := best[0]
	inj = &injection{binding: b.spec.Name, revision: v.revision}
	val := func(name string) string { return v.creds[name].value }
	switch a := b.spec.Auth; a.Type {
	case "bearer":
		inj.headers = append(inj.headers, [2]string{"Authorization", "Bearer " + val(a.Credential)})
	case "basic":
		inj.headers = append(inj.headers, [2]string{"Authorization", "Basic " + val(a.Credential)})
	case "apiKey":
		inj.headers = append(inj.headers, [2]string{a.Name, val(a.Credential)})
	case "customHeaders":
		for _, h := range a.Headers {
			inj.headers = append(inj.headers, [2]string{h.Name, val(h.Credential)})
		}
	}
	return inj, false
}

// apply replaces same-named request headers with the injected ones.
func (inj *injection) apply(h http.Header) {
	for _, kv := range inj.headers {
		h.Del(kv[0])
		h.Set(kv[0], kv[1])
	}
}

// secrets returns every credential value, longest first (so a value that
// contains another is redacted whole).
func (v *vault) secrets() []string {
	out := make([]string, 0, len(v.creds))
	for _, c := range v.creds {
		if c.value != "" {
			out = append(out, c.value)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// redactHeaders replaces any secret in header values with [REDACTED] and
// reports whether anything changed.
func redactHeaders(h http.Header, secrets []string) bool {
	changed := false
	for k, vals := range h {
		for i, val := range vals {
			nv := val
			for _, s := range secrets {
				nv = strings.ReplaceAll(nv, s, "[REDACTED]")
			}
			if nv != val {
				vals[i] = nv
				changed = true
			}
		}
		h[k] = vals
	}
	return changed
}

// InjectVault applies the sandbox's Credential Vault to a request it sends
// to host (scheme, port) as the gateway does: the matching binding's headers
// replace the request's own. ambiguous is two bindings at the same
// precedence (the caller answers 403 "credential binding ambiguous", as the
// real sidecar). secrets are the vault's values, for RedactHeaders on the
// answer. It is what the docker target's egress stand-in uses to inject
// without the gateway (harness/dockertarget/standin).
func (a *Attachment) InjectVault(h http.Header, scheme string, port int, method, path, host string) (injected, ambiguous bool, secrets []string) {
	a.mu.RLock()
	vlt := a.vault
	a.mu.RUnlock()
	if vlt == nil {
		return false, false, nil
	}
	inj, ambiguous := vlt.match(scheme, port, method, path, host)
	if ambiguous {
		return false, true, vlt.secrets()
	}
	if inj != nil {
		inj.apply(h)
		a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindVault, Vault: &wire.Vault{
			Op: "inject", Revision: inj.revision, Binding: inj.binding, Host: normalizeHost(host),
		}})
	}
	return inj != nil, false, vlt.secrets()
}

// RedactHeaders replaces every secret value in an answer's headers with
// [REDACTED] and reports whether it did (CONTRACT §3.5).
func RedactHeaders(h http.Header, secrets []string) bool { return redactHeaders(h, secrets) }
