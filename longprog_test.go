package ndbg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/data/cruxeval"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/internal/testsupport/testprog"
	"github.com/ndbg/ndbg/sample"
)

// longPrograms are the programs every single step from the entry call must
// get a prediction for: CRUXEval's development split, examples/, and
// two LongPrograms. -short takes every fifth CRUXEval item.
func longPrograms(t *testing.T) (srcs, calls, names []string) {
	items, err := cruxeval.Dev()
	require.NoError(t, err)
	for i, it := range items {
		if testing.Short() && i%5 != 0 {
			continue
		}
		srcs, calls, names = append(srcs, it.Code), append(calls, it.Call()), append(names, it.ID)
	}
	// examples/: mean.py with the README's calls, item.json as CRUXEval's.
	mean, err := os.ReadFile("examples/mean.py")
	require.NoError(t, err)
	for _, call := range []string{"f([3, None, 4])", "f([None])", "f([3, 4])"} {
		srcs, calls, names = append(srcs, string(mean)), append(calls, call), append(names, "examples/mean.py")
	}
	b, err := os.ReadFile("examples/item.json")
	require.NoError(t, err)
	var it cruxeval.Item
	require.NoError(t, json.Unmarshal(b, &it))
	srcs, calls, names = append(srcs, it.Code), append(calls, it.Call()), append(names, "examples/item.json")
	ex, err := filepath.Glob("examples/*")
	require.NoError(t, err)
	// stats.py is a whole script for the real backend: with a call its
	// module code (run as __main__, as a model's training programs are)
	// raises in its __main__ block, so no model session starts on it.
	require.Len(t, ex, 3, "a new example: add it here")
	// 71 lines, which fit the old 512-token context but left no room for
	// the next frame (the issue's "513 tokens needed, the context holds
	// 512"), 288 (about 1,760 tokens), and 568 (more than the default
	// model's 2048).
	for _, funcs := range []int{9, 40, 80} {
		src, call := testprog.LongProgram(funcs)
		srcs, calls, names = append(srcs, src), append(calls, call), append(names, fmt.Sprintf("LongProgram(%d)", funcs))
	}
	return srcs, calls, names
}

// TestNeuralLongPrograms: with the default model (context 2048 tokens),
// step_into, step_over and step_return from the entry call each get a
// prediction for every program of longPrograms: none ends in
// ErrContextFull. (Programs of about 40 lines did.)
func TestNeuralLongPrograms(t *testing.T) {
	ctx := context.Background()
	m := openDefault(t)
	srcs, calls, names := longPrograms(t)
	require.Greater(t, strings.Count(srcs[len(srcs)-1], "\n"), 200)
	for i, src := range srcs {
		s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), src, calls[i])
		require.NoError(t, err, "%s: %s", names[i], calls[i])
		for _, k := range []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepReturn} {
			f := s.Fork()
			_, err := f.Do(ctx, dsl.Action{Kind: k})
			if !errors.Is(err, ndbg.ErrFinished) {
				require.NoError(t, err, "%s: %s", names[i], k)
			}
			f.Close()
		}
		s.Close()
	}
}

// TestNeuralLongProgramTooLong: a context too small even for the function
// the session is in is an error that says what needs how much.
func TestNeuralLongProgramTooLong(t *testing.T) {
	ctx := context.Background()
	src, call := testprog.LongProgram(40)

	// A context too small for the function the session is in: the error
	// says what needs how much.
	small := testmodel.ModelContext(t, 1, 96)
	_, err := ndbg.Start(ctx, ndbg.Neural(small, sample.Params{}), src, call)
	require.ErrorIs(t, err, ndbg.ErrContextFull)
	require.Regexp(t, `the code the session is in \(lines 284-288\) needs \d+ tokens without its blank lines and comments \(the whole program \d+\), `+
		`the current frame \d+ and the next action and frame at least \d+ more, over the 96 the context holds`, err.Error())
}

// TestNeuralLongCommentBlocks: a comment block too long for the context
// beside the entry (after it: part of its top-level statement; before it;
// inside its body) no longer makes a session end in ErrContextFull: the
// prompt leaves out blank lines and comments before giving up.
func TestNeuralLongCommentBlocks(t *testing.T) {
	ctx := context.Background()
	var block strings.Builder
	for i := range 300 {
		fmt.Fprintf(&block, "# note %d: what this function does and why, at some length\n\n", i)
	}
	body := "    y = x + 1\n    return y\n"
	srcs := map[string]string{
		"after":  "def f(x):\n" + body + block.String(),
		"before": block.String() + "def f(x):\n" + body,
		"inside": "def f(x):\n" + strings.ReplaceAll(block.String(), "#", "    #") + body,
	}
	small := testmodel.ModelContext(t, 1, 512)
	for name, src := range srcs {
		s, err := ndbg.Start(ctx, ndbg.Neural(small, sample.Params{}), src, "f(1)")
		require.NoError(t, err, name)
		_, err = s.StepInto(ctx)
		require.NoError(t, err, name)
		s.Close()
	}
	// The code itself still has to fit: a statement too long without its
	// comments is ErrContextFull as before.
	var long strings.Builder
	long.WriteString("def f(x):\n")
	for i := range 300 {
		fmt.Fprintf(&long, "    x = x + %d\n", i)
	}
	long.WriteString("    return x\n" + block.String())
	_, err := ndbg.Start(ctx, ndbg.Neural(small, sample.Params{}), long.String(), "f(1)")
	require.ErrorIs(t, err, ndbg.ErrContextFull)
}
