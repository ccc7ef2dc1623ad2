package trace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Recursion through C code (here sorted's key function) still ends in a
// traced RecursionError, never in a lost tracer.
func TestRecursionThroughCCode(t *testing.T) {
	src := "def g(n):\n    return sorted([n], key=g)\ndef f():\n    return g(0)\n"
	res, err := runChecked(t, src, "f", "f()", testLimits(t))
	require.NoError(t, err)
	require.NotNil(t, res.Exception)
	assert.Equal(t, "RecursionError", res.Exception.Type)
	last := res.Events[len(res.Events)-1]
	assert.Equal(t, 0, last.Depth)
}
