package rubric

import "sort"

// Component is a part of a real target's stack, besides its control plane,
// that an entry's verdict can rest on. On the docker target each of them is
// either OpenSandbox's official image or a stand-in built from this project
// (harness/dockertarget); a verdict resting on a stand-in says so per entry.
type Component string

const (
	// ComponentExecd is the in-sandbox agent: commands, files, the 44772 endpoint.
	ComponentExecd Component = "execd"
	// ComponentEgress is the egress sidecar: network policy (DNS/nft) and the credential vault.
	ComponentEgress Component = "egress"
	// ComponentSandboxImage is the image the sandbox runs (python:3.12 as the suite asks it).
	ComponentSandboxImage Component = "sandbox"
)

// Components lists every component, in report order.
var Components = []Component{ComponentExecd, ComponentEgress, ComponentSandboxImage}

// The lists Course's entries rest on (Entry.DependsOn).
var (
	overExecd  = []Component{ComponentExecd, ComponentSandboxImage}
	overEgress = []Component{ComponentExecd, ComponentEgress, ComponentSandboxImage}
	lifecycle  = []Component{}
)

// DependsOn is every criterion's, milestone's and drill's Entry.DependsOn,
// keyed by ID (derived from Course). An entry whose scenarios run commands or
// move files in a sandbox rests on execd and the sandbox image; one measured
// through the network policy or the vault rests on the egress sidecar too; one
// measured only through the lifecycle API (or on the host, or by a reviewer)
// rests on none. The control plane is always official and is not listed.
// TestDependsOnCoversCourse keeps every entry's list set.
var DependsOn = Course.dependsOn()

// RestsOn returns the components among standIns that entry id's verdict rests
// on, in Components order (nil when none).
func RestsOn(id ID, standIns []Component) []Component {
	if len(standIns) == 0 {
		return nil
	}
	in := map[Component]bool{}
	for _, c := range standIns {
		in[c] = true
	}
	var out []Component
	for _, c := range DependsOn[id] {
		if in[c] {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return componentOrder(out[i]) < componentOrder(out[j]) })
	return out
}

func componentOrder(c Component) int {
	for i, k := range Components {
		if k == c {
			return i
		}
	}
	return len(Components)
}

func (r *Registry) dependsOn() map[ID][]Component {
	out := map[ID][]Component{}
	for _, e := range r.All() {
		if e.DependsOn != nil {
			out[e.ID] = e.DependsOn
		}
	}
	return out
}

func (r *Registry) failOnlyOnViolation() []ID {
	var out []ID
	for _, e := range r.All() {
		if e.FailOnlyOnViolation {
			out = append(out, e.ID)
		}
	}
	return out
}
