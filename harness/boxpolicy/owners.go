package boxpolicy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
)

// Owners are the key fingerprints of the submission's commands and,
// per sandbox, the fingerprint of the key that created it (it never changes:
// cached once known).
type Owners struct {
	mu      sync.Mutex
	keys    map[string]bool
	creator map[string]string
	// unknown: ids the server held no sandbox for, and when that was read
	// (briefly cached: a box asking for made-up ids in a loop must not turn
	// each request into two reads of the shared server).
	unknown map[string]time.Time
}

// unknownFor is how long "no such sandbox" is believed.
const unknownFor = 2 * time.Second

func (o *Owners) knownUnknown(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	at, ok := o.unknown[id]
	return ok && time.Since(at) < unknownFor
}

func (o *Owners) rememberUnknown(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.unknown == nil || len(o.unknown) > 1000 {
		o.unknown = map[string]time.Time{}
	}
	o.unknown[id] = time.Now()
}

// AddKey counts fp among the submission's keys (each confined command's).
func (o *Owners) AddKey(fp string) {
	if fp == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.keys == nil {
		o.keys = map[string]bool{}
	}
	o.keys[fp] = true
}

// mine says whether the creator fingerprint is one of the submission's keys.
func (o *Owners) mine(fp string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fp != "" && o.keys[fp]
}

func (o *Owners) cached(id string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fp, ok := o.creator[id]
	return fp, ok
}

func (o *Owners) remember(id, fp string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.creator == nil {
		o.creator = map[string]string{}
	}
	o.creator[id] = fp
}

// Owns says whether the sandbox id was created with a key of this
// submission, from the bundled server's audit (its create call's key
// fingerprint). A sandbox the server never created goes through (it answers
// 404); an audit that cannot be read is an error (the guard refuses).
func (o *Owners) Owns(ctx context.Context, client *osb.Client, id string) (bool, error) {
	if fp, ok := o.cached(id); ok {
		return o.mine(fp), nil
	}
	if o.knownUnknown(id) {
		return true, nil
	}
	creator := func() (string, bool, error) {
		log, err := command.AuditWitness{Client: client}.Query(ctx, osb.AuditQuery{SandboxID: id, Kind: "lifecycle"}, 10*time.Second)
		if err != nil {
			return "", false, err
		}
		for _, ev := range log.Events {
			if lc := ev.Lifecycle; lc != nil && ev.SandboxID == id && lc.Method == "POST" && command.IsCreatePath(lc.Path) && lc.Status == 202 {
				return lc.KeyFingerprint, true, nil
			}
		}
		return "", false, nil
	}
	fp, found, err := creator()
	if err != nil {
		return false, err
	}
	if found {
		o.remember(id, fp)
		return o.mine(fp), nil
	}
	// No create with any key: a sandbox the server holds all the same is
	// not the submission's; one it does not hold gets the server's own 404.
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := client.Admin().Sandboxes(c)
	if err != nil {
		return false, err
	}
	if !res.Decoded {
		return false, fmt.Errorf("/_mock/sandboxes answered %d", res.Status)
	}
	for _, sb := range res.Value.Sandboxes {
		if sb.ID != id {
			continue
		}
		// The server records a create once it has answered it: a sandbox
		// the command has just made may be held before its create is in the
		// audit. Read it once more.
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return false, ctx.Err()
		}
		if fp, found, err = creator(); err != nil {
			return false, err
		}
		if found {
			o.remember(id, fp)
			return o.mine(fp), nil
		}
		return false, nil
	}
	o.rememberUnknown(id)
	return true, nil
}
