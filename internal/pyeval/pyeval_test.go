package pyeval

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/victim"
	"github.com/ndbg/ndbg/trace"
)

// TestEval: values as p and pp print them, pdb's one-line errors, and a
// local whose repr is no literal named as the reason it cannot be read.
func TestEval(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	locals := []dsl.Local{{Name: "xs", Repr: "[3, 4]"}, {Name: "d", Repr: "{'k': 1}"}, {Name: "o", Repr: "<C object at 0x...>"}}
	res, err := Eval(context.Background(), trace.Limits{}, locals, []string{"sum(xs) / len(xs)", "d['k'] + 1", "zz", "o.x", "1/0"}, false)
	require.NoError(t, err)
	require.Equal(t, []Result{
		{Value: "3.5"}, {Value: "2"},
		{Error: "NameError: name 'zz' is not defined"},
		{Error: "the value of o is not a Python literal, so it cannot be rebuilt to evaluate: <C object at 0x...>"},
		{Error: "ZeroDivisionError: division by zero"},
	}, res)
	res, err = Eval(context.Background(), trace.Limits{}, locals, []string{"list(range(30))"}, true)
	require.NoError(t, err)
	require.Contains(t, res[0].Value, "[0,\n 1,\n")
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
	res, err := Eval(context.Background(), trace.Limits{}, locals,
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

// TestEvalNeedsSandbox: where the sandbox cannot start, Eval says so and
// runs nothing, unless the user asked for --unsandboxed.
func TestEvalNeedsSandbox(t *testing.T) {
	py, err := trace.FindPython(context.Background())
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	t.Setenv("PATH", t.TempDir()) // no bwrap
	_, err = Eval(context.Background(), trace.Limits{Python: py}, nil, []string{"1 + 1"}, false)
	require.ErrorIs(t, err, trace.ErrSandbox)
	assert.Contains(t, err.Error(), "--unsandboxed")
	res, err := Eval(context.Background(), trace.Limits{Python: py, Unsandboxed: true}, nil, []string{"1 + 1"}, false)
	require.NoError(t, err)
	assert.Equal(t, "2", res[0].Value)
}
