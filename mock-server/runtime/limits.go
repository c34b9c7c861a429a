package runtime

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strings"
)

// ParseLimits reads an OpenSandbox resourceLimits map (Kubernetes quantities:
// {"cpu":"500m","memory":"512Mi","pids":"128"}). Like Docker, values that do
// not parse are ignored; the returned error (possibly alongside usable Limits)
// names every ignored key so the caller can log or audit it. Unknown keys are
// ignored too and reported the same way.
func ParseLimits(in map[string]string) (Limits, error) {
	var l Limits
	var bad []string
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		switch strings.ToLower(k) {
		case "memory", "mem":
			n, err := parseQuantity(v, 1)
			if err != nil || n <= 0 {
				bad = append(bad, fmt.Sprintf("%s=%q", k, v))
				continue
			}
			l.MemoryBytes = n
		case "cpu", "cpus":
			n, err := parseQuantity(v, 1000)
			if err != nil || n <= 0 {
				bad = append(bad, fmt.Sprintf("%s=%q", k, v))
				continue
			}
			l.CPUMilli = n
		case "pids", "pid", "processes":
			n, err := parseQuantity(v, 1)
			if err != nil || n <= 0 {
				bad = append(bad, fmt.Sprintf("%s=%q", k, v))
				continue
			}
			l.Pids = n
		default:
			bad = append(bad, fmt.Sprintf("%s=%q (unknown resource)", k, v))
		}
	}
	if len(bad) > 0 {
		return l, fmt.Errorf("resource limits ignored: %s", strings.Join(bad, ", "))
	}
	return l, nil
}

var numberRE = regexp.MustCompile(`^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

var quantitySuffixes = []struct {
	suffix string
	mult   *big.Rat
}{
	{"Ki", big.NewRat(1<<10, 1)}, {"Mi", big.NewRat(1<<20, 1)}, {"Gi", big.NewRat(1<<30, 1)},
	{"Ti", big.NewRat(1<<40, 1)}, {"Pi", big.NewRat(1<<50, 1)}, {"Ei", big.NewRat(1<<60, 1)},
	{"m", big.NewRat(1, 1000)}, {"k", big.NewRat(1000, 1)}, {"K", big.NewRat(1000, 1)},
	{"M", big.NewRat(1000000, 1)}, {"G", big.NewRat(1000000000, 1)}, {"T", big.NewRat(1000000000000, 1)},
	{"P", big.NewRat(1000000000000000, 1)}, {"E", big.NewRat(1000000000000000000, 1)},
}

// parseQuantity parses a Kubernetes quantity and returns it multiplied by
// scale, rounded up (so "500m" CPU with scale 1000 is 500 and "1.5Gi" memory
// is 1610612736). Exponent forms ("1e3") are accepted.
func parseQuantity(s string, scale int64) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty quantity")
	}
	mult := big.NewRat(1, 1)
	num := s
	for _, q := range quantitySuffixes {
		if strings.HasSuffix(s, q.suffix) {
			num = strings.TrimSuffix(s, q.suffix)
			mult = q.mult
			break
		}
	}
	if !numberRE.MatchString(num) {
		return 0, fmt.Errorf("quantity %q is not a number", s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("quantity %q is not a number", s)
	}
	if r.Sign() < 0 {
		return 0, fmt.Errorf("quantity %q is negative", s)
	}
	r.Mul(r, mult)
	r.Mul(r, big.NewRat(scale, 1))
	// round up
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if new(big.Rat).SetInt(q).Cmp(r) < 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > math.MaxInt64/2 {
		return 0, fmt.Errorf("quantity %q is too large", s)
	}
	return q.Int64(), nil
}

// ParseBytes reads a byte quantity ("1Gi", "512Mi", "1e9", "1073741824").
func ParseBytes(s string) (int64, error) { return parseQuantity(s, 1) }
