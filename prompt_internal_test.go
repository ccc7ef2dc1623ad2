package ndbg

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/trace"
)

// LongProgram is a program of many small functions (7 lines each, funcs of
// them), far longer than the default model's context: f calls the last of
// a chain of helpers, each of which calls the one before it.
func LongProgram(funcs int) (src, call string) {
	var b strings.Builder
	b.WriteString("import math\n\nSCALE = 3\n\n\n")
	b.WriteString("def h0(x):\n    y = x + SCALE\n    return y\n\n\n")
	for i := 1; i < funcs; i++ {
		fmt.Fprintf(&b, "def h%d(x):\n    a = x * %d\n    b = h%d(a %% 7)\n    c = a - b\n    return c + %d\n\n\n", i, i, i-1, i)
	}
	fmt.Fprintf(&b, "def f(n):\n    total = 0\n    for i in range(n):\n        total += h%d(i)\n    return math.floor(total)\n", funcs-1)
	return b.String(), "f(3)"
}

// TestPromptShowsTheStack: where the whole program does not fit the
// model's context, the prompt holds the current line's function and those
// on the real call stack (the outermost left out when the stack is too
// deep), in source order, and while there is room, the module's imports
// and constants; with room left for the next frame; the
// shortened source is still Python (CPython compiles it).
func TestPromptShowsTheStack(t *testing.T) {
	ctx := context.Background()
	m, err := Open(ctx, Options{})
	if errors.Is(err, ErrNoDefaultModel) {
		t.Skip("no embedded default model")
	}
	require.NoError(t, err)
	defer m.Close()
	src, call := LongProgram(40)
	rs, err := Start(ctx, Real(trace.Limits{}), src, call)
	require.NoError(t, err)
	defer rs.Close()
	prog := rs.Program()
	pc, err := m.program(ctx, prog)
	require.NoError(t, err)
	n := m.eng.Config().Context
	require.Greater(t, len(pc.tokens), n, "the program must not fit the context")

	checked, deepest := 0, 0
	for range 40 {
		st, err := rs.StepInto(ctx)
		require.NoError(t, err)
		stack := rs.Stack()
		e := &neuralEngine{m: m, pc: pc, calls: stack}
		v, frame, err := e.prompt(prog, st)
		require.NoError(t, err)
		require.NotNil(t, v.shown, "a shortened view")
		require.Less(t, len(v.tokens)+len(m.encode(frame)), n)
		var shown []string
		for l := 1; l <= len(prog.Lines); l++ {
			if v.holds(l) {
				shown = append(shown, prog.Lines[l-1])
			}
		}
		source := strings.Join(shown, "\n") + "\n"
		require.Equal(t, dsl.BeginOfText+dsl.TraceContextStart+source+dsl.FrameSep, v.text)
		require.True(t, v.holds(st.Line), "the current line")
		// The stack's functions, but the outermost when it is too deep.
		for k, c := range stack {
			require.Equal(t, k < len(v.omitted), slices.Contains(v.omitted, c), "stack %v omitted %v", stack, v.omitted)
			require.Equal(t, !slices.Contains(v.omitted, c), v.holds(c), "line %d (stack %v) in the prompt:\n%s", c, stack, source)
		}
		if len(stack) <= 6 {
			require.Empty(t, v.omitted, "stack %v", stack)
		}
		deepest = max(deepest, len(v.omitted))
		if len(stack) <= 2 { // room for more than the stack
			require.Contains(t, source, "import math\n")
			require.Contains(t, source, "SCALE = 3\n")
		}
		require.False(t, slices.Contains(shown, "def h0(x):") && len(stack) < 30, "h0 is far from the stack")
		out, err := exec.Command("python3", "-c", "import sys; compile(sys.argv[1], 'view', 'exec')", source).CombinedOutput()
		require.NoError(t, err, "%s\n%s", out, source)
		checked++
	}
	require.Equal(t, 40, checked)
	require.Positive(t, deepest, "a stack too deep for the context")

}
