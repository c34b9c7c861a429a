package egress

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"sort"
	"strings"
)

// The credential vault (CONTRACT §3.5): credentials (write-only secrets) and
// bindings that say which requests get which header. Secrets are never
// returned, logged or audited.

var (
	headerNameRE    = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+\-.^_` + "`" + `|~]+$`)
	reservedHeaders = map[string]bool{
		"host": true, "content-length": true, "content-type": true, "transfer-encoding": true,
		"connection": true, "keep-alive": true, "upgrade": true, "te": true, "trailer": true,
		"proxy-authorization": true, "proxy-authenticate": true, "proxy-connection": true,
		"forwarded": true, "via": true, "x-real-ip": true,
	}
	defaultMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
)

func isReservedHeader(name string) bool {
	n := strings.ToLower(name)
	return reservedHeaders[n] || strings.HasPrefix(n, "x-forwarded-")
}

// vaultError carries the HTTP status of a vault failure.
type vaultError struct {
	status int
	msg    string
}

func (e *vaultError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &vaultError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

var (
	errVaultNotFound = &vaultError{http.StatusNotFound, "credential vault not found"}
	errVaultExists   = &vaultError{http.StatusConflict, "credential vault already exists"}
)

func vaultStatus(err error) int {
	var ve *vaultError
	if errors.As(err, &ve) {
		return ve.status
	}
	return http.StatusBadRequest
}

// Wire types (requests use DisallowUnknownFields).

type credentialIn struct {
	Name   string           `json:"name"`
	Source credentialSource `json:"source"`
}

type credentialSource struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type bindingSpec struct {
	Name  string       `json:"name"`
	Match bindingMatch `json:"match"`
	Auth  bindingAuth  `json:"auth"`
}

type bindingMatch struct {
	Schemes []string `json:"schemes,omitempty"`
	Ports   []int    `json:"ports,omitempty"`
	Hosts   []string `json:"hosts"`
	Methods []string `json:"methods,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

type bindingAuth struct {
	Type       string         `json:"type"`
	Credential string         `json:"credential,omitempty"`
	Name       string         `json:"name,omitempty"`
	Headers    []customHeader `json:"headers,omitempty"`
}

type customHeader struct {
	Name       string `json:"name"`
	Credential string `json:"credential"`
}

type vaultCreateRequest struct {
	Credentials []credentialIn `json:"credentials"`
	Bindings    []bindingSpec  `json:"bindings"`
}

type vaultMutationRequest struct {
	ExpectedRevision *int64            `json:"expectedRevision,omitempty"`
	Credentials      *credentialChange `json:"credentials,omitempty"`
	Bindings         *bindingChange    `json:"bindings,omitempty"`
}

type credentialChange struct {
	Add     []credentialIn `json:"add,omitempty"`
	Replace []credentialIn `json:"replace,omitempty"`
	Delete  []string       `json:"delete,omitempty"`
}

type bindingChange struct {
	Add     []bindingSpec `json:"add,omitempty"`
	Replace []bindingSpec `json:"replace,omitempty"`
	Delete  []string      `json:"delete,omitempty"`
}

// Sanitized responses.

type vaultState struct {
	Revision    int64             `json:"revision"`
	Credentials []credentialMeta  `json:"credentials"`
	Bindings    []bindingMetadata `json:"bindings"`
}

type credentialMeta struct {
	Name       string `json:"name"`
	SourceType string `json:"sourceType"`
	Revision   int64  `json:"revision"`
}

type bindingMetadata struct {
	Name     string       `json:"name"`
	Revision int64        `json:"revision"`
	Match    bindingMatch `json:"match"`
	Auth     authMetadata `json:"auth"`
}

type authMetadata struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// Stored state.

type credRecord struct {
	name, sourceType, value string
	revision                int64
}

type bindingRecord struct {
	spec     bindingSpec // normalized
	revision int64
}

type vault struct {
	revision int64
	creds    map[string]credRecord
	bindings map[string]bindingRecord
}

func (v *vault) clone() *vault {
	out := &vault{revision: v.revision, creds: map[string]credRecord{}, bindings: map[string]bindingRecord{}}
	for k, c := range v.creds {
		out.creds[k] = c
	}
	for k, b := range v.bindings {
		out.bindings[k] = b
	}
	return out
}

func (v *vault) state() vaultState {
	s := vaultState{Revision: v.revision, Credentials: v.credentialList(), Bindings: v.bindingList()}
	return s
}

func (v *vault) credentialList() []credentialMeta {
	out := make([]credentialMeta, 0, len(v.creds))
	for _, c := range v.creds {
		out = append(out, credentialMeta{Name: c.name, SourceType: c.sourceType, Revision: c.revision})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (v *vault) bindingList() []bindingMetadata {
	out := make([]bindingMetadata, 0, len(v.bindings))
	for _, b := range v.bindings {
		out = append(out, b.metadata())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (b bindingRecord) metadata() bindingMetadata {
	m := bindingMetadata{Name: b.spec.Name, Revision: b.revision, Match: b.spec.Match, Auth: authMetadata{Type: b.spec.Auth.Type}}
	if b.spec.Auth.Type == "apiKey" {
		m.Auth.Name = b.spec.Auth.Name
	}
	return m
}

// newVault builds revision 1 from a create request, validated against p.
func newVault(req vaultCreateRequest, p Policy) (*vault, error) {
	v := &vault{revision: 1, creds: map[string]credRecord{}, bindings: map[string]bindingRecord{}}
	for _, c := range req.Credentials {
		rec, err := normalizeCredential(c, 1)
		if err != nil {
			return nil, err
		}
		if _, dup := v.creds[rec.name]; dup {
			return nil, badRequest("duplicate credential name %q", rec.name)
		}
		v.creds[rec.name] = rec
	}
	for _, b := range req.Bindings {
		nb, err := normalizeBinding(b)
		if err != nil {
			return nil, err
		}
		if _, dup := v.bindings[nb.Name]; dup {
			return nil, badRequest("duplicate binding name %q", nb.Name)
		}
		v.bindings[nb.Name] = bindingRecord{spec: nb, revision: 1}
	}
	if err := v.validate(p); err != nil {
		return nil, err
	}
	return v, nil
}

// mutate applies a PATCH atomically, returning the new vault.
func (v *vault) mutate(req vaultMutationRequest, p Policy) (*vault, error) {
	if req.ExpectedRevision != nil && *req.ExpectedRevision != v.revision {
		return nil, &vaultError{http.StatusConflict, fmt.Sprintf("expectedRevision %d does not match current revision %d", *req.ExpectedRevision, v.revision)}
	}
	if req.Credentials == nil && req.Bindings == nil {
		return nil, badRequest("mutation names no credentials or bindings")
	}
	next := v.clone()
	next.revision = v.revision + 1
	if c := req.Credentials; c != nil {
		if err := applyOps("credential", next.creds, c.Delete, c.Replace, c.Add, func(in credentialIn) (string, credRecord, error) {
			rec, err := normalizeCredential(in, next.revision)
			return rec.name, rec, err
		}); err != nil {
			return nil, err
		}
	}
	if b := req.Bindings; b != nil {
		if err := applyOps("binding", next.bindings, b.Delete, b.Replace, b.Add, func(in bindingSpec) (string, bindingRecord, error) {
			nb, err := normalizeBinding(in)
			return nb.Name, bindingRecord{spec: nb, revision: next.revision}, err
		}); err != nil {
			return nil, err
		}
	}
	if err := next.validate(p); err != nil {
		return nil, err
	}
	return next, nil
}

// applyOps applies one kind's delete, replace and add lists of a PATCH to m,
// in that order. A name may appear once per patch; delete and replace need an
// existing entry, add a new one. norm validates an entry and names it.
func applyOps[In, Rec any](kind string, m map[string]Rec, del []string, replace, add []In, norm func(In) (string, Rec, error)) error {
	seen := map[string]bool{}
	for _, name := range del {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			return badRequest("%s delete name %q is blank or mentioned twice", kind, name)
		}
		seen[name] = true
		if _, ok := m[name]; !ok {
			return badRequest("%s %q does not exist", kind, name)
		}
		delete(m, name)
	}
	put := func(in In, mustExist bool) error {
		name, rec, err := norm(in)
		if err != nil {
			return err
		}
		if seen[name] {
			return badRequest("%s %q mentioned by multiple operations", kind, name)
		}
		seen[name] = true
		if _, exists := m[name]; exists != mustExist {
			if mustExist {
				return badRequest("%s %q does not exist", kind, name)
			}
			return badRequest("%s %q already exists", kind, name)
		}
		m[name] = rec
		return nil
	}
	for _, in := range replace {
		if err := put(in, true); err != nil {
			return err
		}
	}
	for _, in := range add {
		if err := put(in, false); err != nil {
			return err
		}
	}
	return nil
}

func normalizeCredential(c credentialIn, rev int64) (credRecord, error) {
	name := strings.TrimSpace(c.Name)
	if name == "" {
		return credRecord{}, badRequest("credential name cannot be blank")
	}
	typ := strings.TrimSpace(c.Source.Type)
	if typ == "" {
		typ = "inline"
	}
	if typ != "inline" {
		return credRecord{}, badRequest("credential %q: unsupported source type %q (only inline)", name, typ)
	}
	if c.Source.Value == "" {
		return credRecord{}, badRequest("credential %q: inline value cannot be empty", name)
	}
	return credRecord{name: name, sourceType: typ, value: c.Source.Value, revision: rev}, nil
}

func normalizeBinding(b bindingSpec) (bindingSpec, error) {
	b.Name = strings.TrimSpace(b.Name)
	if b.Name == "" {
		return bindingSpec{}, badRequest("binding name cannot be blank")
	}
	m, err := normalizeMatch(b.Match)
	if err != nil {
		return bindingSpec{}, badRequest("binding %q: %v", b.Name, err)
	}
	b.Match = m
	a, err := normalizeAuth(b.Auth)
	if err != nil {
		return bindingSpec{}, badRequest("binding %q: %v", b.Name, err)
	}
	b.Auth = a
	return b, nil
}

func normalizeMatch(in bindingMatch) (bindingMatch, error) {
	var m bindingMatch
	if len(in.Hosts) == 0 {
		return m, errors.New("match.hosts is required")
	}
	schemes := in.Schemes
	if len(schemes) == 0 {
		schemes = []string{"https"}
	}
	for _, s := range schemes {
		s = strings.ToLower(strings.TrimSpace(s))
		if s != "http" && s != "https" {
			return m, fmt.Errorf("unsupported scheme %q", s)
		}
		m.Schemes = appendUnique(m.Schemes, s)
	}
	ports := in.Ports
	if len(ports) == 0 {
		ports = []int{443}
	}
	for _, p := range ports {
		if p != 80 && p != 443 {
			return m, fmt.Errorf("port %d is not an intercepted port (80 or 443)", p)
		}
		if !containsInt(m.Ports, p) {
			m.Ports = append(m.Ports, p)
		}
	}
	for _, h := range in.Hosts {
		nh, err := normalizeBindingHost(h)
		if err != nil {
			return m, err
		}
		m.Hosts = appendUnique(m.Hosts, nh)
	}
	methods := in.Methods
	if len(methods) == 0 {
		methods = defaultMethods
	}
	for _, x := range methods {
		x = strings.ToUpper(strings.TrimSpace(x))
		if x == "" {
			return m, errors.New("method cannot be blank")
		}
		m.Methods = appendUnique(m.Methods, x)
	}
	paths := in.Paths
	if len(paths) == 0 {
		paths = []string{"/*"}
	}
	for _, p := range paths {
		p = strings.TrimSpace(p)
		if !strings.HasPrefix(p, "/") {
			return m, fmt.Errorf("path pattern %q must start with /", p)
		}
		m.Paths = appendUnique(m.Paths, p)
	}
	return m, nil
}

func normalizeBindingHost(h string) (string, error) {
	h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
	if h == "" {
		return "", errors.New("host cannot be blank")
	}
	if strings.Contains(h, "/") || strings.Contains(h, ":") {
		return "", fmt.Errorf("host %q must be a bare FQDN (no scheme, port or path; IPs are rejected)", h)
	}
	name := strings.TrimPrefix(h, "*.")
	if name == "" || strings.Contains(name, "*") || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("invalid host pattern %q (want an FQDN or *.domain)", h)
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "", fmt.Errorf("host %q is an IP address; bindings need an FQDN", h)
	}
	return h, nil
}

func normalizeAuth(a bindingAuth) (bindingAuth, error) {
	a.Type = strings.TrimSpace(a.Type)
	a.Credential = strings.TrimSpace(a.Credential)
	switch a.Type {
	case "bearer", "basic":
		if a.Credential == "" {
			return a, fmt.Errorf("%s auth requires credential", a.Type)
		}
		if a.Name != "" || len(a.Headers) > 0 {
			return a, fmt.Errorf("%s auth takes only credential", a.Type)
		}
	case "apiKey":
		a.Name = http.CanonicalHeaderKey(strings.TrimSpace(a.Name))
		if err := checkHeaderName(a.Name); err != nil {
			return a, err
		}
		if a.Credential == "" {
			return a, errors.New("apiKey auth requires credential")
		}
	case "customHeaders":
		if len(a.Headers) == 0 {
			return a, errors.New("customHeaders auth requires headers")
		}
		seen := map[string]bool{}
		hs := make([]customHeader, 0, len(a.Headers))
		for _, h := range a.Headers {
			h.Name = http.CanonicalHeaderKey(strings.TrimSpace(h.Name))
			if err := checkHeaderName(h.Name); err != nil {
				return a, err
			}
			if seen[h.Name] {
				return a, fmt.Errorf("duplicate custom header %q", h.Name)
			}
			seen[h.Name] = true
			h.Credential = strings.TrimSpace(h.Credential)
			if h.Credential == "" {
				return a, fmt.Errorf("custom header %q requires credential", h.Name)
			}
			hs = append(hs, h)
		}
		a.Headers = hs
	default:
		return a, fmt.Errorf("unsupported auth type %q (bearer, basic, apiKey, customHeaders)", a.Type)
	}
	return a, nil
}

func checkHeaderName(name string) error {
	if name == "" || !headerNameRE.MatchString(name) {
		return fmt.Errorf("invalid header name %q", name)
	}
	if isReservedHeader(name) {
		return fmt.Errorf("reserved header name %q cannot carry a credential", name)
	}
	return nil
}

func credentialRefs(a bindingAuth) []string {
	if a.Type == "customHeaders" {
		out := make([]string, 0, len(a.Headers))
		for _, h := range a.Headers {
			out = append(out, h.Credential)
		}
		return out
	}
	return []string{a.Credential}
}

// validate checks the whole vault against the policy: credential references,
// explicit allow coverage of binding hosts, and binding ambiguity.
func (v *vault) validate(p Policy) error {
	if len(v.bindings) > 0 && len(p.Egress) == 0 {
		return badRequest("credential bindings require explicit networkPolicy.egress allow rules")
	}
	names := make([]string, 0, len(v.bindings))
	for n := range v.bindings {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b := v.bindings[n].spec
		for _, ref := range credentialRefs(b.Auth) {
			if _, ok := v.creds[ref]; !ok {
				return badRequest("binding %q references unknown credential %q", b.Name, ref)
			}
		}
		for _, h := range b.Match.Hosts {
			if !explicitAllowCovers(p, h) {
				return badRequest("binding %q host %q is not covered by an explicit allow egress rule", b.Name, h)
			}
		}
	}
	for i := 0; i < len(names); i++ {
		for j := i + 1; j < len(names); j++ {
			if bindingsOverlap(v.bindings[names[i]].spec, v.bindings[names[j]].spec) {
				return badRequest("bindings %q and %q can match the same request at the same precedence (ambiguous)", names[i], names[j])
			}
		}
	}
	return nil
}

// explicitAllowCovers: an allow rule names the host (or a wildcard covering
// it) and the policy as a whole allows it (an earlier deny would win).
func explicitAllowCovers(p Policy, host string) bool {
	probe := host
	if strings.HasPrefix(host, "*.") {
		probe = "probe." + host[2:]
	}
	explicit := false
	for _, r := range p.Egress {
		if r.Action != ActionAllow {
			continue
		}
		if r.Target == host || (strings.HasPrefix(r.Target, "*.") && targetMatches(r.Target, probe)) {
			explicit = true
			break
		}
	}
	return explicit && p.Evaluate(probe).Allowed
}

func bindingsOverlap(a, b bindingSpec) bool {
	if !overlapStrings(a.Match.Schemes, b.Match.Schemes) || !overlapInts(a.Match.Ports, b.Match.Ports) ||
		!overlapStrings(a.Match.Methods, b.Match.Methods) || !pathsOverlap(a.Match.Paths, b.Match.Paths) {
		return false
	}
	for _, x := range a.Match.Hosts {
		for _, y := range b.Match.Hosts {
			xw, yw := strings.HasPrefix(x, "*."), strings.HasPrefix(y, "*.")
			switch {
			case xw != yw:
				continue
			case !xw && x == y:
				return true
			case xw:
				xs, ys := x[2:], y[2:]
				if xs == ys || strings.HasSuffix(xs, "."+ys) || strings.HasSuffix(ys, "."+xs) {
					return true
				}
			}
		}
	}
	return false
}

func pathsOverlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if pathPatternMatches(x, strings.TrimSuffix(y, "*")) || pathPatternMatches(y, strings.TrimSuffix(x, "*")) {
				return true
			}
		}
	}
	return false
}

// pathPatternMatches: exact, or a prefix when the pattern ends in "*".
func pathPatternMatches(pattern, path string) bool {
	if strings.HasSuffix(pattern, "*") {
		return strings.HasPrefix(path, strings.TrimSuffix(pattern, "*"))
	}
	return pattern == path
}

func overlapStrings(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func overlapInts(a, b []int) bool {
	for _, x := range a {
		if containsInt(b, x) {
			return true
		}
	}
	return false
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
