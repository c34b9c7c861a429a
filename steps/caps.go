package steps

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/regularfile"
)

// What the grader reads from a submission's files is capped, file by file
// (docs/hostile.md lists the figures): a 1 TiB sparse report.md once made
// the grader run out of memory. A file over its cap fails the entry that reads
// it, with that reason; a symbolic link is never followed. (Each JUnit XML
// file a test command wrote: testcount.MaxJUnitFile; each output file the
// secret scan reads: secretscan.Limit.)
const (
	capContractJSON = 16 << 20 // {out}/contract.json
	capReportMD     = 8 << 20  // {out}/report.md
	capChartPNG     = 32 << 20 // {out}/chart.png
	capSummaryJSON  = 16 << 20 // {out}/summary.json (summary.MaxBytes for Load)
	capReadme       = 1 << 20  // the submission's README
	// capCaptured is how much of a command's captured stdout or stderr a step
	// reads for text it looks for.
	capCaptured = 8 << 20
)

// readSubmissionFile reads a file the submission wrote, whole, or returns why
// not in words about the submission: name is how the reason names the file
// (e.g. "{out}/report.md"). A missing file's error satisfies
// errors.Is(err, os.ErrNotExist).
func readSubmissionFile(path, name string, limit int64) ([]byte, error) {
	b, err := regularfile.ReadMax(path, limit)
	var tl *regularfile.TooLargeError
	switch {
	case err == nil:
		return b, nil
	case errors.As(err, &tl):
		return nil, fmt.Errorf("%s is %d bytes, over the grader's cap of %d bytes for it", name, tl.Size, tl.Limit)
	case errors.Is(err, regularfile.ErrSymlink):
		return nil, fmt.Errorf("%s is a symbolic link; the grader reads only regular files and never follows a link", name)
	case errors.Is(err, os.ErrNotExist):
		if why := command.DroppedReason(path); why != "" {
			// Written in the box, kept back at the copy-out (over a cap, a
			// link): the reason is the submission's file, not its absence.
			return nil, fmt.Errorf("%s was not copied out of the submission's box: %s", name, why)
		}
		return nil, fmt.Errorf("%s does not exist: %w", name, os.ErrNotExist)
	default:
		if msg := trimPath(err, path, name); strings.HasPrefix(msg, name) {
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("%s: %s", name, trimPath(err, path, name))
	}
}

// trimPath replaces the host path in err by the file's name.
func trimPath(err error, path, name string) string {
	return strings.ReplaceAll(err.Error(), path, name)
}
