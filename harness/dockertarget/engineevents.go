package dockertarget

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// readEvents asks the engine (its HTTP API at endpoint: unix:// or tcp://)
// for its container events carrying label (key=value) between since and
// until. The engine answers the past events it still holds and closes the
// stream at until.
func readEvents(ctx context.Context, endpoint, label string, since, until time.Time) ([]engineEvent, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("engine endpoint %q: %w", endpoint, err)
	}
	tr := &http.Transport{}
	base := ""
	switch u.Scheme {
	case "unix":
		sock := u.Path
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
		base = "http://engine"
	case "tcp", "http":
		base = "http://" + u.Host
	default:
		return nil, fmt.Errorf("engine endpoint %q: events are read over unix:// or tcp:// only", endpoint)
	}
	defer tr.CloseIdleConnections()
	filters, _ := json.Marshal(map[string][]string{"type": {"container"}, "label": {label}})
	q := url.Values{}
	q.Set("since", strconv.FormatInt(since.Add(-time.Second).Unix(), 10))
	q.Set("until", strconv.FormatInt(until.Add(time.Second).Unix(), 10))
	q.Set("filters", string(filters))
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(c, http.MethodGet, base+"/events?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the engine's /events answered %s", resp.Status)
	}
	return decodeEvents(resp.Body)
}

// decodeEvents reads the engine's event stream (one JSON object after
// another).
func decodeEvents(r io.Reader) ([]engineEvent, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var out []engineEvent
	for {
		var e struct {
			Action   string `json:"Action"`
			Status   string `json:"status"`
			TimeNano int64  `json:"timeNano"`
			Actor    struct {
				Attributes map[string]string `json:"Attributes"`
			} `json:"Actor"`
		}
		if err := dec.Decode(&e); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if len(out) > 0 {
				return out, nil // a stream cut short keeps what it gave
			}
			return nil, fmt.Errorf("reading the engine's events: %w", err)
		}
		action := e.Action
		if action == "" {
			action = e.Status
		}
		// "exec_start: sh -c …" and the like keep their verb only.
		if i := strings.IndexByte(action, ':'); i >= 0 {
			action = action[:i]
		}
		out = append(out, engineEvent{Time: time.Unix(0, e.TimeNano).UTC(), Action: action, Attrs: e.Actor.Attributes})
	}
}

// daemonStarted is when the engine's daemon started, for an engine whose
// unix socket sits next to its pid file (the project's own engine:
// .ci/docker-engine.sh keeps docker.sock and dockerd.pid in one directory)
// on this machine; false when that cannot be read.
func daemonStarted(endpoint string) (time.Time, bool) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "unix" {
		return time.Time{}, false
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(u.Path), "dockerd.pid"))
	if err != nil {
		return time.Time{}, false
	}
	return processStarted(strings.TrimSpace(string(b)))
}

// processStarted reads a process's start time from /proc (Linux; false
// elsewhere or when the process is gone).
func processStarted(pid string) (time.Time, bool) {
	if _, err := strconv.Atoi(pid); err != nil {
		return time.Time{}, false
	}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return time.Time{}, false
	}
	// The command name (field 2) may hold spaces: the fields after it
	// follow its closing parenthesis; starttime is field 22.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return time.Time{}, false
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	procStat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(procStat), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			const clkTck = 100 // USER_HZ, 100 on every Linux the suite runs on
			return time.Unix(boot, 0).Add(time.Duration(ticks) * time.Second / clkTck).UTC(), true
		}
	}
	return time.Time{}, false
}
