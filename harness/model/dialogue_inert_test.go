package model

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/inert"
)

// model-dialogue.md is Markdown people read from the bundle: the agent's
// request path and what it reported back are its text, shown escaped.
func TestDialogueInert(t *testing.T) {
	xs := []Exchange{
		{Seq: 1, Method: "POST", Path: "/v1/chat/completions?<img src=x onerror=alert(1)>", Status: 200},
		{Seq: 2, Method: "POST", Path: "/v1/chat", Status: 200, ToolResults: []string{"[ok](javascript:alert(1)) \x1b]52;c;eA==\x07 | x"}},
	}
	d := Dialogue("t", xs)
	assert.NotContains(t, d, "<img")
	assert.NotContains(t, d, "](javascript")
	assert.NotContains(t, d, "\x1b")
	assert.Contains(t, d, inert.Markdown("[ok](javascript:alert(1))"))
	assert.True(t, strings.HasPrefix(d, "# Model dialogue"))
}
