package recompute

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Lookup errors. Each is wrapped with details; test with errors.Is.
var (
	ErrUnknownMetric = errors.New("not a metric of the naming convention")
	ErrAmbiguous     = errors.New("metric name matches more than one column or value")
	ErrNotNumeric    = errors.New("column is not numeric")
	ErrNoValues      = errors.New("no values to aggregate")
	ErrNotGroupable  = errors.New("column has too many distinct values to be a grouping column")
)

var simpleAggs = []string{"missing", "count", "sum", "mean", "min", "max", "std"}
var groupAggs = []string{"count", "sum", "mean", "min", "max"}

// Lookup returns the recomputed value of a metric named by the convention
// in the package doc.
func (s *Stats) Lookup(name string) (float64, error) {
	n := Normalize(name)
	switch n {
	case "rows":
		return float64(s.Rows), nil
	case "columns":
		return float64(len(s.Columns)), nil
	case "missing_total":
		return float64(s.MissingTotal()), nil
	}
	type hit struct {
		v   float64
		err error
		how string
	}
	var hits []hit
	// rows_by_<cat>_<value>
	if rest, ok := strings.CutPrefix(n, "rows_by_"); ok {
		for _, g := range s.groupings() {
			if val, ok := strings.CutPrefix(rest, g.key+"_"); ok {
				grp, err := g.find(val)
				if err != nil {
					hits = append(hits, hit{err: err, how: g.key})
					continue
				}
				hits = append(hits, hit{v: float64(grp.Rows), how: g.key + "=" + grp.Value})
			}
		}
	}
	for _, agg := range simpleAggs {
		rest, ok := strings.CutPrefix(n, agg+"_")
		if !ok {
			continue
		}
		for _, c := range s.Columns {
			nc := Normalize(c.Name)
			if rest == nc {
				v, err := columnAgg(c, agg)
				hits = append(hits, hit{v: v, err: err, how: c.Name})
				continue
			}
			after, ok := strings.CutPrefix(rest, nc+"_by_")
			if !ok || !contains(groupAggs, agg) {
				continue
			}
			for _, g := range s.groupings() {
				val, ok := strings.CutPrefix(after, g.key+"_")
				if !ok {
					continue
				}
				grp, err := g.find(val)
				if err != nil {
					hits = append(hits, hit{err: err, how: c.Name + " by " + g.key})
					continue
				}
				v, err := groupAgg(c, grp, agg)
				hits = append(hits, hit{v: v, err: err, how: c.Name + " by " + g.key + "=" + grp.Value})
			}
		}
	}
	// Prefer successful resolutions; several distinct ones are ambiguous.
	var ok []hit
	for _, h := range hits {
		if h.err == nil {
			ok = append(ok, h)
		}
	}
	switch {
	case len(ok) == 1:
		return ok[0].v, nil
	case len(ok) > 1:
		hows := make([]string, len(ok))
		for i, h := range ok {
			hows[i] = h.how
		}
		return math.NaN(), fmt.Errorf("%q: %w (%s)", name, ErrAmbiguous, strings.Join(hows, "; "))
	case len(hits) > 0:
		return math.NaN(), fmt.Errorf("%q: %w", name, hits[0].err)
	}
	return math.NaN(), fmt.Errorf("%q: %w (columns: %s)", name, ErrUnknownMetric, strings.Join(s.Header, ", "))
}

func columnAgg(c *Column, agg string) (float64, error) {
	switch agg {
	case "missing":
		return float64(c.Missing), nil
	case "count":
		return float64(c.Count), nil
	}
	if !c.IsNumeric() {
		if c.Count == 0 {
			return math.NaN(), fmt.Errorf("column %q: %w (all cells missing)", c.Name, ErrNoValues)
		}
		return math.NaN(), fmt.Errorf("column %q: %w (%d of %d values are not numbers, e.g. %q)",
			c.Name, ErrNotNumeric, c.Count-c.NumericCount, c.Count, c.NonNumericExample)
	}
	switch agg {
	case "sum":
		return c.Sum, nil
	case "mean":
		return c.Mean(), nil
	case "min":
		return c.Min, nil
	case "max":
		return c.Max, nil
	case "std":
		if c.NumericCount < 2 {
			return math.NaN(), fmt.Errorf("column %q: %w (std needs 2 values)", c.Name, ErrNoValues)
		}
		return c.Std, nil
	}
	return math.NaN(), ErrUnknownMetric
}

