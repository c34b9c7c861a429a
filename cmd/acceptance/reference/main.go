// Package reference is the reference capstone pipeline (work in progress).
package reference

import (
	"fmt"
	"io"
)

// Main runs `acceptance reference`.
func Main(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "acceptance reference: not implemented yet")
	return 2
}
