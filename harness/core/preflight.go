package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/report"
)

// Preflight is the harness's own contract check of the target, run once
// before anything is graded (as Sonobuoy checks a cluster before a
// conformance run). It is reported in its own section and never scored: it
// says whether the server can be trusted to grade on. A failed preflight makes
// every bundle of the session incomplete (exit 3) with the reason.
//
// Over raw HTTP with the harness's client: create → 202 with id, state and
// createdAt; the execd endpoint for 44772 → 200 without a scheme, answering
// /ping; create without the key → 401 MISSING_API_KEY; delete → 204; GET → 404.
func Preflight(ctx context.Context, cl *osb.Client, runID string) *report.Preflight {
	p := &report.Preflight{Passed: true}
	check := func(name string, ok bool, format string, args ...any) bool {
		p.Checks = append(p.Checks, report.PreflightCheck{Name: name, Passed: ok, Detail: fmt.Sprintf(format, args...)})
		if !ok {
			p.Passed = false
			if p.Reason == "" {
				p.Reason = name + ": " + fmt.Sprintf(format, args...)
			}
		}
		return ok
	}
	c, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	timeout := 120
	req := osb.CreateSandboxRequest{
		Image:          &osb.ImageSpec{URI: "python:3.12"},
		Entrypoint:     []string{"tail", "-f", "/dev/null"},
		Timeout:        &timeout,
		ResourceLimits: map[string]string{"cpu": "1", "memory": "1Gi"},
		Metadata:       map[string]string{"capstone-run": runID, "capstone-purpose": "preflight"},
	}
	res, err := cl.CreateSandbox(c, req)
	if err != nil {
		check("create", false, "the target could not be reached: %v", err)
		return p
	}
	if !check("create", res.Status == 202 && res.Decoded && res.Value.ID != "" && res.Value.Status.State != "" && res.Value.CreatedAt != "",
		"%s → %s", res.RequestLine, res.StatusLine) {
		return p
	}
	id := res.Value.ID
	deleted := false
	defer func() {
		if !deleted {
			dc, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer dcancel()
			_, _ = cl.DeleteSandbox(dc, id)
		}
	}()
	ep, err := cl.GetEndpoint(c, id, osb.DefaultExecdPort, false)
	switch {
	case err != nil:
		check("endpoint", false, "%v", err)
	case !ep.Decoded:
		check("endpoint", false, "%s → %s", ep.RequestLine, ep.StatusLine)
	default:
		if check("endpoint", ep.Status == 200 && !strings.Contains(ep.Value.Endpoint, "://"),
			"%s → %s, endpoint %q", ep.RequestLine, ep.StatusLine, ep.Value.Endpoint) {
			check("execd ping", pingWithin(c, cl, ep.Value, 30*time.Second), "execd at the endpoint answered /ping within 30 s")
		}
	}
	body, _ := json.Marshal(req)
	un, err := cl.Do(c, osb.RawRequest{Method: "POST", Path: "/v1/sandboxes", Body: body, NoAPIKey: true})
	if err != nil {
		check("unauthorized", false, "%v", err)
	} else {
		code := ""
		if ae := un.APIError(); ae != nil {
			code = ae.Code
		}
		check("unauthorized", un.Status == 401 && code == "MISSING_API_KEY", "%s without the key → %s, code %q", un.RequestLine, un.StatusLine, code)
		if un.OK() {
			var sb osb.Sandbox
			if json.Unmarshal(un.Body, &sb) == nil && sb.ID != "" {
				_, _ = cl.DeleteSandbox(c, sb.ID)
			}
		}
	}
	del, err := cl.DeleteSandbox(c, id)
	if err != nil {
		check("delete", false, "%v", err)
		return p
	}
	deleted = check("delete", del.Status == 204, "%s → %s", del.RequestLine, del.StatusLine)
	get, err := cl.GetSandbox(c, id)
	if err != nil {
		check("get after delete", false, "%v", err)
		return p
	}
	check("get after delete", get.Status == 404, "%s → %s", get.RequestLine, get.StatusLine)
	return p
}

func pingWithin(ctx context.Context, cl *osb.Client, ep osb.Endpoint, d time.Duration) bool {
	ex, err := cl.Execd(ep)
	if err != nil {
		return false
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		pc, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := ex.Ping(pc)
		cancel()
		if err == nil && res.OK() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
	return false
}