func groupAgg(c *Column, g *Group, agg string) (float64, error) {
	if !c.IsNumeric() && agg != "count" {
		return math.NaN(), fmt.Errorf("column %q: %w", c.Name, ErrNotNumeric)
	}
	j := c.Index
	if agg == "count" {
		return float64(g.Count[j]), nil
	}
	if g.Count[j] == 0 {
		return math.NaN(), fmt.Errorf("column %q in group %q: %w", c.Name, g.Value, ErrNoValues)
	}
	switch agg {
	case "sum":
		return g.Sum[j], nil
	case "mean":
		return g.Sum[j] / float64(g.Count[j]), nil
	case "min":
		return g.Min[j], nil
	case "max":
		return g.Max[j], nil
	}
	return math.NaN(), ErrUnknownMetric
}

type grouping struct {
	key    string // normalised grouping name: column, or column + "_month"
	col    *Column
	groups map[string]*Group
	cap    int
}

func (g grouping) find(normVal string) (*Group, error) {
	if g.groups == nil {
		return nil, fmt.Errorf("grouping %q: %w (more than %d distinct values)", g.col.Name, ErrNotGroupable, g.cap)
	}
	var found *Group
	for v, grp := range g.groups {
		if Normalize(v) == normVal {
			if found != nil {
				return nil, fmt.Errorf("grouping %q value %q: %w", g.col.Name, normVal, ErrAmbiguous)
			}
			found = grp
		}
	}
	if found == nil {
		return nil, fmt.Errorf("grouping %q has no value %q (values: %s): %w", g.key, normVal, strings.Join(g.values(), ", "), ErrUnknownMetric)
	}
	return found, nil
}

func (g grouping) values() []string {
	var out []string
	for v := range g.groups {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// groupings lists every grouping column, including the derived <date>_month.
func (s *Stats) groupings() []grouping {
	var out []grouping
	for _, c := range s.Columns {
		out = append(out, grouping{key: Normalize(c.Name), col: c, groups: c.Groups, cap: s.GroupCap})
		if c.Months != nil {
			out = append(out, grouping{key: Normalize(c.Name) + "_month", col: c, groups: c.Months, cap: s.GroupCap})
		}
	}
	return out
}

// GroupValues returns the sorted values of a grouping (a column name or
// "<date column>_month"), or nil when it is not a grouping.
func (s *Stats) GroupValues(grouping string) []string {
	want := Normalize(grouping)
	for _, g := range s.groupings() {
		if g.key == want && g.groups != nil {
			return g.values()
		}
	}
	return nil
}

// Metrics returns every metric of the convention that can be computed for
// this file (useful for a reference pipeline's self-check and for reports).
func (s *Stats) Metrics() map[string]float64 {
	m := map[string]float64{
		"rows": float64(s.Rows), "columns": float64(len(s.Columns)), "missing_total": float64(s.MissingTotal()),
	}
	for _, c := range s.Columns {
		nc := Normalize(c.Name)
		for _, agg := range simpleAggs {
			if v, err := columnAgg(c, agg); err == nil {
				m[agg+"_"+nc] = v
			}
		}
	}
	for _, g := range s.groupings() {
		for _, val := range g.values() {
			grp := g.groups[val]
			m["rows_by_"+g.key+"_"+Normalize(val)] = float64(grp.Rows)
			for _, c := range s.Columns {
				if !c.IsNumeric() || c == g.col {
					continue
				}
				for _, agg := range groupAggs {
					if v, err := groupAgg(c, grp, agg); err == nil {
						m[agg+"_"+Normalize(c.Name)+"_by_"+g.key+"_"+Normalize(val)] = v
					}
				}
			}
		}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
