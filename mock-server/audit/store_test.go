package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

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
				s.Record(Event{SandboxID: sb, Kind: KindCommand, Command: &Command{ID: "x"}})
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
	assert.Len(t, s.Events(Query{Kind: KindState}), 0)
	assert.Len(t, s.Events(Query{Since: 990}), 10)

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := int64(0)
	for sc.Scan() {
		var ev Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		n++
		assert.Equal(t, n, ev.Seq)
	}
	assert.Equal(t, int64(1000), n)
}

func TestStoreMemoryOnly(t *testing.T) {
	s, err := NewStore("", nil)
	require.NoError(t, err)
	s.Record(Event{Kind: KindFault, Fault: &Fault{Name: "x", Active: true}})
	assert.Equal(t, int64(1), s.LastSeq())
	require.NoError(t, s.Close())
}

func TestStoreContinuesSeqAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := NewStore(path, nil)
	require.NoError(t, err)
	s.Record(Event{Kind: KindState, State: &State{To: "Running", Reason: "created"}})
	s.Record(Event{Kind: KindState, State: &State{To: "Deleted", Reason: "deleted by API"}})
	require.NoError(t, s.Close())
	s2, err := NewStore(path, nil)
	require.NoError(t, err)
	s2.Record(Event{Kind: KindFault, Fault: &Fault{Name: "x"}})
	require.NoError(t, s2.Close())
	evs := s2.Events(Query{})
	require.Len(t, evs, 1)
	assert.Equal(t, int64(3), evs[0].Seq)
}
