package dockertarget

import (
	"context"
	"errors"
	"fmt"
	"io"

	dc "github.com/ory/dockertest/v3/docker"
)

// SidecarContainer is the name OpenSandbox's control plane gives a sandbox's
// egress sidecar on Docker (server 1.1.1, services/docker/networking.py:
// sandbox-egress-<sandbox id>). Only a sandbox created with a networkPolicy
// has one.
func SidecarContainer(sandboxID string) string { return "sandbox-egress-" + sandboxID }

// FollowSidecarLog copies the log of a sandbox's egress sidecar (stdout and
// stderr, each line timestamped by the engine) into w from its start until
// the container stops (the sandbox is removed) or ctx ends. It is how the
// suite keeps what the real sidecar says about itself (policy changes,
// allowed lookups; it logs no denials, CONTRACT §3.4) as evidence: the
// container and its log are gone once the sandbox is deleted.
func (t *Target) FollowSidecarLog(ctx context.Context, sandboxID string, w io.Writer) error {
	if t.pool == nil {
		return errors.New("no engine connection")
	}
	name := SidecarContainer(sandboxID)
	if _, err := t.pool.Client.InspectContainer(name); err != nil {
		return fmt.Errorf("sandbox %s has no egress sidecar container %s: %w", sandboxID, name, err)
	}
	err := t.pool.Client.Logs(dc.LogsOptions{Context: ctx, Container: name, OutputStream: w, ErrorStream: w,
		Stdout: true, Stderr: true, Follow: true, Timestamps: true, InactivityTimeout: 0})
	if err != nil && ctx.Err() == nil {
		var nf *dc.NoSuchContainer
		if errors.As(err, &nf) {
			return nil // removed with its sandbox: the log up to then was copied
		}
		return fmt.Errorf("following the log of %s: %w", name, err)
	}
	return nil
}
