// Package osb is clean: the harness may import the wire types.
package osb

import _ "example.com/planted/mock-server/wire"
