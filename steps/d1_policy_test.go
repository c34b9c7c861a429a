package steps

import (
	"slices"
	"testing"
	"time"
)

// TestAllowedLookups reads the hosts an egress sidecar's log shows allowed
// after the deny: lines "<engine timestamp> <JSON>", egress.outbound events
// without error only.
func TestAllowedLookups(t *testing.T) {
	since := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	log := `2026-12-01T18:59:59.000000000Z {"level":"info","opensandbox.event":"egress.outbound","target.host":"pypi.org","target.ips":["1.2.3.4"]}
2026-12-01T19:00:01.000000000Z {"level":"info","opensandbox.event":"egress.outbound","target.host":"files.pythonhosted.org","target.ips":["1.2.3.5"]}
2026-12-01T19:00:02.000000000Z {"level":"info","opensandbox.event":"egress.outbound","target.host":"data-api.capstone.test","error":"read udp: i/o timeout"}
2026-12-01T19:00:03.000000000Z {"level":"info","opensandbox.event":"egress.updated","target.host":"pypi.org"}
2026-12-01T19:00:04.000000000Z policy server listening on :18080
garbage {"opensandbox.event":"egress.outbound","target.host":"unknown.time"}
`
	got := allowedLookups(log, since)
	want := []string{"files.pythonhosted.org", "unknown.time"}
	if !slices.Equal(got, want) {
		t.Errorf("allowedLookups = %v, want %v", got, want)
	}
}
