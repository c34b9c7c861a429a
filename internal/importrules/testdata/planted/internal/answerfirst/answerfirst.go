// Package answerfirst breaks answerfirst-imports-nothing: the test upstream
// shared by the grader's and the server's tests reaches into the grader.
package answerfirst

import _ "example.com/planted/harness/summary"
