package core

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// inputsLockName is the lock file in a session's inputs directory:
// flock(LOCK_EX) held for as long as the session runs.
const inputsLockName = ".lock"

// lockYoungerThan spares a directory with no lock file yet: it may be another
// session's, between its MkdirTemp and its lock.
const lockYoungerThan = time.Minute

func lockInputs(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, inputsLockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// reapDeadInputs removes the inputs directories under tmp whose session is
// gone: the lock is free, or there is no lock file and the directory is over
// a minute old. A live session's lock is never taken for long: the probe
// unlocks at once.
func reapDeadInputs(tmp string) []string {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var reaped []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), inputsPrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if !inputsDead(dir) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			reaped = append(reaped, dir)
		}
	}
	return reaped
}

func inputsDead(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, inputsLockName), os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		st, serr := os.Lstat(dir)
		return os.IsNotExist(err) && serr == nil && time.Since(st.ModTime()) > lockYoungerThan
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false // held: a live session
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}
