// Package fullduplex breaks fullduplex-imports-nothing: the neutral package
// the server may import reaches into the grader.
package fullduplex

import _ "example.com/planted/harness/summary"
