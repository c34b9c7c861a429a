// Package boxpolicy decides what a submission's command may reach from its
// box (harness/confine runs the box; this package says what the box
// allows). Apply fills a command's subject.Spec with that policy:
//
//   - the loopback ports it may connect to: its target (or the recording
//     proxy in front of it), the scripted model, the CSV and data stubs,
//     and the execd and egress endpoints of the sandboxes its own key
//     created, looked up when a connection asks for a port not known yet
//     (never another tenant's). Every other connection is refused and
//     recorded in its result; when the look-up that judged a connection
//     failed or did not finish, the refusal is unsure (the box records the
//     grader's break, a harness error, never the command's refusal), unless
//     the command is scanning (more than confine.ScanPorts ports not its
//     own refused for sure: its flood, not the grader, is then to blame);
//   - on the bundled server, a guard on its lifecycle port: the admin API
//     (/_mock/…, however spelled) is refused, and a sandbox-scoped route
//     (the keyless server proxy included) only reaches sandboxes created
//     with one of the submission's keys (Owners, read from the server's
//     audit: an audit that cannot be read refuses);
//   - what it sees of the host read-only: the Python environments on the
//     grader's PATH, the submission's parent when its manifest names ../,
//     and a bare command's own files.
//
// With confinement off (Session.Confine nil) the command runs unconfined,
// and its spec says why. The package knows no scenario: a grade's steps
// build a Session once and call Apply for each command they launch.
package boxpolicy

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// Session is the grade's side of every command's policy.
type Session struct {
	Confine    *confine.Config // nil: commands run unconfined
	Unconfined string          // why, when Confine is nil ("" → "not asked for")
	Client     *osb.Client     // the harness's own client of the target
	// Bundled: the target is the bundled server, with its admin API on the
	// lifecycle port (TargetDomain).
	Bundled      bool
	TargetDomain string
	// SubmissionDir: the submission's directory ("" for a bare command on
	// the grader's command line); Commands: its manifest's command lines.
	SubmissionDir string
	Commands      []string
	Owners        *Owners // the submission's keys and who created which sandbox
	// View, on a real target (no tenants), tells the submission's own
	// sandboxes from a classmate's by the create answers the class's
	// recording proxies relayed (observe.View.Mine); nil: none.
	View interface{ Mine(id string) bool }
}

// Apply sets spec.Confine for the command rec (or says in spec why it runs
// unconfined).
func Apply(ctx context.Context, s Session, rec *command.Record, spec *subject.Spec) {
	if s.Confine == nil {
		spec.Unconfined = s.Unconfined
		if spec.Unconfined == "" {
			spec.Unconfined = "not asked for"
		}
		return
	}
	static := map[int]bool{}
	for _, u := range []string{spec.Env.Domain, spec.Env.ModelBaseURL, spec.Inputs.CSVURL, spec.Env.DataAPIURL} {
		if p := LoopbackPort(u); p > 0 {
			static[p] = true
		}
	}
	if s.Confine.Level == confine.LevelUID {
		// Level uid: no network namespace, so no forwarder and no guard
		// (docs/confinement.md, "Levels"): nothing to allow or refuse.
		spec.Confine = &subject.Confinement{Config: *s.Confine, ShowSiblings: UsesParent(s.Commands...)}
		return
	}
	sp := newSandboxPorts(context.WithoutCancel(ctx), s.Client, rec)
	spec.Confine = &subject.Confinement{
		Config:       *s.Confine,
		ShowSiblings: UsesParent(s.Commands...),
		ReadOnly:     append(VenvsOnPath(), CommandPaths(s.SubmissionDir, spec.Template.String())...),
		Check: func(port int) (bool, string) {
			if static[port] {
				return true, ""
			}
			return sp.check(port)
		},
	}
	if admin := LoopbackPort(s.TargetDomain); s.Bundled && admin > 0 {
		// The bundled server's admin API (/_mock/...) shares its lifecycle
		// port: requests there are read, and admin ones refused.
		spec.Confine.Guard = func(port int) func(*http.Request) string {
			if port != admin {
				return nil
			}
			return RefuseAdmin
		}
		// A sandbox-scoped route (the keyless server proxy included) only
		// for the submission's own sandboxes.
		s.Owners.AddKey(rec.KeyFP)
		owned := context.WithoutCancel(ctx)
		spec.Confine.Owns = func(id string) (bool, error) { return s.Owners.Owns(owned, s.Client, id) }
	} else if lp := LoopbackPort(spec.Env.Domain); s.View != nil && lp > 0 {
		// A real target (no tenants): the box reaches it through the
		// recording proxy, guarded the same way. Whose sandbox is whose
		// comes from the create answers the class's proxies relayed.
		spec.Confine.Guard = func(port int) func(*http.Request) string {
			if port != lp {
				return nil
			}
			return passThrough
		}
		v := s.View
		spec.Confine.Owns = func(id string) (bool, error) { return v.Mine(id), nil }
	}
}

// passThrough lets every request through (the ownership check still applies).
func passThrough(*http.Request) string { return "" }

// RefuseAdmin refuses a request for the bundled server's admin API, however
// its path is spelled (percent-encoded, doubled slashes, any case).
func RefuseAdmin(r *http.Request) string {
	raw := r.RequestURI
	if u, err := url.PathUnescape(raw); err == nil {
		raw += " " + u
	}
	if strings.Contains(strings.ToLower(r.URL.Path+" "+raw), "_mock") {
		return "the bundled server's admin API is the grader's alone"
	}
	return ""
}

// UsesParent: a command of the manifest names ../ (the calibration set's
// bad-* members run ../student/…): the submission's parent is shown read-only.
func UsesParent(commands ...string) bool {
	for _, c := range commands {
		if strings.Contains(c, "../") {
			return true
		}
	}
	return false
}

// CommandPaths: a bare command given on the grader's own command line
// (run --subject, no submission directory: submissionDir "") names host
// files by absolute path (its script, a venv's python): they are shown
// read-only, each one's venv or directory. A submission's manifest never
// gets this: its commands see its own copy only.
func CommandPaths(submissionDir, cmd string) []string {
	if submissionDir != "" {
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

// VenvsOnPath are the Python virtual environments on the grader's PATH (the
// pinned SDK venvs under .cache): shown read-only at the same path.
func VenvsOnPath() []string {
	var out []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		root := filepath.Dir(d)
		if _, err := os.Stat(filepath.Join(root, "pyvenv.cfg")); err == nil && filepath.IsAbs(root) {
			out = append(out, root)
		}
	}
	return out
}

// LoopbackPort is the port of a loopback host:port or URL, 0 otherwise.
func LoopbackPort(s string) int {
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
