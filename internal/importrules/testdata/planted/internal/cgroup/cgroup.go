// Package cgroup breaks cgroup-imports-nothing: the neutral package the
// server may import reaches into the grader.
package cgroup

import _ "example.com/planted/harness/summary"
