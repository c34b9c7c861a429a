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

var (
	overExecd  = []Component{ComponentExecd, ComponentSandboxImage}
	overEgress = []Component{ComponentExecd, ComponentEgress, ComponentSandboxImage}
	lifecycle  = []Component{}
)

// DependsOn says, per criterion, milestone and drill, which components its
// verdict rests on on a real target. An entry whose scenarios run commands or
// move files in a sandbox rests on execd and the sandbox image; one measured
// through the network policy or the vault rests on the egress sidecar too; one
// measured only through the lifecycle API (or on the host, or by a reviewer)
// rests on none. The control plane is always official and is not listed.
// TestDependsOnCoversCourse keeps this table complete.
var DependsOn = map[ID][]Component{
	// criteria
	Function:        overExecd,  // the subject's pipeline runs in the sandbox
	Accuracy:        overExecd,  // the numbers it claims were computed there
	Isolation:       overExecd,  // "its execd endpoint MUST no longer answer"
	Network:         overEgress, // policy in the create request, probes resolved by the sidecar
	Credential:      overEgress, // the vault lives in the egress sidecar
	Injection:       overEgress, // planted commands, exfiltration denied by egress
	Budget:          overExecd,  // per-command timeouts and output limits enforced by execd
	Observability:   overExecd,  // the steps record what execd reported
	Maintainability: lifecycle,  // README and test commands run on the host
	Cost:            lifecycle,  // reviewer judgment
	// milestones
	M0: lifecycle,  // raw HTTP create/endpoint/delete/401/404 on the control plane
	M1: overExecd,  // print(1+1) and a file round trip
	M2: overExecd,  // the analysis pipeline
	M3: overEgress, // default deny, vault, injection
	M4: overExecd,  // budgets, cleanup, step log
	M5: overExecd,  // the normal path and the drills, as they ran
	// drills
	D1: overEgress, // the package index denied by the egress layer
	D2: overExecd,  // the subject working in a sandbox that vanishes
	D3: lifecycle,  // 429 on create
	D4: overEgress, // injection and exfiltration denied by egress
	D5: overExecd,  // killed after its first command; residue by TTL/reap
}

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
