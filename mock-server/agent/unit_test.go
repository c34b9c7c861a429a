package agent

import (
	"strings"
	"testing"
)

func TestLineSplitter(t *testing.T) {
	var got []string
	sp := &lineSplitter{emit: func(s string) { got = append(got, s) }}
	for _, chunk := range []string{"a\n", "\nb\r", "\nc\rd", "e\r\n\r\n", "tail"} {
		sp.write([]byte(chunk))
	}
	sp.flush()
	if strings.Join(got, "|") != "a||b|c|de||tail" {
		t.Fatalf("lines %q", got)
	}
}

func TestParseRange(t *testing.T) {
	cases := []struct {
		h               string
		size            int64
		s, e            int64
		ok, satisfiable bool
	}{
		{"bytes=0-9", 100, 0, 9, true, true},
		{"bytes=90-", 100, 90, 99, true, true},
		{"bytes=90-200", 100, 90, 99, true, true},
		{"bytes=-10", 100, 90, 99, true, true},
		{"bytes=100-", 100, 0, 0, true, false},
		{"bytes=-0", 100, 0, 0, true, false},
		{"bytes=5-1", 100, 0, 0, false, false},
		{"bytes=0-1,4-5", 100, 0, 0, false, false},
		{"items=0-1", 100, 0, 0, false, false},
	}
	for _, c := range cases {
		s, e, ok, sat := parseRange(c.h, c.size)
		if ok != c.ok || sat != c.satisfiable || (sat && (s != c.s || e != c.e)) {
			t.Errorf("parseRange(%q,%d) = %d %d %v %v", c.h, c.size, s, e, ok, sat)
		}
	}
}

func TestResolve(t *testing.T) {
	a := New(agentCfg("/"), nil)
	for in, want := range map[string]string{"x.csv": "/workspace/x.csv", "../../etc/shadow": "/etc/shadow", "/tmp/../workspace/a": "/workspace/a"} {
		if got, err := a.resolve(in); err != nil || got != want {
			t.Errorf("resolve(%q) = %q %v", in, got, err)
		}
	}
	if _, err := a.resolve("a\x00b"); err == nil {
		t.Error("NUL accepted")
	}
	b := New(agentCfg("/srv/sb1"), nil)
	if got, _ := b.resolve("../../../../etc/passwd"); got != "/srv/sb1/etc/passwd" {
		t.Errorf("insecure resolve escaped: %q", got)
	}
	if b.clientPath("/srv/sb1/workspace/a") != "/workspace/a" {
		t.Error("clientPath")
	}
}

func TestParseMode(t *testing.T) {
	if m, ok := parseMode(755); !ok || m.Perm() != 0o755 {
		t.Errorf("755 → %v %v", m, ok)
	}
	if _, ok := parseMode(888); ok {
		t.Error("888 accepted")
	}
	if octalDigits(0o644) != 644 {
		t.Error("octalDigits")
	}
}
