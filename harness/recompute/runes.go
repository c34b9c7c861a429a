package recompute

import "unicode"

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
