package audit

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// classTrail records what a class of n submissions leaves in the audit of
// one shared server: per submission 25 subject keys, each creating one
// sandbox with ~30 events (lifecycle calls, commands, files, egress, state).
func classTrail(b *testing.B, n int) (*Store, []string) {
	s, err := NewStore("", nil)
	if err != nil {
		b.Fatal(err)
	}
	code := 0
	var keys []string
	for sub := 0; sub < n; sub++ {
		for run := 0; run < 25; run++ {
			key := fmt.Sprintf("%06x%06x", sub, run)
			id := "sb-" + key
			keys = append(keys, key)
			s.Record(wire.Event{SandboxID: id, Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: "POST", Path: "/v1/sandboxes", Status: 202, KeyFingerprint: key,
				Body: json.RawMessage(`{"image":{"uri":"python:3.12"},"timeout":600,"networkPolicy":{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"}]}}`)}})
			for i := 0; i < 26; i++ {
				s.Record(wire.Event{SandboxID: id, Kind: wire.KindCommand, Command: &wire.Command{ID: fmt.Sprint(i), Command: "python3 -m pip install -q tabulate && cd /workspace && python3 analyze.py", ExitCode: &code}})
			}
			s.Record(wire.Event{SandboxID: id, Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: "DELETE", Path: "/v1/sandboxes/" + id, Status: 204, KeyFingerprint: key}})
			s.Record(wire.Event{SandboxID: id, Kind: wire.KindState, State: &wire.State{To: "Deleted", Reason: "deleted by API"}})
		}
	}
	return s, keys
}

// BenchmarkAuditOneKeyOfAClass is what the harness pays to read one subject
// run's share of the audit of a server that has graded 100 submissions:
// by key (what it asks for now) against the whole trail (what it fetched
// before), each encoded as the admin route does.
func BenchmarkAuditOneKeyOfAClass(b *testing.B) {
	s, keys := classTrail(b, 100)
	key := keys[len(keys)/2]
	for _, c := range []struct {
		name string
		q    Query
	}{{"by-key", Query{Key: key}}, {"whole-trail", Query{}}} {
		b.Run(c.name, func(b *testing.B) {
			var bytes int
			for i := 0; i < b.N; i++ {
				out, err := json.Marshal(map[string]any{"events": s.Events(c.q)})
				if err != nil {
					b.Fatal(err)
				}
				bytes = len(out)
			}
			b.ReportMetric(float64(bytes), "bytes/answer")
		})
	}
}
