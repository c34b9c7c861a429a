package fidelity

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// splitOrigin splits a component's "<version or id> (<provenance label>)"
// (official, from the engine, declares upstream commit X (not verified),
// stand-in; records before 2026-12-02: upstream-built from commit X); a
// value without a label is official (records made before the labels).
func splitOrigin(v string) (string, string) {
	v = strings.TrimSpace(v)
	if i := strings.Index(v, " ("); i >= 0 && strings.HasSuffix(v, ")") {
		return v[:i], v[i+2 : len(v)-1]
	}
	return v, "official"
}

// NamedRun is a recorded run with the column title it gets.
type NamedRun struct {
	Title string
	Run   Run
}

// RenderComparison is the side-by-side of several recorded runs of the same
// subject (the bundled server, the docker target with stand-ins, with
// upstream-built components): each run's components and provenance, then
// every entry's verdict per run, with the entries that differ marked.
func RenderComparison(runs []NamedRun) string {
	if len(runs) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Bundled server, stand-ins and upstream-built components side by side\n\n")
	b.WriteString("The same subject on each target (recorded with `acceptance fidelity --record-mock`, `--record-docker`, " +
		"`--record-docker-upstream`). Provenance labels: official, from the engine, declares upstream commit X (not verified), stand-in; records before 2026-12-02 say upstream-built from commit X " +
		"([docs/docker.md](../../docs/docker.md)).\n\n")
	b.WriteString("| | " + titles(runs) + " |\n|---" + strings.Repeat("|---", len(runs)) + "|\n")
	row := func(name string, f func(Run) string) {
		cells := make([]string, len(runs))
		for i, r := range runs {
			cells[i] = cell(f(r.Run))
		}
		fmt.Fprintf(&b, "| %s | %s |\n", name, strings.Join(cells, " | "))
	}
	row("date", func(r Run) string { return r.Date.UTC().Format("2006-01-02 15:04 UTC") })
	row("server", func(r Run) string { return r.ServerVersion })
	row("tags", func(r Run) string { return orDash(code(r.Tags), r.Tags != "") })
	for _, role := range []string{"execd", "egress", "sandbox"} {
		row(role+" image", func(r Run) string {
			for n, v := range r.Components {
				if strings.HasPrefix(n, role+" image ") {
					id, origin := splitOrigin(v)
					return strings.TrimPrefix(n, role+" image ") + " `" + shortID(id) + "` (" + origin + ")"
				}
			}
			return "—"
		})
	}
	b.WriteString("\n| entry | " + titles(runs) + " | same? |\n|---" + strings.Repeat("|---", len(runs)) + "|---|\n")
	var ids []string
	kinds := map[string]string{}
	seen := map[string]bool{}
	for _, r := range runs {
		for _, e := range r.Run.Entries {
			if !seen[e.ID] {
				seen[e.ID] = true
				ids = append(ids, e.ID)
				kinds[e.ID] = e.Kind
			}
		}
	}
	differ := 0
	for _, id := range ids {
		cells := make([]string, len(runs))
		vs := map[string]bool{}
		for i, r := range runs {
			e, ok := index(r.Run)[id]
			cells[i] = verdict(e, ok)
			if ok {
				vs[e.Verdict] = true
			}
		}
		same := "yes"
		if len(vs) > 1 {
			same = "**no**"
			differ++
		}
		fmt.Fprintf(&b, "| %s %s | %s | %s |\n", kinds[id], code(id), strings.Join(cells, " | "), same)
	}
	fmt.Fprintf(&b, "\n%d of %d entries differ between these runs.\n", differ, len(ids))
	return b.String()
}

