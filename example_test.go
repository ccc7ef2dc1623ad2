package ndbg_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// An agent debugs a function that fails on some inputs: it runs to the
// failure, looks at the state there, and steps back to the call that led to
// it. The real backend runs the program; ndbg.Neural(model, ...) answers the
// same calls by prediction (see ExampleNeural).
func Example() {
	const src = `def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)

def f(data):
    clean = [d for d in data if d is not None]
    return mean(clean)
`
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), src, "f([None, None])")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// Run until something goes wrong: step out of each function until an
	// exception shows.
	for {
		st, err := s.StepInto(ctx)
		if errors.Is(err, ndbg.ErrFinished) {
			fmt.Println("finished without an exception")
			return
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if st.Event == dsl.Exception {
			fmt.Printf("line %d raised %s\n", st.Line, st.Value)
			break
		}
	}
	// Where did the bad input come from? Back to the call of the function
	// that raised: its arguments.
	call, err := s.StepBackReturn(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s called with %s = %s\n", call.Source, call.Locals[0].Name, call.Locals[0].Repr)
	// And one level up, the caller's state before that call.
	caller, _ := s.StepBackOver(ctx)
	fmt.Printf("line %d: %s, locals %v\n", caller.Line, caller.Source, caller.Locals)
	// Output:
	// line 5 raised ZeroDivisionError('division by zero')
	// def mean(xs): called with xs = []
	// line 9:     return mean(clean), locals [{data [None, None]} {clean []}]
}

// ExampleNeural asks the embedded default model instead of running the
// program: the same API, predicted states. It is the package
// documentation's example. The output shows each stop's event and line,
// not the predicted values: greedy decoding is deterministic on one
// machine, but the kernels differ between CPUs (AVX-512, AVX2, pure Go) in
// the last bits of a float, which can tip a close choice between two value
// tokens; where the program goes is not that close. The default model often
// predicts values wrong (its model card: weights/default/README.md).
func ExampleNeural() {
	const src = `def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)


def f(data):
    clean = [d for d in data if d is not None]
    m = mean(clean)
    return round(m, 2)
`
	ctx := context.Background()
	m, err := ndbg.Open(ctx, ndbg.Options{}) // the embedded default model
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), src, "f([3, None, 4])") // greedy
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	show := func(what string, st ndbg.State, err error) {
		if err != nil {
			fmt.Println(what, err)
			return
		}
		fmt.Println(what, st.Event, "at line", st.Line)
	}
	st, err := s.StepOver(ctx) // predicted, not run
	show("step_over:", st, err)
	if err := s.SetBreakpoint(5); err != nil {
		fmt.Println(err)
		return
	}
	st, err = s.Continue(ctx)
	show("continue to the breakpoint:", st, err)
	st, err = s.StepBackReturn(ctx) // back to the call: the inputs
	show("back to the call:", st, err)
	// Output:
	// step_over: line at line 9
	// continue to the breakpoint: line at line 5
	// back to the call: call at line 1
}
