package agent

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"syscall"
)

// Content routes (download, line reads, replace, upload onto an existing
// path, permissions) work on regular files and directories only. A device
// (/dev/zero), FIFO or socket answers 400 "not a regular file" before it is
// opened for reading: reading /dev/zero never ends, opening a FIFO without a
// writer blocks forever, and a device node bind-mounted from the host must
// not be chmod-ed through the API. Metadata routes (info, search, list) only
// stat, so they still describe such files (type "other").

// notRegular is the error message for p.
func notRegular(p string, fi fs.FileInfo) string {
	kind := "special file"
	switch m := fi.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		kind = "FIFO"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeDevice != 0:
		kind = "device"
	}
	return fmt.Sprintf("%s is not a regular file (a %s): its content cannot be read or written through the files API", p, kind)
}

// openRegular opens host (client path p) for reading, refusing anything but
// a regular file: the type is checked with stat before the open, the open
// does not block (O_NONBLOCK, in case a FIFO was swapped in) and the opened
// file is checked again. On failure it has answered w and returns nil.
func openRegular(w http.ResponseWriter, host, p string) (*os.File, fs.FileInfo) {
	st, err := os.Stat(host)
	if err != nil {
		writeStatError(w, err, "file", p)
		return nil, nil
	}
	if st.IsDir() {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", p+" is a directory")
		return nil, nil
	}
	if !st.Mode().IsRegular() {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", notRegular(p, st))
		return nil, nil
	}
	f, err := os.OpenFile(host, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		writeStatError(w, err, "file", p)
		return nil, nil
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", err.Error())
		return nil, nil
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", notRegular(p, fi))
		return nil, nil
	}
	return f, fi
}

// existingNonRegular reports (with the message) whether host exists and is
// neither a regular file nor a directory (symlinks followed).
func existingNonRegular(host, p string) (string, bool) {
	st, err := os.Stat(host)
	if err != nil || st.IsDir() || st.Mode().IsRegular() {
		return "", false
	}
	return notRegular(p, st), true
}

// contentDisposition is real execd's form: the name always quoted; a
// non-ASCII name percent-encoded, with an RFC 5987 filename* as well.
func contentDisposition(name string) string {
	for _, r := range name {
		if r > 127 {
			enc := url.PathEscape(name)
			return `attachment; filename="` + enc + `"; filename*=UTF-8''` + enc
		}
	}
	return `attachment; filename="` + name + `"`
}
