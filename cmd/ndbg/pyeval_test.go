package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/victim"
	"github.com/ndbg/ndbg/trace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDebugEvalSandboxed: p evaluates in the sandbox every program runs in
// (docs/security.md), on the neural backend too: an expression that runs a
// shell, writes or deletes outside the scratch space does nothing to the
// host.
func TestDebugEvalSandboxed(t *testing.T) {
	dir, file := victim.Dir(t)
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--threads", "1"},
		fmt.Sprintf("p __import__('os').system('touch %s/system; rm -f %s')", dir, file),
		fmt.Sprintf("p open(%q, 'w').write('pwned')", file),
		"p __import__('socket').gethostname(), __import__('os').getcwd()",
		"q")
	a := answers(out)
	require.Len(t, a, 5, out)
	assert.NotEqual(t, "0\n"+fromPrediction, a[1], "no shell starts")
	assert.Contains(t, a[2], "*** OSError: [Errno 30] Read-only file system")
	assert.Equal(t, "('ndbg', '/tmp')\n"+fromPrediction, a[3])
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))
	assert.NoFileExists(t, filepath.Join(dir, "system"))
}

// TestEvalHostileLocals: a local's repr is the model's (or the program's)
// text. One that is code is not a literal and never runs; one that is too
// deep to rebuild, or an expression too big for memory, is a clear error;
// a huge value is cut with a marker.
func TestEvalHostileLocals(t *testing.T) {
	dir, file := victim.Dir(t)
	locals := []dsl.Local{
		{Name: "x", Repr: fmt.Sprintf("__import__('os').system('rm -f %s; touch %s/x')", file, dir)},
		{Name: "y", Repr: strings.Repeat("[", 200000) + strings.Repeat("]", 200000)},
		{Name: "z", Repr: "41"},
	}
	res, err := evalOn(context.Background(), trace.Limits{}, locals,
		[]string{"x", "y", "z + 1", "'x' * (16 << 30)", "'ab' * (1 << 20)"}, false)
	require.NoError(t, err)
	assert.Contains(t, res[0].Error, "the value of x is not a Python literal")
	assert.Contains(t, res[1].Error, "the value of y is not a Python literal")
	assert.Equal(t, "42", res[2].Value)
	assert.Equal(t, "MemoryError", res[3].Error)
	assert.Equal(t, 1<<20+len("...[+1048578 characters]"), len(res[4].Value))
	assert.True(t, strings.HasSuffix(res[4].Value, "...[+1048578 characters]"), res[4].Value[len(res[4].Value)-40:])
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))
	assert.NoFileExists(t, filepath.Join(dir, "x"))
}

// TestEvalNeedsSandbox: where the sandbox cannot start, p says so and runs
// nothing, unless the user asked for --unsandboxed.
func TestEvalNeedsSandbox(t *testing.T) {
	py, err := trace.FindPython(context.Background())
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	t.Setenv("PATH", t.TempDir()) // no bwrap
	_, err = evalOn(context.Background(), trace.Limits{Python: py}, nil, []string{"1 + 1"}, false)
	require.ErrorIs(t, err, trace.ErrSandbox)
	assert.Contains(t, err.Error(), "--unsandboxed")
	res, err := evalOn(context.Background(), trace.Limits{Python: py, Unsandboxed: true}, nil, []string{"1 + 1"}, false)
	require.NoError(t, err)
	assert.Equal(t, "2", res[0].Value)
}
