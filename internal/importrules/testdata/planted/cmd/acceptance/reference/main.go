// Command reference breaks reference-imports-no-grader by importing the
// rubric; the summary format is allowed.
package main

import (
	_ "example.com/planted/harness/rubric"
	_ "example.com/planted/harness/summary"
)

func main() {}
