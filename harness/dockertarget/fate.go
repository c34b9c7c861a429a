package dockertarget

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	dc "github.com/ory/dockertest/v3/docker"
)

// Fate is what the docker target itself saw of one sandbox: the DELETEs its
// control plane answered with success (from the control plane's own access
// log, whoever sent them: a subject, a drill, another client), and whether
// the sandbox's container is still in the engine. The suite uses it to tell a
// sandbox removed outside the control plane (a fault of the target or the
// machine) from one the subject or a drill deleted.
type Fate struct {
	// Deletes are the control plane's log lines of DELETEs of the sandbox it
	// answered with 2xx.
	Deletes []string
	// LogNames is how many lines of the control plane's log name the sandbox
	// (0: this control plane never saw it).
	LogNames int
	// ContainerGone: the engine has no container labelled with the sandbox id.
	ContainerGone bool
}

var accessDeleteRe = regexp.MustCompile(`"DELETE /(?:v1/)?sandboxes/([0-9a-fA-F-]{36}) HTTP/[0-9.]+" (\d{3})`)

// deletesIn returns the log's lines of DELETEs of id answered 2xx, and how
// many lines name id at all.
func deletesIn(log, id string) (deletes []string, names int) {
	id = strings.ToLower(id)
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(strings.ToLower(line), id) {
			continue
		}
		names++
		if m := accessDeleteRe.FindStringSubmatch(line); m != nil && strings.EqualFold(m[1], id) && m[2][0] == '2' {
			deletes = append(deletes, strings.TrimSpace(stripANSI(line)))
		}
	}
	return deletes, names
}

var ansiRe = regexp.MustCompile(`\x1b\[[0-9;]*m`)

func stripANSI(s string) string { return ansiRe.ReplaceAllString(s, "") }

// SandboxFate reads the control plane's log and asks the engine about one
// sandbox (Fate). An error means neither could be read.
func (t *Target) SandboxFate(ctx context.Context, sandboxID string) (Fate, error) {
	var f Fate
	if t.pool == nil || t.serverLog == "" {
		return f, errors.New("no engine connection or control-plane log")
	}
	f.Deletes, f.LogNames = deletesIn(readFile(t.serverLog), sandboxID)
	list, err := t.pool.Client.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {labelSandboxID + "=" + sandboxID}}})
	if err != nil {
		return f, fmt.Errorf("asking the engine about sandbox %s: %w", sandboxID, err)
	}
	f.ContainerGone = len(list) == 0
	return f, nil
}
