package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
)

// startTarget starts the bundled server in-process (--target mock) or
// describes the real server at --target URL.
func startTarget(ctx context.Context, cfg *runConfig, upstreams map[string]string, stderr io.Writer) (core.StartedTarget, error) {
	if cfg.target == "docker" {
		return startDockerTarget(ctx, cfg, upstreams, stderr)
	}
	if cfg.target != "mock" {
		return core.StartedTarget{Target: core.Target{Kind: rubric.TargetReal, Domain: urlTargetDomain(cfg.target), APIKey: cfg.apiKey}}, nil
	}
	apiKey := "osb-" + randomHex(16)
	admin := "admin-" + randomHex(16)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("ACCEPTANCE_DEBUG") != "" {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	bc := mockserver.BundledConfig{
		APIKey:              apiKey,
		AdminToken:          admin,
		StateDir:            cfg.stateDir,
		Upstreams:           upstreams,
		InsecureNoIsolation: cfg.insecure,
		Logger:              logger,
		// named volumes under this grade's own state dir, per submission
		// (tenant), quota'd, nosuid,nodev, removed when its grading ends
		PrivateVolumes: true,
	}
	bc.ExecdAccessToken = execdTokenMode(cfg)
	if benchUnbounded != nil {
		benchUnbounded.server(&bc)
	}
	b, err := mockserver.StartBundled(ctx, bc)
	if err != nil {
		return core.StartedTarget{}, fmt.Errorf("starting the bundled server: %w", err)
	}
	return core.StartedTarget{
		Target: core.Target{Kind: rubric.TargetMock, Domain: b.Server.Domain(), APIKey: apiKey, AdminToken: admin},
		MintAPIKey: func(tenant string) (string, error) {
			k := "osb-subject-" + randomHex(12)
			if tenant == "" {
				return k, b.Server.AddAPIKey(k)
			}
			return k, b.Server.AddAPIKeyTenant(k, tenant)
		},
		Close: func() { _ = b.Close() },
	}, nil
}

// execdTokenMode is when the bundled server gives each sandbox's execd an
// access token of its own. Below level full the submissions' commands share
// the server's loopback (no network namespace, no forwarder): each
// sandbox's execd port is reachable by every process of the machine, so
// each execd gets one (docs/hostile.md, "Attack × confinement level"). At
// level full only a box's own sandboxes' ports reach it, and the server
// stays as 1.1.1 (no token) unless its sandboxes have no namespaces (auto).
func execdTokenMode(cfg *runConfig) mockserver.ExecdTokenMode {
	if level, _, err := confinementLevel(cfg); err == nil && level != confine.LevelFull {
		return mockserver.ExecdTokenOn
	}
	return mockserver.ExecdTokenAuto
}

// urlTargetDomain turns --target URL into the domain the steps and the
// subject's OPEN_SANDBOX_DOMAIN expect: host:port[/path], no scheme. An https
// URL keeps its scheme (a domain alone cannot say https; the harness's client
// understands it).
func urlTargetDomain(u string) string {
	d := strings.TrimRight(u, "/")
	if rest, ok := strings.CutPrefix(d, "http://"); ok {
		return rest
	}
	return d
}

// checkURLTarget makes sure a --target URL answers and accepts the API key
// before anything is graded: an unreachable server or a rejected key is the
// command line's mistake (exit 2), not the subject's failure.
func checkURLTarget(ctx context.Context, cfg *runConfig) error {
	if cfg.target == "mock" || cfg.target == "docker" {
		return nil
	}
	status, err := listSandboxes(ctx, cfg, cfg.apiKey)
	if err != nil {
		return err
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return fmt.Errorf("--target %s rejects the API key: GET /v1/sandboxes answered %d %s", cfg.target, status, http.StatusText(status))
	}
	return nil
}

// listSandboxes asks the --target URL for GET /v1/sandboxes?pageSize=1 with
// key ("" sends none) and returns the status it answered.
func listSandboxes(ctx context.Context, cfg *runConfig, key string) (int, error) {
	base := strings.TrimSuffix(strings.TrimRight(cfg.target, "/"), "/v1")
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/sandboxes?pageSize=1", nil)
	if err != nil {
		return 0, fmt.Errorf("--target %s: %v", cfg.target, err)
	}
	if key != "" {
		req.Header.Set("OPEN-SANDBOX-API-KEY", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("--target %s is not reachable: %v", cfg.target, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, nil
}

// refuseAuthOffTarget refuses to grade against a --target URL that checks
// no API key (a real server with no api_key, or serve-mock --no-auth): there
// every submission's calls look alike, so nothing could be attributed to the
// submission that made it, and one submission could list, read and delete
// another's sandboxes. It asks GET /v1/sandboxes with no key at all: a server
// that checks keys answers 401.
func refuseAuthOffTarget(ctx context.Context, cfg *runConfig) error {
	if cfg.target == "mock" || cfg.target == "docker" {
		return nil
	}
	status, err := listSandboxes(ctx, cfg, "")
	if err != nil {
		return err
	}
	if status/100 == 2 {
		return fmt.Errorf("--target %s checks no API key (GET /v1/sandboxes with none answered %d %s): submissions could not be told apart, and one could reach another's sandboxes; grade against a server with an api_key (or the bundled server: --target mock)", cfg.target, status, http.StatusText(status))
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
