// Package rubric breaks rubric-imports-nothing: it imports the raw client.
package rubric

import _ "example.com/planted/harness/osb"

type Summary struct{ Score float64 }
