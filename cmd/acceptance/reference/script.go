package reference

import _ "embed"

// AnalysisScript is the pandas + matplotlib program uploaded to
// /workspace/analyze.py. Read analyze.py: its docstring lists the reading
// rules and the exit codes the host relies on.
//
//go:embed analyze.py
var AnalysisScript []byte

// Sandbox paths.
const (
	SandboxInput    = "/workspace/input.csv"
	SandboxScript   = "/workspace/analyze.py"
	SandboxQuestion = "/workspace/question.txt"
	SandboxReport   = "/workspace/report.md"
	SandboxChart    = "/workspace/chart.png"
	SandboxMetrics  = "/workspace/metrics.json"
)

// InstallPackage is the one package the install step always fetches, kept
// as a constant so drills and docs can name it. tabulate is small and pure
// Python; pandas uses it for DataFrame.to_markdown() (the script falls back to
// a plain table without it). The bundled server maps pypi.org to a loopback
// stub index, which must serve it. pandas and matplotlib are installed too,
// but only when the image lacks them (python:3.12 does; the bundled server's
// sandboxes use the host's Debian packages).
const InstallPackage = "tabulate"

// IndexURL is where pip looks, spelled out so the network policy and the
// command agree on the host.
const IndexURL = "https://pypi.org/simple"

// InstallCommand is the install step. pip's own retries are cut to one and
// its timeout to 20 s so a denied index fails in seconds, not minutes; the
// pipeline decides about retrying, not pip.
const InstallCommand = `if python3 -c 'import pandas, matplotlib' 2>/dev/null; then extra=''; else extra='pandas matplotlib'; fi; ` +
	`python3 -m pip install -q --user --disable-pip-version-check --no-input --no-warn-script-location --root-user-action=ignore --retries 1 --timeout 20 ` +
	`--index-url ` + IndexURL + ` ` + InstallPackage + ` $extra`

// AnalyzeCommand runs the analysis.
const AnalyzeCommand = "cd /workspace && python3 analyze.py"

// installEnv are environment variables for the install command only.
// PIP_BREAK_SYSTEM_PACKAGES allows a --user install on Debian-based Pythons
// (PEP 668); it changes nothing elsewhere.
var installEnv = map[string]string{"PIP_BREAK_SYSTEM_PACKAGES": "1"}
