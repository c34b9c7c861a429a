package mockserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// streamSeq runs `seq 1 n` over the execd endpoint and checks that every line
// arrived, in order, before execution_complete. It returns the command id.
func streamSeq(base string, n int) (string, error) {
	b, _ := json.Marshal(map[string]any{"command": "seq 1 " + strconv.Itoa(n)})
	res, err := (&http.Client{Timeout: 30 * time.Minute}).Post(base+"/command", "application/json", bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d", res.StatusCode)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	next, id, complete := 1, "", false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev sseEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return id, fmt.Errorf("bad frame %q", line)
		}
		switch ev.Type {
		case "init":
			id = ev.Text
		case "stdout":
			if complete {
				return id, fmt.Errorf("stdout after execution_complete")
			}
			if ev.Text != strconv.Itoa(next) {
				return id, fmt.Errorf("line %d is %q", next, ev.Text)
			}
			next++
		case "error":
			return id, fmt.Errorf("error event %+v", ev.Error)
		case "execution_complete":
			complete = true
		}
	}
	if next-1 != n || !complete {
		return id, fmt.Errorf("%d of %d lines, complete=%v, read error %v", next-1, n, complete, sc.Err())
	}
	return id, nil
}

// seqBytes is the stdout byte count the audit must record for `seq 1 n`
// (execd strips the newline of each line).
func seqBytes(n int) int64 {
	var t int64
	for i := 1; i <= n; i++ {
		t += int64(len(strconv.Itoa(i)))
	}
	return t
}

// concurrentSeq runs c concurrent `seq 1 n` and returns how many streams were
// complete and the ids of the complete ones.
func concurrentSeq(base string, c, n int) (int, []string, []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var ids []string
	var errs []error
	for i := 0; i < c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := streamSeq(base, n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ids = append(ids, id)
		}()
	}
	wg.Wait()
	return len(ids), ids, errs
}

func soakSandbox(t *testing.T) (*Server, string, string) {
	srv, _ := realEnv(t)
	id, base := createSandbox(t, srv, map[string]any{
		"image": map[string]any{"uri": "python:3.11"}, "entrypoint": []string{"tail", "-f", "/dev/null"},
		"resourceLimits": map[string]string{"cpu": "2", "memory": "1Gi"}, "timeout": 3600})
	return srv, id, base
}

// TestOutputCompleteConcurrent: no output is lost under load. Concurrent
// commands through the audited endpoint deliver every line in order, and the audit records the
// true byte count. The full-size figures are TestOutputSoak's.
func TestOutputCompleteConcurrent(t *testing.T) {
	srv, id, base := soakSandbox(t)
	ok, ids, errs := concurrentSeq(base, 8, 10000)
	require.Empty(t, errs)
	require.Equal(t, 8, ok)
	want := seqBytes(10000)
	byID := map[string]*wire.Command{}
	for _, ev := range srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCommand}) {
		byID[ev.Command.ID] = ev.Command
	}
	for _, cid := range ids {
		c := byID[cid]
		require.NotNil(t, c, "command %s not audited", cid)
		require.Equal(t, want, c.StdoutBytes, "audited stdout bytes of %s", cid)
		require.NotNil(t, c.ExitCode)
		require.Equal(t, 0, *c.ExitCode)
	}
}

// TestOutputSoak is the "done when" measurement; it runs only with
// OSB_SOAK=1 (minutes of CPU): 20 repetitions of 20 concurrent commands x
// 10,000 lines, 50 runs of `seq 1 100000`, and 50 concurrent commands.
func TestOutputSoak(t *testing.T) {
	if os.Getenv("OSB_SOAK") != "1" {
		t.Skip("soak: set OSB_SOAK=1 to run it (several minutes of CPU)")
	}
	_, _, base := soakSandbox(t)
	fullReps := 0
	start := time.Now()
	for rep := 0; rep < 20; rep++ {
		rs := time.Now()
		ok, _, errs := concurrentSeq(base, 20, 10000)
		t.Logf("repetition %d: %d of 20 streams complete (%v)", rep+1, ok, time.Since(rs).Round(100*time.Millisecond))
		if ok == 20 {
			fullReps++
		} else {
			t.Errorf("repetition %d: %d of 20 streams complete; first error: %v", rep+1, ok, errs[0])
		}
	}
	t.Logf("20 concurrent x 10,000 lines: %d of 20 repetitions complete (%v)", fullReps, time.Since(start).Round(time.Second))
	start = time.Now()
	seqOK := 0
	for i := 0; i < 50; i++ {
		if _, err := streamSeq(base, 100000); err != nil {
			t.Errorf("seq 1 100000 run %d: %v", i+1, err)
		} else {
			seqOK++
		}
	}
	t.Logf("seq 1 100000: %d of 50 runs complete (%v)", seqOK, time.Since(start).Round(time.Second))
	start = time.Now()
	ok, _, errs := concurrentSeq(base, 50, 10000)
	if ok != 50 {
		t.Errorf("concurrency 50: %d of 50 complete; first error: %v", ok, errs[0])
	}
	t.Logf("50 concurrent x 10,000 lines: %d of 50 complete (%v)", ok, time.Since(start).Round(time.Second))
}
