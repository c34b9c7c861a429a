package reference

import (
	"fmt"
	"unicode/utf8"
)

// OutputLimit is the most bytes of stdout or stderr kept per step (the
// course's clip(): head and tail, with a marker in between).
const OutputLimit = 8 << 10

// Clip returns s unchanged if it fits in limit bytes; otherwise the head and
// the tail of s around a marker saying how many bytes were dropped, never more
// than limit bytes in total and never splitting a UTF-8 character. The bool
// reports whether anything was cut.
func Clip(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	marker := fmt.Sprintf("\n...[truncated %d bytes]...\n", len(s)) // upper bound on the width
	room := limit - len(marker)
	if room < 2 {
		return marker[:min(limit, len(marker))], true
	}
	head := runeFloor(s, room/2)
	tail := runeCeil(s, len(s)-(room-head))
	dropped := tail - head
	return s[:head] + fmt.Sprintf("\n...[truncated %d bytes]...\n", dropped) + s[tail:], true
}

// runeFloor moves i back to the start of a UTF-8 character.
func runeFloor(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// runeCeil moves i forward to the start of a UTF-8 character.
func runeCeil(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}
