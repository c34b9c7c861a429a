package reference

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/summary"
)

func ip(i int) *int { return &i }

func TestClip(t *testing.T) {
	s, cut := Clip("short", 10)
	assert.Equal(t, "short", s)
	assert.False(t, cut)

	long := strings.Repeat("a", 5000) + strings.Repeat("b", 5000)
	s, cut = Clip(long, OutputLimit)
	assert.True(t, cut)
	assert.LessOrEqual(t, len(s), OutputLimit)
	assert.True(t, strings.HasPrefix(s, "aaaa"))
	assert.True(t, strings.HasSuffix(s, "bbbb"))
	assert.Contains(t, s, "...[truncated ")

	// exactly at the limit: untouched
	s, cut = Clip(strings.Repeat("x", OutputLimit), OutputLimit)
	assert.False(t, cut)
	assert.Len(t, s, OutputLimit)

	// multi-byte characters are never split
	u := strings.Repeat("é", 6000)
	s, cut = Clip(u, 1000)
	assert.True(t, cut)
	assert.True(t, utf8.ValidString(s))
	assert.LessOrEqual(t, len(s), 1000)
}

func TestClassify(t *testing.T) {
	pipDNS := "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by " +
		"'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: " +
		"[Errno -2] Name or service not known')': /simple/tabulate/\nERROR: Could not find a version that satisfies the requirement tabulate (from versions: none)\n" +
		"ERROR: No matching distribution found for tabulate\n"
	cases := []struct {
		name      string
		exit      *int
		stderr    string
		ran, tmo  float64
		class     string
		retryable bool
		reason    string
	}{
		{"success", ip(0), "", 1, 10, "", false, ""},
		{"pip denied by DNS", ip(1), pipDNS, 2, 300, summary.ClassNetworkPolicy, false, "Name or service not known"},
		{"curl denied", ip(6), "curl: (6) Could not resolve host: example.com\n", 1, 300, summary.ClassNetworkPolicy, false, "Could not resolve host"},
		{"temporary failure (no upstream)", ip(1), "socket.gaierror: [Errno -3] Temporary failure in name resolution", 1, 300, summary.ClassPlatformError, false, "no upstream"},
		{"proxy 403", ip(1), "ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 403 Forbidden'))", 1, 300, summary.ClassNetworkPolicy, false, "403"},
		{"transient read timeout", ip(1), "pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='pypi.org', port=443): Read timed out.", 1, 300, summary.ClassPlatformError, true, "Read timed out"},
		{"connection cut", ip(1), "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'SSLError(SSLZeroReturnError(6, 'TLS/SSL connection has been closed (EOF) (_ssl.c:992)'))': /simple/tabulate/\nERROR: Could not find a version that satisfies the requirement tabulate (from versions: none)\nERROR: No matching distribution found for tabulate\n", 2, 300, summary.ClassPlatformError, false, "index never answered"},
		{"package missing", ip(1), "ERROR: Could not find a version that satisfies the requirement nosuchpkg (from versions: none)\nERROR: No matching distribution found for nosuchpkg\n", 1, 300, summary.ClassScriptError, false, "no such package"},
		{"traceback", ip(1), "Traceback (most recent call last):\n  File \"analyze.py\", line 3\nKeyError: 'price'\n", 1, 300, summary.ClassScriptError, false, "raised an exception"},
		{"input error", ip(3), "INPUT_ERROR: input.csv is empty (0 bytes)\n", 1, 300, summary.ClassInputError, false, "input.csv is empty"},
		{"module missing", ip(1), "Traceback (most recent call last):\nModuleNotFoundError: No module named 'pandas'\n", 1, 300, summary.ClassScriptError, false, "missing from the image"},
		{"memory", ip(1), "MemoryError\n", 1, 300, summary.ClassCapacity, false, "memory"},
		{"killed at timeout", ip(-1), "", 299.5, 300, summary.ClassTimeout, false, "timeout"},
		{"killed early", ip(-1), "", 3, 300, summary.ClassCapacity, false, "memory limit"},
		{"no exit code", nil, "", 1, 300, summary.ClassPlatformError, false, "without an exit code"},
		{"unknown failure", ip(2), "something odd", 1, 300, summary.ClassScriptError, false, "exit code 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Classify(tc.exit, tc.stderr, tc.ran, tc.tmo)
			assert.Equal(t, tc.class, c.Class)
			assert.Equal(t, tc.retryable, c.Retryable)
			assert.Contains(t, c.Reason, tc.reason)
			if tc.class != "" {
				assert.Contains(t, summary.ErrorClasses, c.Class)
			}
		})
	}
}

// pipFailed is pip's stderr when it could not connect to the index: cause is
// what urllib3's NewConnectionError says.
func pipFailed(cause string) string {
	return "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by " +
		"'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f0c>: Failed to establish a new connection: " +
		cause + "')': /simple/tabulate/\nERROR: Could not find a version that satisfies the requirement tabulate (from versions: none)\n" +
		"ERROR: No matching distribution found for tabulate\n"
}

