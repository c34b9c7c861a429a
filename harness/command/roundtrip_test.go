package command

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/observe"
)

// TestExecdRoundTripFromTheProxy: on a real target M1's "ran a command,
// wrote a file and read a file back" is read from the run's recording
// proxy: execd calls to the run's own sandboxes, through a rewritten
// endpoint or the server's proxy route, that execd answered with success;
// a command counts once its stream ended with execd's terminal event (its
// exit code, zero or not). Another sandbox, the egress port, a failed
// answer, a stream cut off before its end and a lifecycle call never count.
func TestExecdRoundTripFromTheProxy(t *testing.T) {
	const own, other = "sb-own", "sb-other"
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	zero, one := 0, 1
	ep := func(id string, port int, method, path string, status int) observe.Call {
		c := observe.Call{Time: at, Kind: observe.KindEndpoint, Method: method, Path: path, Status: status, SandboxID: id, Port: port}
		if method == "POST" && status == 200 {
			c.ExitCode = &zero
		}
		return c
	}
	exited := func(c observe.Call, code *int) observe.Call { c.ExitCode = code; return c }
	full := []observe.Call{
		ep(own, 44772, "GET", "/ping", 200),
		ep(own, 44772, "POST", "/command", 200),
		exited(ep(own, 44772, "POST", "/sandboxes/sb-own/proxy/44772/command", 200), &one), // ran to completion, exit 1
		ep(own, 44772, "POST", "/files/upload", 200),
		ep(own, 44772, "GET", "/files/download?path=%2Fworkspace%2Freport.md", 200),
		ep(own, 44772, "GET", "/sandboxes/sb-own/proxy/44772/files/download?path=%2Fworkspace%2Fchart.png", 206),
	}
	cmds, ups, downs := ExecdRoundTrip(full, []string{own})
	assert.Equal(t, [3]int{2, 1, 2}, [3]int{cmds, ups, downs})

	none := []observe.Call{
		ep(other, 44772, "POST", "/command", 200),                                      // another sandbox
		ep(own, 18080, "POST", "/command", 200),                                        // not execd
		ep(own, 44772, "POST", "/command", 502),                                        // execd never ran it
		exited(ep(own, 44772, "POST", "/command", 200), nil),                           // its stream was cut before its end
		ep(own, 44772, "POST", "/files/upload", 500),                                   // nothing written
		ep(own, 44772, "GET", "/files/download?path=%2Fx", 404),                        // nothing read
		ep(own, 44772, "GET", "/files/upload", 200),                                    // not a write
		{Time: at, Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: own}, // lifecycle
	}
	cmds, ups, downs = ExecdRoundTrip(none, []string{own})
	assert.Equal(t, [3]int{0, 0, 0}, [3]int{cmds, ups, downs})
	cmds, ups, downs = ExecdRoundTrip(full, nil)
	assert.Equal(t, [3]int{0, 0, 0}, [3]int{cmds, ups, downs}, "a run that created no sandbox owns none of these calls")
}
