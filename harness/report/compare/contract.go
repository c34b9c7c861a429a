package compare

import (
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/osb-capstone/acceptance/harness/report"
)

// Contract is what a bundle's recording proxies saw the platform answer,
// as a set of facts with no values in them: for each exchange (method and
// route, the sandbox id as {id}) the status codes it was answered with,
// and for each status the body's JSON shape, the error code and the
// response header names. Two bundles of one subject and seed make the same
// calls, so a fact seen on one side only is a contract change, unless it
// also varies between runs of one side (ContractChanges).
type Contract map[string]bool

// uuidish is a path segment that is an id.
var uuidish = regexp.MustCompile(`^[0-9a-fA-F-]{8,}$|^[0-9a-zA-Z]{16,}$`)

// route is a path with its sandbox id (and query) left out:
// "/v1/sandboxes/3914c4ff-…/endpoints/44772" → "/sandboxes/{id}/endpoints/44772".
func route(path, id string) string {
	p := strings.SplitN(path, "?", 2)[0]
	p = strings.TrimPrefix(p, "/v1")
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if (id != "" && s == id) || (i == 2 && parts[1] == "sandboxes" && uuidish.MatchString(s)) {
			parts[i] = "{id}"
		}
	}
	return strings.Join(parts, "/")
}

// ReadContract collects a bundle's contract facts from every subject run's
// proxy records (lifecycle exchanges and execd calls).
func ReadContract(dir string) Contract {
	c := Contract{}
	runs, _ := filepath.Glob(filepath.Join(dir, report.EvidenceDir, "subject-*"))
	for _, rdir := range runs {
		for _, name := range []string{proxyLifecycleFile, endpointCallsFile} {
			for _, call := range readProxyCalls(rdir, name) {
				if call.Status == 0 {
					continue
				}
				x := call.Method + " " + route(call.Path, call.SandboxID)
				st := x + " → " + strconv.Itoa(call.Status)
				c[st] = true
				if call.Shape != "" {
					c[st+" body "+call.Shape] = true
				}
				if call.ErrorCode != "" {
					c[st+" error code "+call.ErrorCode] = true
				}
				for _, h := range call.Headers {
					c[st+" header "+h] = true
				}
			}
		}
	}
	return c
}

// ContractChange is one fact seen in every run of one side and in no run
// of the other.
type ContractChange struct {
	Fact string `json:"fact"`
	Side string `json:"side"` // "old" (gone in the new version) or "new" (appeared)
}

// ContractChanges compares the contracts of each side's runs: a fact is a
// change when every run of one side shows it and no run of the other does
// (a fact that comes and goes between runs of one side is variation, not a
// change). Nothing is reported when a side has no proxy records at all.
func ContractChanges(oldRuns, newRuns []Contract) []ContractChange {
	if len(oldRuns) == 0 || len(newRuns) == 0 {
		return nil
	}
	all := func(cs []Contract, f string) bool {
		for _, c := range cs {
			if !c[f] {
				return false
			}
		}
		return true
	}
	none := func(cs []Contract, f string) bool {
		for _, c := range cs {
			if c[f] {
				return false
			}
		}
		return true
	}
	empty := func(cs []Contract) bool {
		for _, c := range cs {
			if len(c) > 0 {
				return false
			}
		}
		return true
	}
	if empty(oldRuns) || empty(newRuns) {
		return nil
	}
	var out []ContractChange
	seen := map[string]bool{}
	for _, side := range []struct {
		name      string
		this, oth []Contract
	}{{"old", oldRuns, newRuns}, {"new", newRuns, oldRuns}} {
		for _, c := range side.this {
			for f := range c {
				if seen[side.name+f] {
					continue
				}
				seen[side.name+f] = true
				if all(side.this, f) && none(side.oth, f) {
					out = append(out, ContractChange{Fact: f, Side: side.name})
				}
			}
		}
	}
	// A status one side never answered says its headers are different
	// too: list the status (with its body and error code), not each header.
	changed := map[string]bool{}
	for _, c := range out {
		changed[c.Side+c.Fact] = true
	}
	kept := out[:0]
	for _, c := range out {
		if i := strings.Index(c.Fact, " header "); i >= 0 && changed[c.Side+c.Fact[:i]] {
			continue
		}
		kept = append(kept, c)
	}
	out = kept
	sort.Slice(out, func(i, j int) bool {
		if out[i].Fact != out[j].Fact {
			return out[i].Fact < out[j].Fact
		}
		return out[i].Side < out[j].Side
	})
	return out
}
