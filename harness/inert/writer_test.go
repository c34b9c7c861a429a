package inert

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// godog.log goes through TextWriter: godog's own layout (lines, tabs) stays,
// the submission's control characters are escaped.
func TestTextWriterKeepsLinesAndEscapesTheRest(t *testing.T) {
	var b bytes.Buffer
	w := TextWriter(&b)
	in := "    Then they passed\t# steps.testsPassed\n    x\x1b]0;owned\a\rforged\n"
	n, err := fmt.Fprint(w, in)
	require.NoError(t, err)
	assert.Equal(t, len(in), n, "a writer reports what it was given")
	assert.Equal(t, "    Then they passed\t# steps.testsPassed\n    x\\x1b]0;owned\\x07\\rforged\n", b.String())
}
