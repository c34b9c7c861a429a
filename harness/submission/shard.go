package submission

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Identity is what names a submission across runs and machines: its
// directory's name (not its path, which differs between a CI runner's
// checkout and a laptop, nor its position in a list). A shard is chosen by
// it, and a class merge matches bundles of the same submission by it.
func Identity(dir string) string {
	if dir == "" {
		return ""
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Base(filepath.Clean(dir))
}

// Shard is one share of a class: the K-th of N (1 ≤ K ≤ N).
type Shard struct{ K, N int }

// ParseShard reads "K/N" (e.g. "2/3"); K counts from 1.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("--shard must be K/N (e.g. 1/3), got %q", s)
	}
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	switch {
	case err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("--shard must be K/N with whole numbers (e.g. 1/3), got %q", s)
	case ni < 1:
		return Shard{}, fmt.Errorf("--shard %q: N must be at least 1", s)
	case ki < 1 || ki > ni:
		return Shard{}, fmt.Errorf("--shard %q: K must be between 1 and N (%d); shards count from 1", s, ni)
	}
	return Shard{K: ki, N: ni}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// Holds reports whether the submission named identity belongs to this
// shard: the sha256 of the identity, modulo N, is K-1. The same submission
// always lands in the same shard whatever else is listed, and in what order.
func (s Shard) Holds(identity string) bool {
	if s.N <= 1 {
		return true
	}
	return ShardOf(identity, s.N) == s.K
}

// ShardOf is the shard (1..n) that holds the submission named identity.
func ShardOf(identity string, n int) int {
	if n <= 1 {
		return 1
	}
	sum := sha256.Sum256([]byte(identity))
	return int(binary.BigEndian.Uint64(sum[:8])%uint64(n)) + 1
}
