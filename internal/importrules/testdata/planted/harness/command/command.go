// Package command breaks command-imports-no-godog, through steptext.
package command

import _ "example.com/planted/harness/command/steptext"
