package ndbg_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/oracle"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// TestLiteralsConstrainAnswers: random models sampling hot write any repr
// as a return value or a call's argument; under ndbg.Literals every one is
// a Python literal (ast.literal_eval takes it, or fails only on an
// unhashable key: the grammar is syntax only).
func TestLiteralsConstrainAnswers(t *testing.T) {
	ctx := context.Background()
	answers := func(literal bool) []string {
		var values []string
		for seed := uint64(1); seed <= 4; seed++ {
			m := randomModel(t, seed)
			var b ndbg.Backend = ndbg.Neural(m, sample.Params{Temperature: 1.5, Seed: seed})
			if literal {
				var err error
				b, err = ndbg.Literals(b)
				require.NoError(t, err)
			}
			s, err := ndbg.StartAt(ctx, b, buggy, "f", dsl.State{Event: dsl.Call, Line: 7,
				Locals: []dsl.Local{{Name: "data", Repr: "[1, None, 4]"}}})
			require.NoError(t, err)
			if st, err := s.StepReturn(ctx); err == nil && st.Event == dsl.Return {
				values = append(values, st.Value)
			}
			s.Close()
			s, err = ndbg.StartAt(ctx, b, buggy, "f", dsl.State{Event: dsl.Return, Line: 10, Value: "2.5"})
			require.NoError(t, err)
			if st, err := s.StepBackReturn(ctx); err == nil && st.Event == dsl.Call {
				for _, l := range st.Locals {
					values = append(values, l.Repr)
				}
			}
			s.Close()
		}
		return values
	}
	free := answers(false)
	notLiteral := 0
	for _, e := range oracle.LiteralEvalErrors(t, free) {
		if e != "" {
			notLiteral++
		}
	}
	require.Positive(t, notLiteral, "unconstrained, the random models write non-literals: %q", free)

	constrained := answers(true)
	require.NotEmpty(t, constrained)
	for i, e := range oracle.LiteralEvalErrors(t, constrained) {
		require.Contains(t, []string{"", "TypeError"}, e, "%q", constrained[i])
	}

	t.Logf("%d values unconstrained (%d no literal), %d constrained", len(free), notLiteral, len(constrained))
	_, err := ndbg.Literals(ndbg.Real(trace.Limits{}))
	require.Error(t, err, "the real backend predicts nothing to constrain")
}
