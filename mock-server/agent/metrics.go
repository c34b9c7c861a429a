package agent

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"
)

type metrics struct {
	CPUCount   int     `json:"cpu_count"`
	CPUUsedPct float64 `json:"cpu_used_pct"`
	MemTotal   float64 `json:"mem_total_mib"`
	MemUsed    float64 `json:"mem_used_mib"`
	Timestamp  int64   `json:"timestamp"`
}

// cpuTicks returns (busy, total) jiffies from /proc/stat.
func cpuTicks() (uint64, uint64) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0
	}
	fields := strings.Fields(sc.Text())
	var total, idle uint64
	for i, s := range fields[1:] {
		v, _ := strconv.ParseUint(s, 10, 64)
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return total - idle, total
}

// sandboxRSS sums the resident memory of every process this agent can see
// (inside the sandbox's PID namespace: exactly the sandbox).
func sandboxRSS() uint64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	page := uint64(os.Getpagesize())
	var sum uint64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/statm")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 1 {
			v, _ := strconv.ParseUint(f[1], 10, 64)
			sum += v * page
		}
	}
	return sum
}

func memTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				v, _ := strconv.ParseUint(f[1], 10, 64)
				return v * 1024
			}
		}
	}
	return 0
}

func (a *Agent) sample() metrics {
	b1, t1 := cpuTicks()
	time.Sleep(100 * time.Millisecond)
	b2, t2 := cpuTicks()
	pct := 0.0
	if t2 > t1 {
		pct = float64(b2-b1) / float64(t2-t1) * 100
	}
	total := memTotal()
	if a.cfg.MemoryLimitBytes > 0 && (total == 0 || uint64(a.cfg.MemoryLimitBytes) < total) {
		total = uint64(a.cfg.MemoryLimitBytes)
	}
	const mib = 1 << 20
	return metrics{CPUCount: goruntime.NumCPU(), CPUUsedPct: pct, MemTotal: float64(total) / mib,
		MemUsed: float64(sandboxRSS()) / mib, Timestamp: time.Now().UnixMilli()}
}

func (a *Agent) handleMetrics(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.sample())
}

// handleMetricsWatch sends one JSON object plus "\n" per second.
func (a *Agent) handleMetricsWatch(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		b, _ := json.Marshal(a.sample())
		if _, err := w.Write(append(b, '\n')); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}
