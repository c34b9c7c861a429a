package agent

import (
	"crypto/rand"
	"encoding/hex"
	"os/exec"
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
	output      []byte // background commands only
	dropped     int
	interrupted bool
	done        chan struct{}
}

// appendOutput keeps a background command's raw combined output (what real
// execd writes to its log file), up to maxLogBytes; later bytes are dropped
// and counted.
func (c *command) appendOutput(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := maxLogBytes - len(c.output)
	if room < len(p) {
		c.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	c.output = append(c.output, p...)
}

// logsFrom returns the output from byte offset cursor and the offset after
// it; a cursor past the end gets nothing and is returned unchanged (as real
// execd's seek + read).
func (c *command) logsFrom(cursor int64) ([]byte, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cursor >= int64(len(c.output)) {
		return nil, cursor
	}
	return append([]byte(nil), c.output[cursor:]...), int64(len(c.output))
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
