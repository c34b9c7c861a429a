package compare

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/report"
)

// The recording proxy's records in a subject run's evidence directory
// (harness/command: ProxyLifecycleFile and the endpoint calls).
const (
	proxyLifecycleFile = "proxy-lifecycle.json"
	endpointCallsFile  = "endpoint-calls.json"
)

// proxyCall is the part of an observe.Call the comparison reads.
type proxyCall struct {
	Time      time.Time `json:"time"`
	Ended     time.Time `json:"ended"`
	Kind      string    `json:"kind"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Status    int       `json:"status"`
	SandboxID string    `json:"sandbox_id"`
	State     string    `json:"state"`
	Shape     string    `json:"shape"`
	ErrorCode string    `json:"error_code"`
	Headers   []string  `json:"headers"`
}

// readProxyCalls reads one run's recorded exchanges (nil when none).
func readProxyCalls(runDir, name string) []proxyCall {
	b, err := os.ReadFile(filepath.Join(runDir, name))
	if err != nil {
		return nil
	}
	var calls []proxyCall
	if json.Unmarshal(b, &calls) != nil {
		return nil
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].Time.Before(calls[j].Time) })
	return calls
}

// Control-plane latency figures, across every sandbox of a bundle (the
// median of each run's sandboxes), as the upgrade check shows them first.
const (
	FigureCreateReady = "proxy/create_ready_ms"      // POST /sandboxes sent → the first answer saying Running
	FigureDelete      = "proxy/delete_ms"            // DELETE sent → answered 2xx
	FigureCommand     = "proxy/command_roundtrip_ms" // execd POST …/command sent → its stream ended (200)
)

// ProxyLatencies are the latencies the recording proxy saw in a bundle's
// subject runs: for each run and sandbox (in creation order)
// "<run>/sandboxN_create_ready_ms" and "<run>/sandboxN_delete_ms", each
// command's round trip "<run>/commandN_roundtrip_ms", and the medians over
// the whole bundle (FigureCreateReady, FigureDelete, FigureCommand).
func ProxyLatencies(dir string) map[string]float64 {
	out := map[string]float64{}
	var ready, del, cmd []float64
	runs, _ := filepath.Glob(filepath.Join(dir, report.EvidenceDir, "subject-*"))
	sort.Strings(runs)
	for _, rdir := range runs {
		key := strings.TrimPrefix(filepath.Base(rdir), "subject-")
		life := readProxyCalls(rdir, proxyLifecycleFile)
		var order []string
		created := map[string]time.Time{}
		readyAt := map[string]time.Time{}
		for _, c := range life {
			if c.Method == "POST" && isCreatePath(c.Path) && c.Status < 300 && c.SandboxID != "" {
				if _, ok := created[c.SandboxID]; !ok {
					created[c.SandboxID] = c.Time
					order = append(order, c.SandboxID)
				}
			}
			if c.SandboxID != "" && c.State == "Running" && c.Status < 300 && !c.Ended.IsZero() {
				if _, ok := readyAt[c.SandboxID]; !ok {
					readyAt[c.SandboxID] = c.Ended
				}
			}
		}
		deleted := map[string]float64{}
		for _, c := range life {
			if c.Method == "DELETE" && c.SandboxID != "" && c.Status < 300 && !c.Ended.IsZero() {
				if _, ok := deleted[c.SandboxID]; !ok {
					deleted[c.SandboxID] = ms(c.Ended.Sub(c.Time))
				}
			}
		}
		for i, id := range order {
			if r, ok := readyAt[id]; ok && !r.Before(created[id]) {
				v := ms(r.Sub(created[id]))
				out[fmt.Sprintf("%s/sandbox%d_create_ready_ms", key, i+1)] = v
				ready = append(ready, v)
			}
			if d, ok := deleted[id]; ok {
				out[fmt.Sprintf("%s/sandbox%d_delete_ms", key, i+1)] = d
				del = append(del, d)
			}
		}
		n := 0
		for _, c := range readProxyCalls(rdir, endpointCallsFile) {
			if c.Method == "POST" && strings.HasSuffix(strings.SplitN(c.Path, "?", 2)[0], "/command") && c.Status == 200 && !c.Ended.IsZero() {
				n++
				v := ms(c.Ended.Sub(c.Time))
				out[fmt.Sprintf("%s/command%d_roundtrip_ms", key, n)] = v
				cmd = append(cmd, v)
			}
		}
	}
	for name, xs := range map[string][]float64{FigureCreateReady: ready, FigureDelete: del, FigureCommand: cmd} {
		if len(xs) > 0 {
			out[name] = median(xs)
		}
	}
	return out
}

// ControlPlaneFigure: one of the bundle-wide proxy medians.
func ControlPlaneFigure(name string) bool {
	return name == FigureCreateReady || name == FigureDelete || name == FigureCommand
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []float64) float64 {
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func isCreatePath(p string) bool {
	p = strings.SplitN(p, "?", 2)[0]
	return strings.TrimSuffix(strings.TrimPrefix(p, "/v1"), "/") == "/sandboxes"
}
