// Package blame is clean: the steps' framework that knows no godog.
package blame

import _ "example.com/planted/harness/rubric"
