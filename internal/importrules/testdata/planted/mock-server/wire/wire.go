// Package wire breaks wire-imports-nothing (and, through it, the server's and
// the rubric's rules).
package wire

import _ "example.com/planted/harness/summary"
