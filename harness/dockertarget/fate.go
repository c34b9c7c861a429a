package dockertarget

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"golang.org/x/sys/unix"
)

// Fate is what the docker target itself saw of one sandbox: the DELETEs its
// control plane answered with success (from the control plane's own access
// log, whoever sent them: a subject, a drill, another client), whether the
// sandbox's container is still in the engine, and whether (when, and why,
// in the engine's words) it stopped. The suite uses it to tell a sandbox the
// machine stopped (killed by a signal, OOM-killed, the engine restarting,
// removed outside the control plane) from one the subject or a drill
// deleted.
type Fate struct {
	// Deletes are the control plane's log lines of DELETEs of the sandbox it
	// answered with 2xx.
	Deletes []string
	// LogNames is how many lines of the control plane's log name the sandbox
	// (0: this control plane never saw it).
	LogNames int
	// ContainerGone: the engine has no container labelled with the sandbox id.
	ContainerGone bool
	// Stopped: a container of the sandbox is not running (or is gone and
	// the engine's events say it died), at StoppedAt (zero: the engine
	// cannot say when: a gone container whose events the engine no longer
	// has).
	Stopped   bool
	StoppedAt time.Time
	// EngineSaid is why, in the engine's terms: State.OOMKilled, the exit
	// code and its signal, State.Error, State.FinishedAt, its kill/oom/die/
	// destroy events, its own restart after the container started.
	EngineSaid string
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
// sandbox (Fate): each container labelled with it (inspect), the engine's
// events of it since the control plane started, and when the engine itself
// started. An error means neither could be read.
func (t *Target) SandboxFate(ctx context.Context, sandboxID string) (Fate, error) {
	if t.pool == nil || t.serverLog == "" {
		return Fate{}, errors.New("no engine connection or control-plane log")
	}
	return fateOf(ctx, liveEngine{pool: t.pool, endpoint: t.endpoint}, readFile(t.serverLog), sandboxID, t.started)
}

// containerState is what the engine's inspect says of one container.
type containerState struct {
	Name                  string
	Running               bool
	Status                string // created, running, exited, dead…
	OOMKilled             bool
	ExitCode              int
	Error                 string
	StartedAt, FinishedAt time.Time
}

// engineEvent is one of the engine's container events (kill, oom, die,
// destroy…) with its attributes (signal, exitCode, name).
type engineEvent struct {
	Time   time.Time
	Action string
	Attrs  map[string]string
}

// engineView is what SandboxFate asks the engine (a fake in the tests).
type engineView interface {
	// containers inspects every container labelled with the sandbox id.
	containers(ctx context.Context, sandboxID string) ([]containerState, error)
	// events are the engine's events of the sandbox's containers since
	// since, in time order (the engine keeps a bounded number, and none
	// from before its own restart).
	events(ctx context.Context, sandboxID string, since time.Time) ([]engineEvent, error)
	// started is when the engine's daemon started (false: unknown).
	started() (time.Time, bool)
}

// fateOf is SandboxFate on a control plane's log and an engine.
func fateOf(ctx context.Context, eng engineView, log, sandboxID string, since time.Time) (Fate, error) {
	var f Fate
	f.Deletes, f.LogNames = deletesIn(log, sandboxID)
	cs, err := eng.containers(ctx, sandboxID)
	if err != nil {
		return f, fmt.Errorf("asking the engine about sandbox %s: %w", sandboxID, err)
	}
	f.ContainerGone = len(cs) == 0
	evs, evErr := eng.events(ctx, sandboxID, since)
	engStart, engKnown := eng.started()
	var said []string
	for _, c := range cs {
		if c.Running {
			continue
		}
		f.Stopped = true
		if !c.FinishedAt.IsZero() && (f.StoppedAt.IsZero() || c.FinishedAt.Before(f.StoppedAt)) {
			f.StoppedAt = c.FinishedAt
		}
		said = append(said, describeState(c))
		if engKnown && !c.StartedAt.IsZero() && engStart.After(c.StartedAt) {
			said = append(said, fmt.Sprintf("the engine itself restarted at %s, after %s started at %s",
				stamp(engStart), c.Name, stamp(c.StartedAt)))
		}
	}
	if f.ContainerGone {
		for _, e := range evs {
			if e.Action == "die" && !f.Stopped {
				f.Stopped, f.StoppedAt = true, e.Time
			}
		}
		if engKnown && engStart.After(since) {
			said = append(said, fmt.Sprintf("the engine itself restarted at %s, after the control plane started at %s",
				stamp(engStart), stamp(since)))
		}
	}
	if ev := describeEvents(evs); ev != "" {
		said = append(said, "its events: "+ev)
	} else if f.ContainerGone && evErr != nil {
		said = append(said, "its events could not be read ("+evErr.Error()+")")
	} else if f.ContainerGone {
		said = append(said, fmt.Sprintf("it holds no container and no event of the sandbox since %s", stamp(since)))
	}
	f.EngineSaid = strings.Join(said, "; ")
	return f, nil
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// describeState names why an inspected container is not running, in the
// engine's fields.
func describeState(c containerState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "container %s is %s", c.Name, c.Status)
	switch {
	case c.OOMKilled:
		fmt.Fprintf(&b, ", OOM-killed (State.OOMKilled true, exit code %d)", c.ExitCode)
	case c.ExitCode > 128 && c.ExitCode < 128+65:
		fmt.Fprintf(&b, ", killed by %s (exit code %d)", signalName(c.ExitCode-128), c.ExitCode)
	default:
		fmt.Fprintf(&b, " (exit code %d)", c.ExitCode)
	}
	if c.Error != "" {
		fmt.Fprintf(&b, ", State.Error %q", clipText(c.Error, 200))
	}
	if !c.FinishedAt.IsZero() {
		fmt.Fprintf(&b, ", finished at %s", stamp(c.FinishedAt))
	}
	return b.String()
}

// describeEvents lists the events that say how a container ended (kill with
// its signal, oom, die with its exit code, destroy), at most 8.
func describeEvents(evs []engineEvent) string {
	var out []string
	for _, e := range evs {
		var s string
		switch e.Action {
		case "kill":
			s = "kill"
			if sig := e.Attrs["signal"]; sig != "" {
				if n, err := strconv.Atoi(sig); err == nil {
					sig = signalName(n)
				}
				s += " (" + sig + ")"
			}
		case "oom":
			s = "oom (the kernel's OOM killer)"
		case "die":
			s = "die"
			if code := e.Attrs["exitCode"]; code != "" {
				s += " (exit code " + code + ")"
			}
		case "destroy":
			s = "destroy"
		default:
			continue
		}
		if n := e.Attrs["name"]; n != "" {
			s += " of " + n
		}
		out = append(out, s+" at "+stamp(e.Time))
	}
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("and %d more", len(out)-8))
	}
	return strings.Join(out, ", ")
}

