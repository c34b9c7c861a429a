package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStoreConcurrentSeqAndJSONL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "audit.jsonl")
	s, err := NewStore(path, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				sb := "a"
				if i%2 == 0 {
					sb = "b"
				}
				s.Record(wire.Event{SandboxID: sb, Kind: wire.KindCommand, Command: &wire.Command{ID: "x"}})
			}
		}(i)
	}
	wg.Wait()
	require.NoError(t, s.Close())

	all := s.Events(Query{})
	require.Len(t, all, 1000)
	for i, ev := range all {
		assert.Equal(t, int64(i+1), ev.Seq)
		assert.False(t, ev.Time.IsZero())
	}
	assert.Len(t, s.Events(Query{SandboxID: "a"}), 500)
	assert.Len(t, s.Events(Query{Kind: wire.KindState}), 0)
	assert.Len(t, s.Events(Query{Since: 990}), 10)

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := int64(0)
	for sc.Scan() {
		var ev wire.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		n++
		assert.Equal(t, n, ev.Seq)
	}
	assert.Equal(t, int64(1000), n)
}

func TestStoreMemoryOnly(t *testing.T) {
	s, err := NewStore("", nil)
	require.NoError(t, err)
	s.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "x", Active: true}})
	assert.Equal(t, int64(1), s.LastSeq())
	require.NoError(t, s.Close())
}

func TestStoreContinuesSeqAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := NewStore(path, nil)
	require.NoError(t, err)
	s.Record(wire.Event{Kind: wire.KindState, State: &wire.State{To: "Running", Reason: "created"}})
	s.Record(wire.Event{Kind: wire.KindState, State: &wire.State{To: "Deleted", Reason: "deleted by API"}})
	require.NoError(t, s.Close())
	s2, err := NewStore(path, nil)
	require.NoError(t, err)
	s2.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "x"}})
	require.NoError(t, s2.Close())
	evs := s2.Events(Query{})
	require.Len(t, evs, 1)
	assert.Equal(t, int64(3), evs[0].Seq)
}

func TestStoreKeyQuery(t *testing.T) {
	s, err := NewStore("", nil)
	require.NoError(t, err)
	lc := func(key, method, path string, status int) *wire.Lifecycle {
		return &wire.Lifecycle{Method: method, Path: path, Status: status, KeyFingerprint: key}
	}
	s.Record(wire.Event{SandboxID: "a1", Kind: wire.KindLifecycle, Lifecycle: lc("ka", "POST", "/v1/sandboxes", 202)})      // 1
	s.Record(wire.Event{SandboxID: "b1", Kind: wire.KindLifecycle, Lifecycle: lc("kb", "POST", "/v1/sandboxes/", 202)})     // 2
	s.Record(wire.Event{SandboxID: "a1", Kind: wire.KindCommand, Command: &wire.Command{ID: "c1"}})                         // 3
	s.Record(wire.Event{SandboxID: "b1", Kind: wire.KindCommand, Command: &wire.Command{ID: "c2"}})                         // 4
	s.Record(wire.Event{Kind: wire.KindLifecycle, Lifecycle: lc("ka", "POST", "/v1/sandboxes", 429)})                       // 5: refused create
	s.Record(wire.Event{SandboxID: "a1", Kind: wire.KindLifecycle, Lifecycle: lc("kb", "DELETE", "/v1/sandboxes/a1", 204)}) // 6: another key on a1
	s.Record(wire.Event{SandboxID: "b1", Kind: wire.KindLifecycle, Lifecycle: lc("ka", "GET", "/v1/sandboxes/b1", 200)})    // 7: ka on b1
	s.Record(wire.Event{SandboxID: "a1", Kind: wire.KindLifecycle, Lifecycle: lc("ka", "POST", "/v1/sandboxes", 202)})      // 8: same id again
	s.Record(wire.Event{Kind: wire.KindLifecycle, Lifecycle: lc("", "POST", "/v1/sandboxes", 401)})                         // 9: keyless
	s.Record(wire.Event{SandboxID: "a2", Kind: wire.KindLifecycle, Lifecycle: lc("ka", "POST", "/sandboxes?x=1", 202)})     // 10
	s.Record(wire.Event{SandboxID: "a2", Kind: wire.KindState, State: &wire.State{To: "Deleted"}})                          // 11

	seqs := func(evs []wire.Event) []int64 {
		out := []int64{}
		for _, ev := range evs {
			out = append(out, ev.Seq)
		}
		return out
	}
	// ka's calls (1, 5, 7, 8, 10) and every event of a1 and a2, which ka created (3, 6, 11); each once, in order.
	assert.Equal(t, []int64{1, 3, 5, 6, 7, 8, 10, 11}, seqs(s.Events(Query{Key: "ka"})))
	assert.Equal(t, []int64{2, 4, 6, 7}, seqs(s.Events(Query{Key: "kb"}))) // 7: ka's call on b1, which kb created
	assert.Equal(t, []int64{3}, seqs(s.Events(Query{Key: "ka", Kind: wire.KindCommand})))
	assert.Equal(t, []int64{10, 11}, seqs(s.Events(Query{Key: "ka", Since: 8})))
	assert.Equal(t, []int64{1, 3, 6, 8}, seqs(s.Events(Query{Key: "ka", SandboxID: "a1"})))
	assert.Empty(t, s.Events(Query{Key: "nobody"}))
	// The same answers as a filter over the whole trail.
	assert.Equal(t, []int64{1, 3, 6, 8}, seqs(s.Events(Query{SandboxID: "a1"})))
	assert.Equal(t, []int64{9, 10, 11}, seqs(s.Events(Query{Since: 8})))
	assert.Equal(t, []int64{}, seqs(s.Events(Query{Since: 11})))
	evs, last := s.EventsAndLastSeq(Query{Key: "kb", Since: 4})
	assert.Equal(t, []int64{6, 7}, seqs(evs))
	assert.Equal(t, int64(11), last)
	assert.True(t, IsCreate(wire.Event{SandboxID: "x", Kind: wire.KindLifecycle, Lifecycle: lc("k", "POST", "/v1/sandboxes", 202)}))
	assert.False(t, IsCreate(wire.Event{Kind: wire.KindLifecycle, Lifecycle: lc("k", "POST", "/v1/sandboxes", 202)}))
	assert.False(t, IsCreate(wire.Event{SandboxID: "x", Kind: wire.KindLifecycle, Lifecycle: lc("k", "POST", "/v1/sandboxes/x/renew-expiration", 202)}))
}
