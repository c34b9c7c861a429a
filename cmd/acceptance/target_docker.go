package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/dockertarget"
	"github.com/osb-capstone/acceptance/harness/injection"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
)

// startDockerTarget stands up a real OpenSandbox on Docker (--target docker;
// harness/dockertarget) and describes it as a URL target. Its components go
// into the report header (cfg.dockerVersions): each with its version or image
// id and its provenance label (official, from the engine, declares upstream
// commit X (not verified), stand-in); the note printed here is made from the images used.
//
// The data API stub and the exfiltration sink are offered to the sandboxes
// on the engine's bridge over plain http (dockertarget.BridgeServices), so
// the subjects get an http:// CAPSTONE_DATA_API_URL on this target, and a
// sandbox whose policy lets exfil.capstone.test through reaches the run's
// own sink (and nothing off the machine); the package index over https, as
// pypi.org and files.pythonhosted.org (dockertarget.TLSFront).
func startDockerTarget(ctx context.Context, cfg *runConfig, upstreams map[string]string, stderr io.Writer) (core.StartedTarget, error) {
	fmt.Fprintf(stderr, "docker target: standing up opensandbox-server==%s on %s\n", cfg.serverVersion, dockertarget.Endpoint())
	t, err := dockertarget.Start(ctx, dockertarget.Config{ServerVersion: cfg.serverVersion, Log: stderr,
		ExecdImage: cfg.execdImage, EgressImage: cfg.egressImage, SandboxImage: cfg.sandboxImage,
		Stubs: bridgeStubs(upstreams),
		// The stub package index (the run's, serving .cache/wheels) as
		// https://pypi.org and https://files.pythonhosted.org: the suite's
		// sandbox image carries no tabulate and trusts the stub CA, so an
		// install asks it, and D1's deny is met on the default image.
		TLSStubs: map[string]string{stubs.PyPIHost: upstreams[stubs.PyPIHost], stubs.FilesHost: upstreams[stubs.FilesHost]}})
	if err != nil {
		return core.StartedTarget{}, fmt.Errorf("docker target: %w", err)
	}
	fmt.Fprintf(stderr, "docker target: %s up (images %s, control plane venv %s, control plane start %s)\n", t.URL, t.ImageBuild.Round(1e6), t.Venv.Round(1e6), t.Startup.Round(1e6))
	for _, line := range dockerTargetNote(t) {
		fmt.Fprintln(stderr, "docker target: "+line)
	}
	if v := cfg.dockerVersions; v != nil {
		for k, val := range dockerVersionRows(t) {
			v[k] = val
		}
	}
	return core.StartedTarget{
		Target: core.Target{Kind: rubric.TargetReal, Domain: urlTargetDomain(t.URL), APIKey: t.APIKey, SidecarLog: t.FollowSidecarLog,
			DataAPIURL: dockerDataAPIURL(t), StubNote: t.StubNote, StubHosts: dockerStubHosts(t),
			WatchCreates: func(ctx context.Context, id, dir string) (injection.FileWatch, error) {
				w, err := t.WatchCreates(ctx, id, dir)
				if err != nil {
					return nil, err
				}
				return dockerFileWatch{w}, nil
			},
			SandboxFate: func(ctx context.Context, id string) (core.SandboxFate, error) {
				f, err := t.SandboxFate(ctx, id)
				return core.SandboxFate{Deletes: f.Deletes, LogNames: f.LogNames, ContainerGone: f.ContainerGone,
					Stopped: f.Stopped, StoppedAt: f.StoppedAt, EngineSaid: f.EngineSaid}, err
			}},
		Close: func() {
			if err := t.Close(); err != nil {
				fmt.Fprintf(stderr, "docker target: teardown: %v\n", err)
			}
		},
	}, nil
}

// dockerDataAPIURL is the data API's URL on the docker target: plain http on
// port 80 of the bridge, when the stubs are offered there ("" otherwise: the
// default https URL, which no sandbox there can reach).
func dockerDataAPIURL(t *dockertarget.Target) string {
	if t.Stubs == nil {
		return ""
	}
	return "http://" + stubs.DataAPIHost + stubs.DataAPIPath
}

