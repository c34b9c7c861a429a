// Package runtime breaks server-imports-no-grader: it imports an internal/
// package the rules do not name neutral (internal/cgroup is allowed).
package runtime

import _ "example.com/planted/internal/grading"
