// Package fidelity keeps the fidelity ledger: per rubric entry, its verdict on
// the bundled server and on the last real run (the docker target: date,
// server version, which components were official or stand-ins), plus the
// bundled server's known differences from OpenSandbox. Runs are distilled
// from report bundles into runs/<target>.json (`acceptance fidelity --record
// DIR`), and FIDELITY.md is generated from them (`acceptance fidelity`, or
// `go generate ./harness/fidelity`).
package fidelity

//go:generate go run ../../cmd/acceptance fidelity --dir .