// TestClassifyUnreachable: a package index that cannot be reached at all
// (SERVFAIL/EAI_AGAIN, connection refused, the connection cut before any
// answer) is "unreachable" (the install degrades, non-fatally); a denial
// (NXDOMAIN, 403, unroutable) never is and keeps its network_policy class,
// also when stderr shows both.
func TestClassifyUnreachable(t *testing.T) {
	tlsEOF := "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by " +
		"'SSLError(SSLZeroReturnError(6, 'TLS/SSL connection has been closed (EOF) (_ssl.c:992)'))': /simple/tabulate/\n" +
		"ERROR: No matching distribution found for tabulate\n"
	cases := []struct {
		name        string
		stderr      string
		class       string
		unreachable bool
		reason      string
	}{
		{"SERVFAIL (EAI_AGAIN)", pipFailed("[Errno -3] Temporary failure in name resolution"), summary.ClassPlatformError, true, "SERVFAIL/EAI_AGAIN"},
		{"connection refused", pipFailed("[Errno 111] Connection refused"), summary.ClassPlatformError, true, "refused the connection"},
		{"gateway without upstream cuts TLS", tlsEOF, summary.ClassPlatformError, true, "never answered"},
		{"NXDOMAIN (denied)", pipFailed("[Errno -2] Name or service not known"), summary.ClassNetworkPolicy, false, "NXDOMAIN"},
		{"EAI_NONAME spelled out", "socket.gaierror: EAI_NONAME", summary.ClassNetworkPolicy, false, "NXDOMAIN"},
		{"proxy 403 (denied)", "ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 403 Forbidden'))", summary.ClassNetworkPolicy, false, "403"},
		{"unroutable (denied)", pipFailed("[Errno 101] Network is unreachable"), summary.ClassNetworkPolicy, false, "unroutable"},
		{"denied and unresolvable: the denial wins", pipFailed("[Errno -3] Temporary failure in name resolution") + pipFailed("[Errno -2] Name or service not known"), summary.ClassNetworkPolicy, false, "NXDOMAIN"},
		{"transient read timeout is not unreachable", "ReadTimeoutError: HTTPSConnectionPool(host='pypi.org', port=443): Read timed out.", summary.ClassPlatformError, false, "transient"},
		{"package missing is not unreachable", "ERROR: No matching distribution found for nosuchpkg\n", summary.ClassScriptError, false, "no such package"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Classify(ip(1), tc.stderr, 1, 300)
			assert.Equal(t, tc.class, c.Class)
			assert.Equal(t, tc.unreachable, c.Unreachable)
			assert.False(t, c.Unreachable && c.Retryable, "an unreachable index is not retried")
			assert.Contains(t, c.Reason, tc.reason)
		})
	}
}

func TestBudget(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &Budget{MaxSteps: 2, CommandTimeout: 5 * time.Minute, WallClock: 10 * time.Minute, Start: t0}
	require.NoError(t, b.BeginStep(t0))
	d, limited := b.CommandTimeoutAt(t0)
	assert.Equal(t, 5*time.Minute, d)
	assert.False(t, limited)

	// the wall clock shortens the last command
	d, limited = b.CommandTimeoutAt(t0.Add(8 * time.Minute))
	assert.Equal(t, 2*time.Minute, d)
	assert.True(t, limited)

	require.NoError(t, b.BeginStep(t0.Add(time.Minute)))
	err := b.BeginStep(t0.Add(2 * time.Minute))
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, StopMaxSteps, be.StopReason)
	assert.Contains(t, be.Message, "2 of 2")
	assert.Equal(t, 2, b.Steps())

	b2 := &Budget{MaxSteps: 10, CommandTimeout: time.Minute, WallClock: 10 * time.Minute, Start: t0}
	err = b2.BeginStep(t0.Add(10*time.Minute - time.Second))
	require.ErrorAs(t, err, &be)
	assert.Equal(t, StopWallClock, be.StopReason)
	assert.Equal(t, time.Duration(0), b2.Remaining(t0.Add(time.Hour)))
	assert.Equal(t, t0.Add(10*time.Minute), b2.Deadline())
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

func TestReadHostInput(t *testing.T) {
	p := writeFile(t, "a.csv", []byte("a,b\n1,\"x\ny\"\n2,z"))
	in, err := ReadHostInput(p)
	require.NoError(t, err)
	assert.EqualValues(t, 15, in.Bytes)
	assert.EqualValues(t, 4, in.Lines, "3 newlines + an unterminated last line")
	sum := sha256.Sum256([]byte("a,b\n1,\"x\ny\"\n2,z"))
	assert.Equal(t, hex.EncodeToString(sum[:]), in.SHA256)
	_, err = ReadHostInput(filepath.Join(t.TempDir(), "missing.csv"))
	assert.Error(t, err)

	// a FIFO (or a device) is refused at once, never waited on
	fifo := filepath.Join(t.TempDir(), "fifo.csv")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	done := make(chan error, 1)
	go func() { _, err := ReadHostInput(fifo); done <- err }()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "is not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("ReadHostInput blocked on a FIFO")
	}
	_, err = ReadHostInput("/dev/zero")
	assert.ErrorContains(t, err, "is not a regular file")
}

