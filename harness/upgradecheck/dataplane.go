package upgradecheck

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/compare"
)

// Images are one side's execd and egress images (--from-execd-image …):
// passed to that side's runs as --execd-image and --egress-image ("" =
// the image its server version names, as the run chooses it).
type Images struct {
	Execd, Egress string
}

// Run orders.
const (
	OrderABBA   = "abba"   // A B, B A, A B, … : a drift in load hits both sides alike
	OrderRandom = "random" // each round's pair in an order drawn from the seed
)

// planned is one run of the plan: a version and its round.
type planned struct {
	Version string
	Round   int
}

// Plan is the order of the runs: per round one run of each version, the
// pair ordered ABBA (odd rounds A then B, even rounds B then A) or, with
// OrderRandom, drawn from seed (the same seed gives the same order).
func Plan(from, to string, rounds int, order string, seed int64) []planned {
	var rng *rand.Rand
	if order == OrderRandom {
		rng = rand.New(rand.NewPCG(uint64(seed), 0x75706772616465)) // "upgrade"
	}
	var out []planned
	for i := 1; i <= rounds; i++ {
		first, second := from, to
		switch {
		case rng != nil:
			if rng.IntN(2) == 1 {
				first, second = to, from
			}
		case i%2 == 0:
			first, second = to, from
		}
		out = append(out, planned{first, i}, planned{second, i})
	}
	return out
}

// sequence names a plan's order for the report, e.g. "A B B A".
func sequence(p []planned, from string) string {
	var s []string
	for _, r := range p {
		if r.Version == from {
			s = append(s, "A")
		} else {
			s = append(s, "B")
		}
	}
	return strings.Join(s, " ")
}

// ImageUse is one data-plane image a side's runs used, as their reports
// name it: "<role> image <ref>" → "<id> (<provenance>)".
type ImageUse struct {
	Role       string `json:"role"`
	Ref        string `json:"ref"`
	ID         string `json:"id"`
	Provenance string `json:"provenance"`
}

func (u ImageUse) String() string {
	return fmt.Sprintf("%s %s (%s, %s)", u.Role, u.Ref, shortID(u.ID), u.Provenance)
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// DataPlane says which execd and egress each side ran with, and whether
// the check compared anything but the control planes.
type DataPlane struct {
	From, To []ImageUse `json:",omitempty"`
	// Shared lists the roles both sides ran with the same image (same id).
	Shared []string `json:",omitempty"`
	// ControlPlaneOnly: both sides ran the same execd and egress, so what
	// changes between the versions' data planes was not exercised.
	ControlPlaneOnly bool
	Note             string
}

// imagesOf reads a run's execd and egress images from its report's
// component rows.
func imagesOf(d report.Document) []ImageUse {
	var out []ImageUse
	for k, v := range d.Versions {
		name, ok := strings.CutPrefix(k, report.ComponentKeyPrefix)
		if !ok {
			continue
		}
		role, ref, ok := strings.Cut(name, " image ")
		if !ok || (role != "execd" && role != "egress") {
			continue
		}
		id, prov := v, ""
		if i := strings.Index(v, " ("); i >= 0 && strings.HasSuffix(v, ")") {
			id, prov = v[:i], v[i+2:len(v)-1]
		}
		out = append(out, ImageUse{Role: role, Ref: ref, ID: id, Provenance: prov})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Role < out[j].Role })
	return out
}

// judgeDataPlane compares the images the first completed run of each side
// used.
func judgeDataPlane(from, to report.Document, fromV, toV string) DataPlane {
	dp := DataPlane{From: imagesOf(from), To: imagesOf(to)}
	if len(dp.From) == 0 || len(dp.To) == 0 {
		dp.Note = "the runs' reports name no execd or egress image: which data plane each side ran is unknown"
		return dp
	}
	byRole := map[string]ImageUse{}
	for _, u := range dp.From {
		byRole[u.Role] = u
	}
	for _, u := range dp.To {
		if f, ok := byRole[u.Role]; ok && f.ID == u.ID {
			dp.Shared = append(dp.Shared, u.Role+" "+u.Ref+" ("+u.Provenance+")")
		}
	}
	if len(dp.Shared) == len(dp.To) {
		dp.ControlPlaneOnly = true
		dp.Note = fmt.Sprintf("**control plane only**: both sides ran the same execd and egress images (%s), so what changes between the data planes "+
			"opensandbox-server==%s and ==%s name is not exercised. Give each side its own with --from-execd-image/--from-egress-image and "+
			"--to-execd-image/--to-egress-image, or load the images the version table names into the engine",
			strings.Join(dp.Shared, "; "), fromV, toV)
		return dp
	}
	dp.Note = "each side with its own data plane"
	if len(dp.Shared) > 0 {
		dp.Note += " except " + strings.Join(dp.Shared, "; ") + ", which both sides shared"
	}
	return dp
}

// contractChanges: facts of the platform's answers that every run of one
// version shows and no run of the other (compare.ContractChanges).
func contractChanges(fromDirs, toDirs []string) []compare.ContractChange {
	read := func(dirs []string) []compare.Contract {
		var out []compare.Contract
		for _, d := range dirs {
			out = append(out, compare.ReadContract(d))
		}
		return out
	}
	return compare.ContractChanges(read(fromDirs), read(toDirs))
}

// withinVersionDrift: the entries whose evidence (noise left out) already
// differs between two runs of one version; their drift between the
// versions is variation, not an upgrade's doing.
func withinVersionDrift(dirs []string) map[string]bool {
	out := map[string]bool{}
	if len(dirs) < 2 {
		return out
	}
	c, err := compare.Compare(dirs[0], dirs[1], noiseFree)
	if err != nil {
		return out
	}
	for _, d := range c.Drift {
		out[string(d.ID)] = true
	}
	return out
}
