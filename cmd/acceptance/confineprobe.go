package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/osb-capstone/acceptance/harness/confine"
)

// confineProbeMain is `acceptance confine-probe [--json]`: which of the
// mechanisms the confinement levels are built on work here (namespaces,
// cgroups, setuid, rlimits, prctl), and the level `run` and `grade` would
// pick (docs/confinement.md, "What a machine allows"; .ci/confine-matrix.sh
// runs it in containers of the project's engine).
func confineProbeMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == confine.ProbeChildArg {
		return confine.ProbeChild(args[1])
	}
	fs := flag.NewFlagSet("confine-probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the rows as JSON")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "acceptance confine-probe: %v\n", err)
		return 2
	}
	rows := confine.Matrix(self)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rows)
		return 0
	}
	fmt.Fprint(stdout, "| mechanism | here |\n|---|---|\n"+confine.MatrixMarkdown(rows))
	return 0
}