func TestRecomputeHost(t *testing.T) {
	cases := []struct {
		name, data string
		rows       int64
		cols       int
		first      string
		mean, sum  float64
		enc, delim string
	}{
		{"plain", "id,price,city\n1,2.5,A\n2,3.5,B\n3,,C\n", 3, 3, "id", 2, 6, "utf-8", ","},
		{"na markers skip", "name,v\na,NA\nb,4\nc,null\nd,N/A\ne,6\n", 5, 2, "v", 5, 10, "utf-8", ","},
		{"non numeric column skipped", "code,v\nx1,1\n2,3\n", 2, 2, "v", 2, 4, "utf-8", ","},
		{"quoted commas and newlines", "c,v\n\"a, b\",1\n\"multi\nline\",2\n", 2, 2, "v", 1.5, 3, "utf-8", ","},
		{"semicolon", "a;b\n1;2\n3;4\n", 2, 2, "a", 2, 4, "utf-8", ";"},
		{"bom", "\xef\xbb\xbfx,y\n1,a\n3,b\n", 2, 2, "x", 2, 4, "utf-8-sig", ","},
		{"latin1", "n\xe9,v\nCaf\xe9,10\nB,20\n", 2, 2, "v", 15, 30, "latin-1", ","},
		{"blank lines skipped", "a\n1\n\n2\n\n", 2, 1, "a", 1.5, 3, "utf-8", ","},
		{"header only", "a,b,c\n", 0, 3, "", 0, 0, "utf-8", ","},
		{"thousands separator is text", "v,w\n\"1,234\",1\n", 1, 2, "w", 1, 1, "utf-8", ","},
		{"tab", "a\tb\nx\t1\n", 1, 2, "b", 1, 1, "utf-8", "\t"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := RecomputeHost(writeFile(t, "in.csv", []byte(tc.data)))
			require.NoError(t, err)
			assert.Equal(t, tc.rows, h.Rows)
			assert.Equal(t, tc.cols, h.Columns)
			assert.Equal(t, tc.first, h.FirstNumeric)
			assert.InDelta(t, tc.mean, h.Mean, 1e-12)
			assert.InDelta(t, tc.sum, h.Sum, 1e-12)
			assert.Equal(t, tc.enc, h.Encoding)
			assert.Equal(t, tc.delim, h.Delimiter)
		})
	}
	_, err := RecomputeHost(writeFile(t, "empty.csv", nil))
	assert.ErrorIs(t, err, ErrEmptyInput)
	_, err = RecomputeHost(writeFile(t, "bad.csv", []byte("a,b\n1,2\n3,4,5\n")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "3 fields")
}

func TestRecomputeFixtures(t *testing.T) {
	// The repository's fixtures, where present: only sanity checks here (the
	// numbers themselves are compared against the sandbox in the flow test
	// and, for grading, by harness/recompute).
	for _, f := range []string{"sales.csv", "semicolon.csv", "latin1.csv", "bom_utf8.csv", "quoted_fields.csv", "missing_values.csv"} {
		p := filepath.Join("..", "..", "..", "fixtures", f)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		h, err := RecomputeHost(p)
		require.NoError(t, err, f)
		assert.Greater(t, h.Rows, int64(0), f)
		assert.NotEmpty(t, h.FirstNumeric, f)
	}
}

func TestCompareWithHost(t *testing.T) {
	h := &HostNumbers{Rows: 3, Columns: 2, FirstNumeric: "Unit Price", Mean: 2.0000000000000004, Sum: 6}
	checks := CompareWithHost(h, map[string]float64{"rows": 3, "columns": 2, "mean_unit_price": 2, "sum_unit_price": 6})
	require.Len(t, checks, 4)
	for _, c := range checks {
		assert.True(t, c.Match, c.Name)
	}
	checks = CompareWithHost(h, map[string]float64{"rows": 4, "columns": 2, "mean_unit_price": 2.1})
	assert.False(t, checks[0].Match)
	assert.True(t, checks[1].Match)
	assert.False(t, checks[2].Match)
	assert.Nil(t, checks[3].Claimed)
	assert.Contains(t, checks[3].Note, "not reported")
}

func TestMetricName(t *testing.T) {
	for in, want := range map[string]string{
		"Unit Price": "unit_price", "temperature_c": "temperature_c", "Sales (EUR)": "sales_eur",
		"  x--y  ": "x_y", "Zürich": "zürich", "a__b": "a_b",
	} {
		assert.Equal(t, want, MetricName(in), in)
	}
}
