package steps

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// Confinement of the submission's commands (harness/confine): the steps
// know which host ports each command may reach: its target (or the
// recording proxy in front of it), the scripted model, the CSV and data
// stubs, and the execd and egress endpoints of the sandboxes its own key
// created (never another tenant's). Every other connection is refused and
// recorded in its result.

// confine sets spec.Confine for the command l (or says why it runs unconfined).
func (e *Env) confine(ctx context.Context, l *launch, spec *subject.Spec) {
	if e.opt.Confine == nil {
		spec.Unconfined = e.opt.Unconfined
		if spec.Unconfined == "" {
			spec.Unconfined = "not asked for"
		}
		return
	}
	static := map[int]bool{}
	for _, u := range []string{spec.Env.Domain, spec.Env.ModelBaseURL, spec.Inputs.CSVURL, spec.Env.DataAPIURL} {
		if p := loopbackPort(u); p > 0 {
			static[p] = true
		}
	}
	if !e.boxSeesKeyless() {
		// Level uid: no network namespace, so no forwarder and no guard
		// (docs/confinement.md, "Levels"): nothing to allow or refuse.
		spec.Confine = &subject.Confinement{Config: *e.opt.Confine, ShowSiblings: e.usesParent()}
		return
	}
	sp := newSandboxPorts(e, l, context.WithoutCancel(ctx))
	spec.Confine = &subject.Confinement{
		Config:       *e.opt.Confine,
		ShowSiblings: e.usesParent(),
		ReadOnly:     append(venvsOnPath(), e.commandPaths(spec.Template.String())...),
		Allow: func(port int) bool {
			return static[port] || sp.allowed(port)
		},
		Unsure: sp.unsure,
	}
	if admin := loopbackPort(e.opt.Target.Domain); e.mock() && admin > 0 {
		// The bundled server's admin API (/_mock/...) shares its lifecycle
		// port: requests there are read, and admin ones refused.
		spec.Confine.Guard = func(port int) func(*http.Request) string {
			if port != admin {
				return nil
			}
			return refuseAdmin
		}
		// A sandbox-scoped route (the keyless server proxy included) only
		// for the submission's own sandboxes.
		e.owners.addKey(l.KeyFP)
		owned := context.WithoutCancel(ctx)
		spec.Confine.Owns = func(id string) (bool, error) { return e.ownsSandbox(owned, id) }
	}
}

// boxSeesKeyless: the command's box has a network of its own whose guard
// sees each request it sends (level full; not level uid, not unconfined).
func (e *Env) boxSeesKeyless() bool {
	return e.opt.Confine != nil && e.opt.Confine.Level != confine.LevelUID
}

// sandboxOwners are the key fingerprints of the submission's commands and,
// per sandbox, the fingerprint of the key that created it (it never changes:
// cached once known).
type sandboxOwners struct {
	mu      sync.Mutex
	keys    map[string]bool
	creator map[string]string
	// unknown: ids the server held no sandbox for, and when that was read
	// (briefly cached: a box asking for made-up ids in a loop must not turn
	// each request into two reads of the shared server).
	unknown map[string]time.Time
}

// unknownFor is how long "no such sandbox" is believed.
const unknownFor = 2 * time.Second

func (o *sandboxOwners) knownUnknown(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	at, ok := o.unknown[id]
	return ok && time.Since(at) < unknownFor
}

func (o *sandboxOwners) rememberUnknown(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.unknown == nil || len(o.unknown) > 1000 {
		o.unknown = map[string]time.Time{}
	}
	o.unknown[id] = time.Now()
}

func (o *sandboxOwners) addKey(fp string) {
	if fp == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.keys == nil {
		o.keys = map[string]bool{}
	}
	o.keys[fp] = true
}

// mine says whether the creator fingerprint is one of the submission's keys.
func (o *sandboxOwners) mine(fp string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fp != "" && o.keys[fp]
}

