package recompute

import (
	"encoding/json"
	"math"
)

// finite returns nil for NaN and ±Inf, which JSON cannot carry.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// MarshalJSON writes the column with null for undefined statistics and the
// group tables as value → rows.
func (c *Column) MarshalJSON() ([]byte, error) {
	type out struct {
		Name              string         `json:"name"`
		Index             int            `json:"index"`
		Count             int            `json:"count"`
		Missing           int            `json:"missing"`
		NumericCount      int            `json:"numeric_count"`
		Numeric           bool           `json:"numeric"`
		Date              bool           `json:"date"`
		NonNumericExample string         `json:"non_numeric_example,omitempty"`
		Sum               *float64       `json:"sum"`
		Mean              *float64       `json:"mean"`
		Min               *float64       `json:"min"`
		Max               *float64       `json:"max"`
		Std               *float64       `json:"std"`
		GroupOverflow     bool           `json:"group_overflow"`
		GroupRows         map[string]int `json:"group_rows,omitempty"`
	}
	o := out{Name: c.Name, Index: c.Index, Count: c.Count, Missing: c.Missing, NumericCount: c.NumericCount,
		Numeric: c.IsNumeric(), Date: c.IsDate(), NonNumericExample: c.NonNumericExample,
		GroupOverflow: c.GroupOverflow}
	if c.IsNumeric() {
		o.Sum, o.Mean, o.Min, o.Max, o.Std = finite(c.Sum), finite(c.Mean()), finite(c.Min), finite(c.Max), finite(c.Std)
	}
	if c.Groups != nil {
		o.GroupRows = map[string]int{}
		for v, g := range c.Groups {
			o.GroupRows[v] = g.Rows
		}
	}
	return json.Marshal(o)
}
