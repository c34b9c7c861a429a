package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
	"github.com/osb-capstone/acceptance/steps"
)

// target is the server a run grades against.
type target struct {
	steps.Target
	MintAPIKey func() (string, error)
}

// startTarget starts the bundled server in-process (--target mock) or
// describes the real server at --target URL.
func startTarget(ctx context.Context, cfg *runConfig, st *stubs.Set, stderr io.Writer) (target, func(), error) {
	if cfg.target != "mock" {
		return target{Target: steps.Target{Kind: rubric.TargetReal, Domain: cfg.target, APIKey: cfg.apiKey}}, func() {}, nil
	}
	apiKey := "osb-" + randomHex(16)
	admin := "admin-" + randomHex(16)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("ACCEPTANCE_DEBUG") != "" {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	b, err := mockserver.StartBundled(ctx, mockserver.BundledConfig{
		APIKey:              apiKey,
		AdminToken:          admin,
		StateDir:            cfg.stateDir,
		Upstreams:           st.Upstreams(),
		InsecureNoIsolation: cfg.insecure,
		Logger:              logger,
	})
	if err != nil {
		return target{}, nil, fmt.Errorf("starting the bundled server: %w", err)
	}
	t := target{
		Target: steps.Target{Kind: rubric.TargetMock, Domain: b.Server.Domain(), APIKey: apiKey, AdminToken: admin},
		MintAPIKey: func() (string, error) {
			k := "osb-subject-" + randomHex(12)
			return k, b.Server.AddAPIKey(k)
		},
	}
	return t, func() { _ = b.Close() }, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
