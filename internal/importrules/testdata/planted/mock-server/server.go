// Package mockserver breaks server-imports-no-grader.
package mockserver

import _ "example.com/planted/harness/summary"
