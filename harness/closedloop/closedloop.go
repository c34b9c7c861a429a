// Package closedloop checks the course's closed loop on a run's sandboxes:
// each one was used (a command run to completion, a file written, a file
// read back: RoundTrip), destroyed by the run's own key and seen gone
// (DestroyedByKey), and, once destroyed, out of reach: the server lists
// none of them (ListsNone) and their execd endpoints no longer answer
// (EndpointsDead on the bundled server, which keeps each endpoint's
// record; NoEndpoint on a real target, which must resolve none). A
// destroyed sandbox still in reach is a violation of a security property
// (command.Violationf), a server that cannot say is the harness's fault
// (command.Harnessf).
//
// ReadyExecd is how the harness itself reaches a sandbox's execd, as the
// SDKs do (endpoint, then /ping). AuditErr says why an admin query gave no
// answer; the steps say it of theirs with it too.
package closedloop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// RoundTrip counts what a run did in its sandboxes: commands run to
// completion, uploads and downloads. On the bundled server from its audit
// (saw.Events); on a real target, which has no audit of what ran inside a
// sandbox, from the run's recording proxy's execd calls (endpointCalls).
func RoundTrip(saw command.Saw, endpointCalls []command.Call, bundled bool) (cmds, ups, downs int) {
	if !bundled {
		return command.ExecdRoundTrip(endpointCalls, saw.Created)
	}
	for _, ev := range saw.Events {
		switch {
		case ev.Kind == "command" && ev.Command != nil && ev.Command.ExitCode != nil:
			cmds++
		case ev.Kind == "file" && ev.File != nil && ev.File.Op == "upload":
			ups++
		case ev.Kind == "file" && ev.File != nil && ev.File.Op == "download":
			downs++
		}
	}
	return cmds, ups, downs
}

// Missing names what of the loop a run's counts lack ("" each: nothing).
func Missing(cmds, ups, downs int) []string {
	var missing []string
	if cmds == 0 {
		missing = append(missing, "ran no command to completion")
	}
	if ups == 0 {
		missing = append(missing, "wrote no file")
	}
	if downs == 0 {
		missing = append(missing, "read no file back")
	}
	return missing
}

// DestroyedByKey says whether a run's key (saw: what the target saw of it) deleted the sandbox (204) and
// then saw it gone (a GET or another call answering 404).
func DestroyedByKey(saw command.Saw, id string) (deleted, confirmed bool) {
	var deletedAt time.Time
	for _, ev := range saw.Calls {
		lc := ev.Lifecycle
		if lc == nil || ev.SandboxID != id {
			continue
		}
		if lc.Method == "DELETE" && lc.Status == 204 && !deleted {
			deleted, deletedAt = true, ev.Time
		}
		if deleted && lc.Status == 404 && !ev.Time.Before(deletedAt) {
			confirmed = true
		}
	}
	return deleted, confirmed
}

// NoEndpoint checks a real target resolves no execd endpoint for any of
// the destroyed sandboxes.
func NoEndpoint(ctx context.Context, client *osb.Client, destroyed []string) error {
	for _, id := range destroyed {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := client.GetEndpoint(c, id, osb.DefaultExecdPort, false)
		cancel()
		if err == nil && res.OK() {
			return command.Violationf("the server still resolves an endpoint for destroyed sandbox %s: %s", id, res.StatusLine)
		}
	}
	return nil
}

// EndpointsDead dials the execd endpoint the bundled server recorded for
// each destroyed sandbox: nothing of the sandbox may answer there any more.
// It returns what each dial got, for the evidence.
func EndpointsDead(ctx context.Context, client *osb.Client, destroyed []string) ([]string, error) {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := client.Admin().Sandboxes(c)
	if err != nil || !res.Decoded {
		return nil, command.Harnessf("the bundled server's sandbox records: %v", AuditErr(res, err))
	}
	addr := map[string]string{}
	for _, sb := range res.Value.Sandboxes {
		addr[sb.ID] = sb.ExecdEndpoint
	}
	var lines []string
	for _, id := range destroyed {
		ep := addr[id]
		if ep == "" {
			return nil, command.NotMeasuredf(string(rubric.CategoryPreconditionUnmet), "the server kept no endpoint record for destroyed sandbox %s", id)
		}
		// The bundled server may keep a removed sandbox's port listening to
		// record late calls (it resets them): what matters is that nothing
		// of the sandbox answers there any more.
		u := "http://" + strings.TrimSuffix(ep, "/") + "/ping"
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		req, _ := http.NewRequestWithContext(c, http.MethodGet, u, nil)
		res, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
			_ = res.Body.Close()
			if res.StatusCode < 300 {
				return nil, command.Violationf("destroyed sandbox %s still answers on its execd endpoint: GET %s → %s", id, u, res.Status)
			}
			// An execd with an access token (the bundled server's, below
			// confinement level full) answers a ping without it 401: that
			// is the sandbox's execd still answering.
			if res.StatusCode == http.StatusUnauthorized && strings.Contains(string(body), "X-EXECD-ACCESS-TOKEN") {
				return nil, command.Violationf("destroyed sandbox %s still answers on its execd endpoint: GET %s → %s %s", id, u, res.Status, strings.TrimSpace(string(body)))
			}
			lines = append(lines, fmt.Sprintf("%s: GET %s → %s (not the sandbox)", id, u, res.Status))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: GET %s → %v", id, u, err))
	}
	return lines, nil
}

// ReadyExecd resolves the execd endpoint and waits for /ping, as the SDKs do.
func ReadyExecd(ctx context.Context, client *osb.Client, id string) (*osb.Execd, error) {
	ep, err := client.GetEndpoint(ctx, id, osb.DefaultExecdPort, false)
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	if !ep.Decoded {
		return nil, fmt.Errorf("endpoint answered %d: %s", ep.Status, excerpt(ep.Body, 300))
	}
	ex, err := client.Execd(ep.Value)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pc, cancel := context.WithTimeout(ctx, 5*time.Second)
		p, err := ex.Ping(pc)
		cancel()
		if err == nil && p.OK() {
			return ex, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("execd at %s never answered /ping within 30 s", ep.Value.Endpoint)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ListsNone checks the server's list holds none of the destroyed sandboxes.
func ListsNone(ctx context.Context, client *osb.Client, ids []string) error {
	gone := map[string]bool{}
	for _, id := range ids {
		gone[id] = true
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := client.ListSandboxes(c, osb.ListOptions{PageSize: 200})
	if err != nil {
		return command.Harnessf("list: %v", err)
	}
	if !res.Decoded {
		return command.Harnessf("list answered %d: %s", res.Status, excerpt(res.Body, 200))
	}
	for _, it := range res.Value.Items {
		if gone[it.ID] {
			return command.Violationf("the server still lists sandbox %s (%s) after the subject destroyed it", it.ID, it.Status.State)
		}
	}
	return nil
}

// AuditErr says why an admin query gave no decoded answer: its error, or
// the status and body the server answered with (nil when it gave one). The
// steps' own admin queries say it with it too.
func AuditErr[T any](res *osb.Result[T], err error) error {
	switch {
	case err != nil:
		return err
	case res == nil:
		return errors.New("no answer")
	case !res.Decoded:
		return fmt.Errorf("answered %d: %s", res.Status, excerpt(res.Body, 200))
	}
	return nil
}

func excerpt(b []byte, n int) string {
	s := string(b)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
