package standin

import (
	"fmt"
	"os"
)

// Argument names of the stand-in modes of the acceptance binary.
const (
	ExecdArg  = "standin-execd"
	EgressArg = "standin-egress"
)

// MainIf runs a stand-in and exits when the process was started as one
// (os.Args[1] is ExecdArg or EgressArg); otherwise it returns.
func MainIf() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case ExecdArg:
		os.Exit(ExecdMain(os.Args[2:]))
	case EgressArg:
		os.Exit(EgressMain(os.Args[2:]))
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "osb-standin: "+format+"\n", args...)
}
