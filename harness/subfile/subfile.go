// Package subfile reads the files a submission wrote as the grader reads
// them: whole, capped file by file, regular files only, never through a
// symbolic link (harness/regularfile), with a reason in words about the
// submission when it cannot (Read names the file as the submission knows
// it, "{out}/report.md", never the grader's path). A file the box kept back
// at its copy-out is named with why (command.DroppedReason).
package subfile

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
	ContractJSON = 16 << 20 // {out}/contract.json
	ReportMD     = 8 << 20  // {out}/report.md
	ChartPNG     = 32 << 20 // {out}/chart.png
	SummaryJSON  = 16 << 20 // {out}/summary.json (summary.MaxBytes for Load)
	Readme       = 1 << 20  // the submission's README
	// Captured is how much of a command's captured stdout or stderr a step
	// reads for text it looks for.
	Captured = 8 << 20
)

// Read reads a file the submission wrote, whole, or returns why
// not in words about the submission: name is how the reason names the file
// (e.g. "{out}/report.md"). A missing file's error satisfies
// errors.Is(err, os.ErrNotExist).
func Read(path, name string, limit int64) ([]byte, error) {
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
		if msg := TrimPath(err, path, name); strings.HasPrefix(msg, name) {
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("%s: %s", name, TrimPath(err, path, name))
	}
}

// TrimPath replaces the host path in err by the file's name.
func TrimPath(err error, path, name string) string {
	return strings.ReplaceAll(err.Error(), path, name)
}

// CapturedText reads a captured output for text a step looks for: at most
// Captured bytes of it, never through a symbolic link ("" if unreadable).
func CapturedText(p string) string {
	b, _ := regularfile.Read(p, Captured)
	return string(b)
}
