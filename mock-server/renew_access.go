package mockserver

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Renew on access (OpenSandbox 1.1.1's renew_intent, OSEP-0009, proxy path):
// with the server's renew_intent switched on (Config.RenewIntent.Enabled,
// serve-mock --renew-intent; off by default, as in the real server), every
// request through the server proxy (/sandboxes/{id}/proxy/{port}/...) of a
// sandbox created with extensions["access.renew.extend.seconds"] = N moves its
// expiresAt to max(now + N s, current expiresAt) — at most once per
// MinInterval per sandbox (min_interval_seconds, default 60). Only a Running
// sandbox with a TTL is renewed; a request carrying
// "OpenSandbox-Access-Renew: skip" renews nothing. Direct endpoint calls
// never renew (the real server only sees proxy traffic).

// RenewIntentConfig is the real server's [renew_intent] section (proxy path).
type RenewIntentConfig struct {
	// Enabled switches renew-on-access on (renew_intent.enabled; default false).
	Enabled bool
	// MinInterval is the per-sandbox cooldown between renewals
	// (renew_intent.min_interval_seconds); 0 means 60 s.
	MinInterval time.Duration
}

const (
	accessRenewExtensionKey = "access.renew.extend.seconds"
	accessRenewHeader       = "OpenSandbox-Access-Renew"
	defaultRenewMinInterval = 60 * time.Second
)

// accessRenewExtend is the extension's value (already validated by
// checkCreate), 0 when absent.
func accessRenewExtend(ext map[string]string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(ext[accessRenewExtensionKey]))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// renewOnAccess applies renew-on-access for one proxied request.
func (s *Server) renewOnAccess(r *http.Request, sb *sandbox) {
	if !s.cfg.RenewIntent.Enabled || sb.renewExtend <= 0 ||
		strings.EqualFold(strings.TrimSpace(r.Header.Get(accessRenewHeader)), "skip") {
		return
	}
	if st := s.statusOf(sb); st.State != "Running" {
		return
	}
	minInterval := s.cfg.RenewIntent.MinInterval
	if minInterval <= 0 {
		minInterval = defaultRenewMinInterval
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sandboxes[sb.id] != sb || sb.expiresAt == nil {
		return
	}
	now := s.clock.Now().UTC()
	if !sb.lastAccessRenew.IsZero() && now.Sub(sb.lastAccessRenew) < minInterval {
		return
	}
	next := now.Add(sb.renewExtend).Truncate(time.Microsecond)
	if !next.After(*sb.expiresAt) {
		next = *sb.expiresAt
	}
	sb.expiresAt = &next
	s.scheduleLocked(sb)
	sb.lastAccessRenew = now
	s.log.Info("renew on access", "id", sb.id, "expiresAt", formatTime(next))
}
