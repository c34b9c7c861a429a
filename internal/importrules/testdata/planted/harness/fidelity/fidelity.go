// Package fidelity imports the server but is excepted by name.
package fidelity

import _ "example.com/planted/mock-server"
