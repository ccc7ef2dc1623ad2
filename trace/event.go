// Package trace runs Python programs for real under sys.settrace and returns
// what happened: the ground truth that makes ndbg's training data and grades
// its predictions. Programs are untrusted; see Limits.
package trace

import "github.com/ndbg/ndbg/dsl"

// Event is one sys.settrace event in a frame of the traced program.
type Event struct {
	Kind  dsl.Event
	Line  int    // 1-based line in the traced source
	Depth int    // call depth; the entry function's frame is 0
	Frame int    // invocation id: the same for every event of one frame object (generators keep theirs across resumes)
	Func  string // the code object's name (co_name): "f", "<listcomp>", "<lambda>"
	// Locals are the frame's locals before the line runs (line), the
	// arguments (call), or the final ones (return, exception), each repr
	// bounded to dsl.MaxRepr bytes.
	Locals []dsl.Local
	Value  string // repr of the return value or exception (return, exception)
}
