package main

import (
	"golang.org/x/sys/unix"
)

// hardenGrader makes the grader's process non-dumpable (prctl
// PR_SET_DUMPABLE 0): its /proc/<pid>/mem, environ, maps and fds are then
// closed to every other process of the same user that lacks CAP_SYS_PTRACE.
// The grader holds the bundled server's admin token, the data API's token and
// every submission's API key in memory; where a submission runs as the
// grader's own user (a partial confinement, e.g. an unprivileged container)
// this is what keeps `/proc/<grader>/mem` out of its reach. Children get their
// own dumpable flag back when they exec.
func hardenGrader() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// hardened lists the subcommands that hold secrets of the graded.
var hardened = map[string]bool{"run": true, "grade": true, "serve-mock": true}