func (o *sandboxOwners) cached(id string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fp, ok := o.creator[id]
	return fp, ok
}

func (o *sandboxOwners) remember(id, fp string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.creator == nil {
		o.creator = map[string]string{}
	}
	o.creator[id] = fp
}

// ownsSandbox says whether the sandbox id was created with a key of this
// submission, from the bundled server's audit (its create call's key
// fingerprint). A sandbox the server never created goes through (it answers
// 404); an audit that cannot be read is an error (the guard refuses).
func (e *Env) ownsSandbox(ctx context.Context, id string) (bool, error) {
	if fp, ok := e.owners.cached(id); ok {
		return e.owners.mine(fp), nil
	}
	if e.owners.knownUnknown(id) {
		return true, nil
	}
	creator := func() (string, bool, error) {
		log, err := command.AuditWitness{Client: e.client}.Query(ctx, osb.AuditQuery{SandboxID: id, Kind: "lifecycle"}, 10*time.Second)
		if err != nil {
			return "", false, err
		}
		for _, ev := range log.Events {
			if lc := ev.Lifecycle; lc != nil && ev.SandboxID == id && lc.Method == "POST" && isCreatePath(lc.Path) && lc.Status == 202 {
				return lc.KeyFingerprint, true, nil
			}
		}
		return "", false, nil
	}
	fp, found, err := creator()
	if err != nil {
		return false, err
	}
	if found {
		e.owners.remember(id, fp)
		return e.owners.mine(fp), nil
	}
	// No create with any key: a sandbox the server holds all the same is
	// not the submission's; one it does not hold gets the server's own 404.
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := e.client.Admin().Sandboxes(c)
	if err != nil {
		return false, err
	}
	if !res.Decoded {
		return false, fmt.Errorf("/_mock/sandboxes answered %d", res.Status)
	}
	for _, sb := range res.Value.Sandboxes {
		if sb.ID != id {
			continue
		}
		// The server records a create once it has answered it: a sandbox
		// the command has just made may be held before its create is in the
		// audit. Read it once more.
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return false, ctx.Err()
		}
		if fp, found, err = creator(); err != nil {
			return false, err
		}
		if found {
			e.owners.remember(id, fp)
			return e.owners.mine(fp), nil
		}
		return false, nil
	}
	e.owners.rememberUnknown(id)
	return true, nil
}

// refuseAdmin refuses a request for the bundled server's admin API, however
// its path is spelled (percent-encoded, doubled slashes, any case).
func refuseAdmin(r *http.Request) string {
	raw := r.RequestURI
	if u, err := url.PathUnescape(raw); err == nil {
		raw += " " + u
	}
	if strings.Contains(strings.ToLower(r.URL.Path+" "+raw), "_mock") {
		return "the bundled server's admin API is the grader's alone"
	}
	return ""
}

// usesParent: a command of the manifest names ../ (the calibration set's
// bad-* members run ../student/…): the submission's parent is shown read-only.
func (e *Env) usesParent() bool {
	m := e.sub().Manifest
	for _, c := range []string{m.Run, m.Contract, m.Reap, m.Test.Unit, m.Test.Integration} {
		if strings.Contains(c, "../") {
			return true
		}
	}
	return false
}

// commandPaths: a bare command given on the grader's own command line
// (run --subject, no submission directory) names host files by absolute
// path (its script, a venv's python): they are shown read-only, each one's
// venv or directory. A submission's manifest never gets this: its commands
// see its own copy only.
func (e *Env) commandPaths(cmd string) []string {
	if e.sub().Dir != "" {
		return nil
	}
	var out []string
	for _, f := range strings.FieldsFunc(cmd, func(r rune) bool { return r == ' ' || r == '\'' || r == '"' || r == '=' }) {
		if !filepath.IsAbs(f) || strings.HasPrefix(f, "/usr/") || strings.HasPrefix(f, "/bin/") {
			continue
		}
		p := filepath.Clean(f)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		dir := p
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			dir = filepath.Dir(p)
		}
		root := dir
		for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "pyvenv.cfg")); err == nil {
				root = d
				break
			}
		}
		out = append(out, root)
	}
	return out
}

