package inert

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é ✓ 日本":                    "plain text, é ✓ 日本",
		"\x1b[2J\x1b]0;title\x07":               `\x1b[2J\x1b]0;title\x07`,
		"\x1b]52;c;Y3VybA==\x1b\\":              `\x1b]52;c;Y3VybA==\x1b\`,
		"one\r\ntwo\tthree":                     `one\r\ntwo\tthree`,
		"del\x7f c1\u009b nel\u0085":            `del\x7f c1\x9b nel\x85`,
		"rlo\u202eoff\u202c iso\u2066\u2069":    `rlo\u202eoff\u202c iso\u2066\u2069`,
		"lrm\u200e rlm\u200f ls\u2028 ps\u2029": `lrm\u200e rlm\u200f ls\u2028 ps\u2029`,
		"bad\xff\xfe":                           `bad\xff\xfe`,
		`back\slash "quote"`:                    `back\slash "quote"`,
	} {
		assert.Equal(t, want, Line(in), "%q", in)
	}
}

func TestQuote(t *testing.T) {
	assert.Equal(t, `"a \"b\" \\ c\nd\x1b"`, Quote("a \"b\" \\ c\nd\x1b"))
	assert.Equal(t, `""`, Quote(""))
	// The content cannot close the quote: every " inside is escaped.
	q := Quote(`x" then a forged line`)
	assert.Equal(t, 2, strings.Count(q, `"`)-strings.Count(q, `\"`))
}

// Whatever the bytes, Line's output is valid UTF-8 with no Dangerous rune.
func TestLineAllBytes(t *testing.T) {
	var all []byte
	for i := 0; i < 256; i++ {
		all = append(all, byte(i))
	}
	runes := []string{string(all), "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c\ufeff\u200b"}
	for r := rune(0x80); r < 0xa0; r++ {
		runes = append(runes, string(r))
	}
	for _, s := range runes {
		for _, out := range []string{Line(s), Quote(s)} {
			assert.True(t, utf8.ValidString(out))
			for _, r := range out {
				assert.False(t, Dangerous(r), "%U left in %q", r, out)
			}
		}
	}
}
