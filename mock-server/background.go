package mockserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// finishBackground completes the audit of background commands. Their SSE
// stream ends at once (init, execution_complete), so the command event the
// execd endpoint records has no exit code. Just before a sandbox is removed,
// the server asks execd for each such command's status and records a second
// command event with the same id and the outcome: its exit code, or -1 and
// "still running at removal" for one the removal kills. A paused sandbox's
// execd is frozen and is not asked.
//
// Foreground commands whose stream is still open are recorded here too, as
// killed by the removal (execdEndpoint.abandonInflight), with the reason the
// removal recorded.
func (s *Server) finishBackground(id string, sb *sandbox) {
	if sb.execd == nil {
		return
	}
	reason := ""
	s.mu.Lock()
	if sb.record != nil {
		reason = sb.record.Reason
	}
	s.mu.Unlock()
	sb.execd.abandonInflight(reason)
	sb.stMu.Lock()
	paused := sb.paused
	sb.stMu.Unlock()
	if paused {
		return
	}
	finished := map[string]bool{}
	var pending []wire.Command
	for _, ev := range s.audit.Events(audit.Query{SandboxID: id, Kind: wire.KindCommand}) {
		c := ev.Command
		if !c.Background || c.ID == "" {
			continue
		}
		if c.ExitCode != nil {
			finished[c.ID] = true
		} else {
			pending = append(pending, *c)
		}
	}
	client := &http.Client{Transport: sb.execd.transport, Timeout: 3 * time.Second}
	for _, c := range pending {
		if finished[c.ID] {
			continue
		}
		finished[c.ID] = true
		res, err := client.Get("http://execd/command/status/" + url.PathEscape(c.ID))
		if err != nil {
			continue
		}
		var st struct {
			Running    bool       `json:"running"`
			ExitCode   *int       `json:"exit_code"`
			Error      string     `json:"error"`
			StartedAt  *time.Time `json:"started_at"`
			FinishedAt *time.Time `json:"finished_at"`
		}
		err = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&st)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			continue
		}
		done := c
		done.ExitCode, done.Error = st.ExitCode, st.Error
		if st.Running {
			killed := -1
			done.ExitCode, done.Error = &killed, "still running at removal (killed with the sandbox)"
		}
		if st.StartedAt != nil && st.FinishedAt != nil {
			done.DurationMs = st.FinishedAt.Sub(*st.StartedAt).Milliseconds()
		}
		s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindCommand, Command: &done})
	}
}