// dockerFileWatch is a host-side watch of a sandbox's directory as the
// steps read it (core.FileWatch).
type dockerFileWatch struct{ w *dockertarget.FileWatch }

func (d dockerFileWatch) Started() time.Time  { return d.w.Armed }
func (d dockerFileWatch) DirArmed() time.Time { return d.w.DirArmed() }
func (d dockerFileWatch) Created() ([]injection.FileCreated, error) {
	got, err := d.w.Created()
	out := make([]injection.FileCreated, len(got))
	for i, c := range got {
		out[i] = injection.FileCreated{Path: c.Path, At: c.At, Present: c.Present}
	}
	return out, err
}

// bridgeStubs are the stubs the bridge offers the sandboxes, by name: the
// data API and the exfiltration sink (those the run started).
func bridgeStubs(upstreams map[string]string) map[string]string {
	out := map[string]string{}
	for _, h := range []string{stubs.DataAPIHost, stubs.ExfilHost} {
		if u := upstreams[h]; u != "" {
			out[h] = u
		}
	}
	return out
}

// dockerStubHosts are the stub names the bridge offers the sandboxes (the
// data API and the exfiltration sink), none when the bridge is not up.
func dockerStubHosts(t *dockertarget.Target) []string {
	if t.Stubs == nil {
		return nil
	}
	out := make([]string, 0, len(t.Stubs.Stubs))
	for name := range t.Stubs.Stubs {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// dockerTargetNote says, from the images actually used, what each verdict
// that touched a sandbox rests on.
func dockerTargetNote(t *dockertarget.Target) []string {
	var out []string
	for _, c := range t.Components {
		if !strings.Contains(c.Name, " image ") {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s (%s)", c.Name, c.Origin, c.Note))
	}
	if t.PairingKnown {
		out = append(out, fmt.Sprintf("opensandbox-server==%s names %s and %s", t.Version, t.Pairing.Execd, t.Pairing.Egress))
		if t.Pairing.Note != "" {
			out = append(out, "version table: "+t.Pairing.Note)
		}
	} else {
		out = append(out, "the version table does not know opensandbox-server=="+t.Version+": its execd and egress pairing is unknown")
	}
	if !t.Pin.Committed {
		out = append(out, "NOTICE: "+t.Pin.Describe())
	}
	return out
}

// dockerVersionRows are the report header's rows for the docker target.
func dockerVersionRows(t *dockertarget.Target) map[string]string {
	v := map[string]string{}
	for _, c := range t.Components {
		v["component: "+c.Name] = c.Version + " (" + c.Origin + ")"
	}
	v["server pin"] = t.Pin.Describe()
	if !t.Pin.Committed {
		v["server pin sha256"] = t.Pin.SHA256
	}
	if t.PairingKnown {
		pair := t.Pairing.Execd + ", " + t.Pairing.Egress
		if t.Pairing.Note != "" {
			pair += " (" + t.Pairing.Note + ")"
		}
		v["version table"] = "opensandbox-server==" + t.Version + " names " + pair
	} else {
		v["version table"] = "opensandbox-server==" + t.Version + " is not in the version table: its component pairing is unknown"
	}
	var notOfficial []string
	for _, c := range t.Components {
		if strings.Contains(c.Name, " image ") && c.Origin != dockertarget.OriginOfficial {
			notOfficial = append(notOfficial, strings.SplitN(c.Name, " ", 2)[0]+": "+c.Origin)
		}
	}
	if s := t.StandIns(); len(s) > 0 {
		v["stand-ins"] = "verdicts resting on these components (per entry: stand_ins) rest on images built from this project, not OpenSandbox's (" + strings.Join(s, ", ") + ")"
	}
	if len(notOfficial) > 0 {
		v["provenance"] = strings.Join(notOfficial, "; ")
	}
	return v
}
