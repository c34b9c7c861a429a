package report

import (
	"regexp"
	"strings"
)

// normalizers run in order; each replaces volatile values with a stable
// placeholder so evidence from two runs of the same contract compares equal.
var normalizers = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Run ids of `acceptance run` (20261129T074846Z-f55a18), also inside URL-encoded queries.
	{regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{6}\b`), "<run-id>"},
	// Request ids: headers and JSON fields (before uuid/hex rules eat them).
	{regexp.MustCompile(`(?i)(x-request-id:\s*)\S+`), "${1}<request-id>"},
	{regexp.MustCompile(`(?i)("request_?id"\s*:\s*)"[^"]*"`), `${1}"<request-id>"`},
	// RFC 3339 / ISO 8601 timestamps, with optional fraction and zone.
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?`), "<time>"},
	// HTTP dates (Date, Last-Modified).
	{regexp.MustCompile(`(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT`), "<http-date>"},
	// UUIDs.
	{regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<uuid>"},
	// Loopback and wildcard host:port pairs → the port is random.
	{regexp.MustCompile(`\b(127\.\d+\.\d+\.\d+|localhost|0\.0\.0\.0|\[::1\]):\d+`), "${1}:<port>"},
	// Durations and epoch timestamps in JSON fields and transcript lines.
	{regexp.MustCompile(`(?i)("(?:[a-z_]*duration[a-z_]*|[a-z_]*_ms|execution_time|timestamp|elapsed[a-z_]*|time)"\s*:\s*)-?\d+(\.\d+)?`), "${1}<n>"},
	{regexp.MustCompile(`\(\d+ ms\)`), "(<n> ms)"},
	{regexp.MustCompile(`(?i)\b(duration(?:_ms)?|elapsed(?:_ms)?|took)([ \t]*[:=][ \t]*)\d+(\.\d+)?[ \t]*(ms|s|µs)?`), "${1}${2}<n>"},
	{regexp.MustCompile(`\b1[6-9]\d{11}\b`), "<epoch-ms>"},
	// Hex digests and random hex ids of 12+ characters (sha256, fingerprints, netns names).
	{regexp.MustCompile(`(?i)\b[0-9a-f]{12,}\b`), "<hex>"},
	// How many canaries were planted depends on how many subject runs came before.
	{regexp.MustCompile(`\d+ canaries, `), "<n> canaries, "},
	// Audit sequence numbers depend on what else ran concurrently.
	{regexp.MustCompile(`("seq"\s*:\s*)\d+`), "${1}<n>"},
	// DNS query types arrive concurrently (A and AAAA), in either order.
	{regexp.MustCompile(`qtype=[A-Z]+`), "qtype=<type>"},
	// Temporary directories (os.MkdirTemp suffixes) and output byte counts vary run to run.
	{regexp.MustCompile(`\b(home|tmp|osb-mock|osb)-\d{6,}\b`), "${1}-<n>"},
	{regexp.MustCompile(`("(?:stdout|stderr)_bytes"\s*:\s*)\d+`), "${1}<n>"},
	// Content-Length depends on the ids inside bodies.
	{regexp.MustCompile(`(?i)(content-length:\s*)\d+`), "${1}<n>"},
}

// Normalize redacts the volatile parts of evidence text: request ids,
// timestamps, UUIDs, long hex strings (hashes of random content, ids),
// loopback ports, durations and epoch timestamps. Line endings become \n.
func Normalize(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	for _, n := range normalizers {
		s = n.re.ReplaceAllString(s, n.repl)
	}
	return s
}
