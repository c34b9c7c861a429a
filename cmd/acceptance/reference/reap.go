package reference

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// The D5 inspection (`acceptance reference reap`): list the sandboxes
// labelled capstone-run-id=$CAPSTONE_RUN_ID (the run that was killed), delete
// each, and confirm with GET that it answers 404. It never touches a sandbox
// without that label: with no run id it refuses to run.

// Reaped is what happened to one residual sandbox.
type Reaped struct {
	ID        string
	CreatedAt string
	ExpiresAt string
	Deleted   int // DELETE status
	Gone      bool
	Problem   string
}

// ReapMain runs the inspection. Exit 0: every residual sandbox of the run
// was removed (or there was none); 1: something could not be removed or
// listed; 2: usage (no run id, no server).
func ReapMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("acceptance reference reap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runID := fs.String("run-id", os.Getenv("CAPSTONE_RUN_ID"), "the run whose sandboxes to remove (default $CAPSTONE_RUN_ID)")
	domain := fs.String("domain", os.Getenv("OPEN_SANDBOX_DOMAIN"), "lifecycle server host:port (default $OPEN_SANDBOX_DOMAIN)")
	apiKey := fs.String("api-key", os.Getenv("OPEN_SANDBOX_API_KEY"), "API key (default $OPEN_SANDBOX_API_KEY)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *runID == "" {
		fmt.Fprintln(stderr, "acceptance reference reap: no run id (--run-id or $CAPSTONE_RUN_ID): refusing to guess which sandboxes are residue")
		return 2
	}
	if *domain == "" || *apiKey == "" {
		fmt.Fprintln(stderr, "acceptance reference reap: a domain ($OPEN_SANDBOX_DOMAIN) and an API key ($OPEN_SANDBOX_API_KEY) are required")
		return 2
	}
	cl, err := osb.New(*domain, *apiKey)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance reference reap: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reaped, err := Reap(ctx, cl, *runID)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance reference reap: %v\n", err)
		return 1
	}
	if len(reaped) == 0 {
		fmt.Fprintf(stdout, "no sandbox labelled %s=%s: nothing to remove\n", RunIDLabel, *runID)
		return 0
	}
	code := 0
	for _, r := range reaped {
		if r.Gone {
			fmt.Fprintf(stdout, "removed %s (created %s, expires %s): DELETE %d, GET 404\n", r.ID, r.CreatedAt, orDash(r.ExpiresAt), r.Deleted)
		} else {
			fmt.Fprintf(stdout, "NOT removed %s: %s\n", r.ID, r.Problem)
			code = 1
		}
	}
	return code
}

// Reap lists every sandbox of run runID (all pages) and removes each.
func Reap(ctx context.Context, cl *osb.Client, runID string) ([]Reaped, error) {
	var found []osb.Sandbox
	for page := 1; ; page++ {
		res, err := cl.ListSandboxes(ctx, osb.ListOptions{Metadata: map[string]string{RunIDLabel: runID}, Page: page, PageSize: 50})
		if err != nil {
			return nil, fmt.Errorf("listing sandboxes of run %s: %w", runID, err)
		}
		if !res.OK() {
			return nil, fmt.Errorf("listing sandboxes of run %s: %s", runID, res.StatusLine)
		}
		for _, s := range res.Value.Items {
			if s.Metadata[RunIDLabel] == runID { // the filter is the server's; check it anyway
				found = append(found, s)
			}
		}
		if !res.Value.Pagination.HasNextPage || page >= 100 {
			break
		}
	}
	out := make([]Reaped, 0, len(found))
	for _, s := range found {
		r := Reaped{ID: s.ID, CreatedAt: s.CreatedAt}
		if s.ExpiresAt != nil {
			r.ExpiresAt = *s.ExpiresAt
		}
		del, err := cl.DeleteSandbox(ctx, s.ID)
		if del != nil {
			r.Deleted = del.Status
		}
		switch {
		case err != nil && (del == nil || del.Status == 0):
			r.Problem = "DELETE: " + err.Error()
		case del.Status != http.StatusNoContent && del.Status != http.StatusNotFound:
			r.Problem = "DELETE answered " + del.StatusLine
		default:
			r.Gone, r.Problem = confirmGone(ctx, cl, s.ID)
		}
		out = append(out, r)
	}
	return out, nil
}

// confirmGone polls GET until it answers 404 (at most 10 s).
func confirmGone(ctx context.Context, cl *osb.Client, id string) (bool, string) {
	deadline := time.Now().Add(10 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		res, err := cl.GetSandbox(ctx, id)
		if res != nil && res.Status == http.StatusNotFound {
			return true, ""
		}
		if err != nil && (res == nil || res.Status == 0) {
			last = err.Error()
		} else if res != nil {
			last = res.StatusLine
		}
		select {
		case <-ctx.Done():
			return false, "gave up: " + ctx.Err().Error()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return false, "GET still answers " + last + " 10s after DELETE"
}
