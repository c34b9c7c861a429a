package steps

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable makes an outcome's reason safe to print and to store: reasons
// quote what a subject wrote (the tail of its stderr, its summary's error
// message), which may be binary or carry terminal escapes. Every control
// character but newline and tab becomes a visible \xNN, invalid UTF-8 becomes
// U+FFFD. Raw, such bytes made junit.xml invalid XML (its CDATA sections are
// not escaped), landed in report.md, and an ESC sequence on the console could
// rewrite the grader's screen (e.g. a forged "verdict: passed" line).
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x100 && unicode.IsControl(r):
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&0xf])
		case unicode.IsControl(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}