func titles(runs []NamedRun) string {
	t := make([]string, len(runs))
	for i, r := range runs {
		t[i] = r.Title
	}
	return strings.Join(t, " | ")
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Upgrade is an upgrade check's outcome, distilled from its
// upgrade-check.json (acceptance upgrade-check).
type Upgrade struct {
	Date         time.Time `json:"date"`
	From         string    `json:"from"`
	To           string    `json:"to"`
	Rounds       int       `json:"rounds"`
	Tags         string    `json:"tags,omitempty"`
	VerdictsFrom []string  `json:"verdicts_from"`
	VerdictsTo   []string  `json:"verdicts_to"`
	EntryChanges []string  `json:"entry_changes"`
	Drift        []string  `json:"drift"`
	Unstable     []string  `json:"unstable,omitempty"`
	Incomplete   []string  `json:"incomplete,omitempty"`
	TimingJudged bool      `json:"timing_judged"`
	TimingNote   string    `json:"timing_note,omitempty"`
	Figures      int       `json:"figures"`
	WithinNoise  int       `json:"within_noise"`
	Regressions  []string  `json:"regressions"`
	Improvements []string  `json:"improvements"`
	Exit         int       `json:"exit"`
	// Explanation is the ledger's account of every difference (written by
	// the person recording it: --explain).
	Explanation string `json:"explanation,omitempty"`
}

// UpgradeFromCheck reads DIR/upgrade-check.json.
func UpgradeFromCheck(dir, explanation string) (Upgrade, error) {
	b, err := os.ReadFile(filepath.Join(dir, "upgrade-check.json"))
	if err != nil {
		return Upgrade{}, err
	}
	var c struct {
		From, To     string
		Rounds       int
		Tags         string
		VerdictsFrom []string
		VerdictsTo   []string
		EntryChanges []struct{ ID, Old, New string }
		Drift        []struct{ ID string }
		Unstable     []string
		Incomplete   []string
		TimingJudged bool
		TimingNote   string
		Regressions  []string
		Exit         int
		Figures      []struct {
			Name           string  `json:"name"`
			Unit           string  `json:"unit"`
			FromMedian     float64 `json:"from_median"`
			ToMedian       float64 `json:"to_median"`
			Improvement    bool    `json:"improvement"`
			WithinTheNoise bool    `json:"within_the_noise"`
		}
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Upgrade{}, fmt.Errorf("%s/upgrade-check.json: %w", dir, err)
	}
	st, _ := os.Stat(filepath.Join(dir, "upgrade-check.json"))
	u := Upgrade{From: c.From, To: c.To, Rounds: c.Rounds, Tags: c.Tags, VerdictsFrom: c.VerdictsFrom, VerdictsTo: c.VerdictsTo,
		Unstable: c.Unstable, Incomplete: c.Incomplete, TimingJudged: c.TimingJudged, TimingNote: c.TimingNote,
		Figures: len(c.Figures), Regressions: c.Regressions, Exit: c.Exit, Explanation: explanation, EntryChanges: []string{}, Drift: []string{}}
	if st != nil {
		u.Date = st.ModTime().UTC()
	}
	for _, e := range c.EntryChanges {
		u.EntryChanges = append(u.EntryChanges, e.ID+": "+e.Old+" → "+e.New)
	}
	for _, d := range c.Drift {
		u.Drift = append(u.Drift, d.ID)
	}
	for _, f := range c.Figures {
		if f.WithinTheNoise {
			u.WithinNoise++
		}
		if f.Improvement {
			u.Improvements = append(u.Improvements, fmt.Sprintf("%s %.0f → %.0f %s", f.Name, f.FromMedian, f.ToMedian, f.Unit))
		}
	}
	sort.Strings(u.Improvements)
	if u.Regressions == nil {
		u.Regressions = []string{}
	}
	return u, nil
}

// SaveUpgrade / LoadUpgrade keep runs/upgrade.json.
func SaveUpgrade(dir string, u Upgrade) error {
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "runs", "upgrade.json"), append(b, '\n'), 0o644)
}

func LoadUpgrade(dir string) (Upgrade, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "runs", "upgrade.json"))
	if os.IsNotExist(err) {
		return Upgrade{}, false, nil
	}
	if err != nil {
		return Upgrade{}, false, err
	}
	var u Upgrade
	if err := json.Unmarshal(b, &u); err != nil {
		return Upgrade{}, false, fmt.Errorf("runs/upgrade.json: %w", err)
	}
	return u, true, nil
}

// RenderUpgrade is the ledger's upgrade-check section.
func RenderUpgrade(u Upgrade) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Upgrade check: opensandbox-server %s → %s\n\n", u.From, u.To)
	fmt.Fprintf(&b, "`acceptance upgrade-check --from %s --to %s --rounds %d", u.From, u.To, u.Rounds)
	if u.Tags != "" {
		fmt.Fprintf(&b, " --tags '%s'", u.Tags)
	}
	fmt.Fprintf(&b, "` (%s; runs interleaved; exit %d).\n\n", u.Date.Format("2006-01-02 15:04 UTC"), u.Exit)
	fmt.Fprintf(&b, "- verdicts: %s on %s; %s on %s\n", strings.Join(u.VerdictsFrom, ", "), u.From, strings.Join(u.VerdictsTo, ", "), u.To)
	list := func(name string, xs []string, none string) {
		if len(xs) == 0 {
			fmt.Fprintf(&b, "- %s: %s\n", name, none)
			return
		}
		fmt.Fprintf(&b, "- %s: %s\n", name, cell(strings.Join(xs, "; ")))
	}
	list("entries that changed verdict", u.EntryChanges, "none")
	list("evidence drift", u.Drift, "none")
	list("unstable within a version", u.Unstable, "none")
	list("incomplete runs", u.Incomplete, "none")
	if u.TimingJudged {
		fmt.Fprintf(&b, "- latency: %d figures compared by median against the spread within each version; %d within the noise\n", u.Figures, u.WithinNoise)
	} else {
		fmt.Fprintf(&b, "- latency: %s\n", u.TimingNote)
	}
	list("regressions", u.Regressions, "none")
	list("improvements beyond the spread", u.Improvements, "none")
	if u.Explanation != "" {
		b.WriteString("\n" + u.Explanation + "\n")
	}
	return b.String()
}