// venvsOnPath are the Python virtual environments on the grader's PATH (the
// pinned SDK venvs under .cache): shown read-only at the same path.
func venvsOnPath() []string {
	var out []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		root := filepath.Dir(d)
		if _, err := os.Stat(filepath.Join(root, "pyvenv.cfg")); err == nil && filepath.IsAbs(root) {
			out = append(out, root)
		}
	}
	return out
}

// loopbackPort is the port of a loopback host:port or URL, 0 otherwise.
func loopbackPort(s string) int {
	if s == "" {
		return 0
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return 0
	}
	h, p := u.Hostname(), u.Port()
	if p == "" {
		return 0
	}
	if ip := net.ParseIP(h); (ip == nil || !ip.IsLoopback()) && h != "localhost" {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// sandboxPorts are the loopback ports of the endpoints of sandboxes a
// command's key created, looked up when a connection asks for a port not
// known yet.
//
// No lock is held across network I/O: one look-up runs at a time (in a
// goroutine of its own, every read bounded), and a connection waits for it
// at most portLookupWait. A look-up that never returned (an audit read the
// server never answered) once held a hostile calibration grade for ten
// minutes: every connection of the box waited on the lock, and the box's
// close waited on its connections.
//
// A connection is judged only by a look-up that began after it arrived: one
// already running may have read the key's sandboxes before the command's
// newest create was recorded. A port is refused as not the command's only
// when such a look-up read everything and did not find it; when it failed
// or did not finish, unsure says why, and the box records the connection
// as the grader's break (a harness error), never as the command's refusal.
type sandboxPorts struct {
	e   *Env
	l   *launch
	ctx context.Context

	mu        sync.Mutex
	ports     map[int]bool
	seen      map[string]bool // sandboxes whose endpoints were read
	lastAt    time.Time
	inflight  chan struct{} // closed when the running look-up is done
	startedAt time.Time     // when the running look-up began
	lastErr   string        // why the last look-up did not read everything ("" it did)
	// created, endpoint: the reads a look-up makes (tests stub them).
	created  func(ctx context.Context) ([]string, error)
	endpoint func(ctx context.Context, id string, port int) (string, error)
	// waiting, when set, is told that a connection waits on a look-up
	// (fresh: one that began after it arrived); tests only.
	waiting func(fresh bool)
}

// The bounds of a look-up: the whole of it, and a connection's wait for it.
var (
	portLookupLimit = 20 * time.Second
	portLookupWait  = 25 * time.Second
)

func newSandboxPorts(e *Env, l *launch, ctx context.Context) *sandboxPorts {
	s := &sandboxPorts{e: e, l: l, ctx: ctx, ports: map[int]bool{}, seen: map[string]bool{}}
	s.created = s.createdByKey
	s.endpoint = func(ctx context.Context, id string, port int) (string, error) {
		res, err := e.client.GetEndpoint(ctx, id, port, false)
		switch {
		case err != nil:
			return "", err
		case res.Status == http.StatusNotFound:
			return "", nil // gone: nothing to reach
		case !res.Decoded:
			return "", fmt.Errorf("endpoint answered %d", res.Status) // not running yet: read again
		}
		return res.Value.Endpoint, nil
	}
	return s
}

func (s *sandboxPorts) allowed(port int) bool {
	asked := time.Now()
	t := time.NewTimer(portLookupWait)
	defer t.Stop()
	for {
		s.mu.Lock()
		if s.ports[port] {
			s.mu.Unlock()
			return true
		}
		ch, fresh := s.inflight, !s.startedAt.Before(asked)
		if ch == nil {
			ch, fresh = make(chan struct{}), true
			s.inflight, s.startedAt = ch, time.Now()
			// At most ten look-ups a second: a command scanning ports waits on
			// itself; a fresh sandbox of its own is still found.
			wait := 100*time.Millisecond - time.Since(s.lastAt)
			go s.lookUp(ch, wait)
		}
		hook := s.waiting
		s.mu.Unlock()
		if hook != nil {
			hook(fresh)
		}
		select {
		case <-ch:
		case <-t.C:
			return false // unsure: the look-up did not finish
		}
		if fresh {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.ports[port]
		}
		// That look-up began before this connection: ask again.
	}
}

// unsure is why a port allowed refused may still be the command's: the
// last look-up failed, or one is still running (the connection stopped
// waiting for it); "" when the refusal is sure.
func (s *sandboxPorts) unsure(port int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ports[port]:
		return ""
	case s.inflight != nil:
		return fmt.Sprintf("the look-up of the command's sandboxes' ports did not finish within %s", portLookupWait)
	case s.lastErr != "":
		return "the look-up of the command's sandboxes' ports failed: " + s.lastErr
	}
	return ""
}

// lookUp reads the endpoints of the key's sandboxes not read yet, with no
// lock held while it reads, and closes done.
func (s *sandboxPorts) lookUp(done chan struct{}, wait time.Duration) {
	found := map[int]bool{}
	read := map[string]bool{}
	var failed error
	defer func() {
		s.mu.Lock()
		for p := range found {
			s.ports[p] = true
		}
		for id := range read {
			s.seen[id] = true
		}
		s.lastErr = ""
		if failed != nil {
			s.lastErr = failed.Error()
		}
		s.lastAt = time.Now()
		s.inflight = nil
		s.mu.Unlock()
		close(done)
	}()
	if wait > 0 {
		time.Sleep(wait)
	}
	ctx, cancel := context.WithTimeout(s.ctx, portLookupLimit)
	defer cancel()
	ids, err := s.created(ctx)
	if err != nil {
		failed = fmt.Errorf("reading the sandboxes the command's key created: %w", err)
		return
	}
	s.mu.Lock()
	var fresh []string
	for _, id := range ids {
		if !s.seen[id] {
			fresh = append(fresh, id)
		}
	}
	s.mu.Unlock()
	for _, id := range fresh {
		ok := true
		for _, p := range []int{osb.DefaultExecdPort, osb.DefaultEgressPort} {
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			ep, err := s.endpoint(c, id, p)
			cancel()
			if err != nil {
				ok = false // read again at the next look-up
				if failed == nil {
					failed = fmt.Errorf("reading the endpoint of sandbox %s port %d: %w", id, p, err)
				}
				continue
			}
			if hp := loopbackPort(ep); hp > 0 {
				found[hp] = true
			}
		}
		if ok {
			read[id] = true
		}
		if ctx.Err() != nil {
			if failed == nil {
				failed = ctx.Err()
			}
			return
		}
	}
}

// createdByKey are the sandboxes the command's key created so far.
func (s *sandboxPorts) createdByKey(ctx context.Context) ([]string, error) {
	if s.l.Proxy != nil {
		var ids []string
		for _, c := range s.l.Proxy.Calls() {
			if c.Method == "POST" && isCreatePath(c.Path) && c.Status == 202 && c.SandboxID != "" {
				ids = append(ids, c.SandboxID)
			}
		}
		return ids, nil
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sh, err := s.e.fetchKeyShare(c, s.l.KeyFP)
	if err != nil {
		return nil, err
	}
	return sh.Created, nil
}

// budgetLeft is the submission's time left (bounded false: no bound).
func (e *Env) budgetLeft() (time.Duration, bool) {
	if e.opt.SubmissionTimeout <= 0 {
		return 0, false
	}
	e.budgetMu.Lock()
	defer e.budgetMu.Unlock()
	return e.opt.SubmissionTimeout - e.budgetUsed, true
}

func (e *Env) spend(d time.Duration) {
	e.budgetMu.Lock()
	e.budgetUsed += d
	e.budgetMu.Unlock()
}
