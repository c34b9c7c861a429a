package submission

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShardIsStableAndPartitions: every submission lands in exactly one of
// N shards, by its directory's name only (not its path or list position),
// and a class of 300 spreads over the shards.
func TestShardIsStableAndPartitions(t *testing.T) {
	const n = 3
	counts := make([]int, n+1)
	for i := range 300 {
		id := fmt.Sprintf("student-%03d", i)
		holders := 0
		for k := 1; k <= n; k++ {
			if (Shard{K: k, N: n}).Holds(id) {
				holders++
				counts[k]++
			}
		}
		require.Equal(t, 1, holders, "%s is in exactly one shard", id)
		assert.Equal(t, ShardOf(id, n), ShardOf(Identity(filepath.Join("/elsewhere/class", id)), n), "the path does not matter")
	}
	for k := 1; k <= n; k++ {
		assert.Greater(t, counts[k], 60, "shard %d holds a fair share of 300: %v", k, counts[1:])
	}
	assert.Equal(t, "alice", Identity("class/alice/"))
	assert.True(t, Shard{K: 1, N: 1}.Holds("anything"))
}

func TestParseShard(t *testing.T) {
	s, err := ParseShard("2/3")
	require.NoError(t, err)
	assert.Equal(t, Shard{K: 2, N: 3}, s)
	assert.Equal(t, "2/3", s.String())
	for _, bad := range []string{"", "3", "0/3", "4/3", "1/0", "a/3", "1/b", "-1/3"} {
		_, err := ParseShard(bad)
		assert.Error(t, err, "%q", bad)
	}
}
