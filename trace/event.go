// Package trace runs Python programs for real under sys.settrace and returns
// what happened: the ground truth that makes ndbg's training data and grades
// its predictions. Programs are untrusted; see Limits.
//
// StartLive runs one program live instead: it stops where asked, as a
// debugger does, runs code in its frames and counts its events as Run
// numbers them (live.go). Run traces one program in a fresh interpreter; Batch traces many trusted
// programs in one (Run costs a Python start-up, about 40 ms of CPU; a Batch
// program about 0.3 ms of CPU, Go and Python together, for CRUXEval-sized
// programs). CallEvent builds the entry's call event from the program's
// text instead, running none of its code (literal arguments only). tracer.py, embedded, is the Python side: standard
// library only, ASCII JSON lines on fds 3 and 4 (wire.go), never the
// program's stdout.
//
// What a trace is, deliberately:
//   - It starts at the entry function's call event and ends at its final
//     return event; module code and the call's arguments run untraced, and
//     events after the entry returns (generator finalizers) are dropped.
//   - Only frames of the program's code are traced; Depth counts program
//     frames (library frames in between do not count); Frame numbers frame
//     objects from 1, so a generator keeps its number across resumes.
//   - Locals are CPython's f_locals, in its order (a comprehension's ".0"
//     iterator included), as repr bounded by dsl.TruncateRepr's rule; a repr
//     that raises is "<unprintable T object>". Reprs that embed addresses
//     ("<object at 0x...>") differ between runs; set order does not
//     (PYTHONHASHSEED is fixed, Limits.HashSeed).
//   - Recursion: the program gets RecursionError when CPython's recursion
//     counter, taken relative to a module-level call of the entry, would
//     pass sys.getrecursionlimit(): exactly as untraced for pure-Python
//     recursion (999 nested calls at the default 1000); recursion through C
//     code (sorted(key=f)) fails earlier than untraced (333 levels against
//     496), because tracing makes CPython count more per level. The
//     interpreter's real limit is kept higher so the tracer never loses
//     control, and the error is raised by a one-shot profile hook, so every
//     frame's exception and return events are recorded.
//   - stdin is empty (input() raises EOFError; a live program, StartLive, reads what its Input gives); stdout and stderr are
//     captured as bytes, written through as they are written (line
//     buffering and encoding errors as a plain python3's on a pipe), so
//     every event knows how much output came before it (Event.Stdout).
//   - With an empty call (Run), the whole script is traced: its module
//     frame, run as __main__, is the depth-0 frame, named "<module>". With
//     a call, the module code runs as the module CallModule ("program"),
//     so its `if __name__ == "__main__":` block does not.
//   - The program runs in the operating-system sandbox (Command,
//     docs/security.md): process creation fails with PermissionError, the
//     file system is read-only but for /tmp (private, the working
//     directory), there is no network. Every standard-library module works;
//     threads run untraced, as under bdb. Touching the tracer's machinery
//     (sys.settrace, sys.setprofile, SIGALRM and its timer, os._exit,
//     os.abort) is ErrForbidden. Memory, CPU time and file size are limited,
//     nothing is inherited from the environment, and the whole group is
//     SIGKILLed when a Run ends.
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
	Value  string // bounded repr of the returned value or of the exception instance (return, exception)
	// Stdout and Stderr count the bytes the program had written to
	// sys.stdout and sys.stderr before the event (all of them, also past
	// Limits.MaxStdout): Result.Stdout[:Stdout] is the output so far, where
	// the cap kept it.
	Stdout, Stderr int
}