func signalName(n int) string {
	if name := unix.SignalName(syscall.Signal(n)); name != "" {
		return name
	}
	return "signal " + strconv.Itoa(n)
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// liveEngine is engineView on the engine the target runs on.
type liveEngine struct {
	pool     *dockertest.Pool
	endpoint string
}

func (e liveEngine) containers(ctx context.Context, id string) ([]containerState, error) {
	list, err := e.pool.Client.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {labelSandboxID + "=" + id}}})
	if err != nil {
		return nil, err
	}
	var out []containerState
	for _, c := range list {
		got, err := e.pool.Client.InspectContainerWithContext(c.ID, ctx)
		if err != nil {
			var nf *dc.NoSuchContainer
			if errors.As(err, &nf) {
				continue // removed meanwhile
			}
			return nil, err
		}
		st := got.State
		out = append(out, containerState{Name: strings.TrimPrefix(got.Name, "/"), Running: st.Running || st.Restarting || st.Paused,
			Status: st.Status, OOMKilled: st.OOMKilled, ExitCode: st.ExitCode, Error: st.Error,
			StartedAt: st.StartedAt, FinishedAt: st.FinishedAt})
	}
	return out, nil
}

func (e liveEngine) events(ctx context.Context, id string, since time.Time) ([]engineEvent, error) {
	return readEvents(ctx, e.endpoint, labelSandboxID+"="+id, since, time.Now())
}

func (e liveEngine) started() (time.Time, bool) { return daemonStarted(e.endpoint) }
