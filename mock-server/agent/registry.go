package agent

import (
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"strings"
	"sync"
	"time"
)

const (
	maxLogBytes     = 32 << 20 // per command; later lines are dropped and counted
	maxKeptCommands = 2000     // finished commands kept for status/logs
	interruptGrace  = 3 * time.Second
	// After a command exits its pipes are drained (see pumpOutput): to EOF,
	// or until empty for outputDrainIdle, or for at most outputDrainCap bytes
	// (a background grandchild that keeps writing).
	outputDrainIdle = 100 * time.Millisecond
	outputDrainCap  = 16 << 20
)

// command is one /command execution (foreground or background).
type command struct {
	id         string
	content    string
	background bool
	started    time.Time

	mu          sync.Mutex
	cmd         *exec.Cmd
	running     bool
	finished    time.Time
	exitCode    *int
	errMsg      string
	lines       []string
	logBytes    int
	dropped     int
	interrupted bool
	done        chan struct{}
}

func (c *command) appendLine(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logBytes+len(s)+1 > maxLogBytes {
		c.dropped++
		return
	}
	c.logBytes += len(s) + 1
	c.lines = append(c.lines, s)
}

// logsFrom returns lines[cursor:] and the new cursor (total lines).
func (c *command) logsFrom(cursor int) (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cursor > len(c.lines) {
		cursor = len(c.lines)
	}
	var b strings.Builder
	for _, l := range c.lines[cursor:] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), len(c.lines)
}

type registry struct {
	mu    sync.Mutex
	byID  map[string]*command
	order []string
}

func newRegistry() *registry { return &registry{byID: map[string]*command{}} }

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (r *registry) add(c *command) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID[c.id] = c
	r.order = append(r.order, c.id)
	if len(r.order) > maxKeptCommands {
		// Drop the oldest finished commands.
		kept := r.order[:0]
		excess := len(r.order) - maxKeptCommands
		for _, id := range r.order {
			cc := r.byID[id]
			cc.mu.Lock()
			fin := !cc.running && !cc.finished.IsZero()
			cc.mu.Unlock()
			if excess > 0 && fin {
				delete(r.byID, id)
				excess--
				continue
			}
			kept = append(kept, id)
		}
		r.order = kept
	}
}

func (r *registry) get(id string) *command {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}
