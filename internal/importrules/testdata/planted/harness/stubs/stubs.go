// Package stubs breaks harness-reaches-server-only-through-wire (directly).
package stubs

import _ "example.com/planted/mock-server"
