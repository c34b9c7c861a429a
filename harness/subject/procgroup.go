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

// escapees lists the live processes outside group pgid whose environment
// holds marker (the subject's own "HOME=<fresh home>", set for this run and
// inherited by every descendant): processes that left the subject's group
// with setsid(2), e.g. `setsid server &` or a daemonised helper, and would
// outlive the run. A process that rewrote its own environment is not found.
func escapees(marker string, pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	want := []byte(marker)
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgrp == pgid || st.state == 'Z' || st.state == 'X' {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// killEscapees ends the subject's escaped descendants: SIGTERM, up to grace
// for them to go, then SIGKILL (at once when hard). It looks again after each
// round, as an escapee may have started another, and returns every pid ended.
func killEscapees(marker string, pgid int, grace time.Duration, hard bool) []int {
	var all []int
	for round := 0; round < 5; round++ {
		pids := escapees(marker, pgid)
		if len(pids) == 0 {
			break
		}
		all = append(all, pids...)
		sig := syscall.SIGTERM
		if hard {
			sig = syscall.SIGKILL
		}
		for _, p := range pids {
			_ = syscall.Kill(p, sig)
		}
		deadline := time.Now().Add(grace)
		for !allGone(pids) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		for _, p := range pids {
			if !processGone(p) {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		deadline = time.Now().Add(2 * time.Second)
		for !allGone(pids) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return all
}

func allGone(pids []int) bool {
	for _, p := range pids {
		if !processGone(p) {
			return false
		}
	}
	return true
}
