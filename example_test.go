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
// program: the same API, predicted states.
func ExampleNeural() {
	ctx := context.Background()
	m, err := ndbg.Open(ctx, ndbg.Options{}) // the embedded default model
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), "def f(x):\n    y = x * 2\n    return y + 1\n", "f(20)")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	st, err := s.StepReturn(ctx) // predicted, not run
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Event, st.Value)
}
