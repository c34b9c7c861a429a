package subject

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// groupMembers lists the live (non-zombie) processes whose process group is
// pgid, by reading /proc. Zombies are excluded: they hold no resources and
// may linger until their new parent reaps them.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		if syscall.Kill(-pgid, 0) == nil {
			return []int{-pgid}
		}
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		if st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

type procStat struct {
	state byte
	ppid  int
	pgrp  int
}

// readStat parses /proc/<pid>/stat. The command name may contain spaces and
// parentheses, so fields are taken after the last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, errors.New("malformed stat")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return procStat{}, errors.New("malformed stat")
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	pgrp, _ := strconv.Atoi(string(f[2]))
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp}, nil
}

// processGone reports whether pid no longer exists or is a zombie.
func processGone(pid int) bool {
	st, err := readStat(pid)
	if err != nil {
		return true
	}
	return st.state == 'Z' || st.state == 'X'
}

// waitGroupGone polls until the group has no live member or d elapses.
func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if len(groupMembers(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killGroup sends SIGTERM to the group, waits up to grace for it to empty,
// then sends SIGKILL. It reports whether the group is gone afterwards.
func killGroup(pgid int, grace time.Duration) bool {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGroupGone(pgid, grace) {
		return true
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return waitGroupGone(pgid, 2*time.Second)
}
