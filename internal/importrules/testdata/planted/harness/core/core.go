// Package core breaks harness-reaches-server-only-through-wire through stubs.
package core

import _ "example.com/planted/harness/stubs"
