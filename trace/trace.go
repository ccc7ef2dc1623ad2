package trace

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/ndbg/ndbg/dsl"
)

//go:embed tracer.py
var tracerSource string

// Limits bound one traced program. Zero fields take the defaults below.
type Limits struct {
	// Timeout is the wall-clock budget of one program (module code, argument
	// evaluation and the traced call). The tracer stops the program at
	// Timeout; the Go side kills the process group at Timeout plus a grace
	// period when the tracer cannot (a long-running C call). Default 5 s.
	// A live program (StartLive) has no wall-clock limit: Timeout is the
	// CPU time of each of its resumes, past which it stops where it is.
	Timeout time.Duration
	// SessionCPU is the CPU time of a live program's interpreter in all
	// (StartLive; its hard RLIMIT_CPU, past which the kernel kills it).
	// Default 10 minutes.
	SessionCPU time.Duration
	// MaxEvents caps the trace; a longer trace is cut and Result.Truncated
	// set. Default 100000.
	MaxEvents int
	// MaxOutputBytes caps the trace's size (an estimate of its wire bytes)
	// and the returned value's full repr. Default 16 MiB.
	MaxOutputBytes int
	// MaxStdout caps the program's captured standard output, and its
	// standard error apart. Default 64 KiB.
	MaxStdout int
	// MaxMemory is the address-space limit (RLIMIT_AS) of the Python
	// process, in bytes. Default 2 GiB.
	MaxMemory int64
	// Python is the interpreter to run; empty means python3 found on PATH
	// (resolved through shims such as pyenv's, see FindPython). It is not a
	// limit but lives here so that one value configures a run.
	Python string
	// Unsandboxed runs the program without the operating-system sandbox
	// (see Command and docs/security.md): only the interpreter's own limits
	// and a private work directory remain, and the program can do whatever
	// the invoking user can. Only for when the user asks for it by name,
	// where the kernel refuses namespaces (ErrSandbox) or bubblewrap is
	// missing.
	Unsandboxed bool
	// HashSeed is PYTHONHASHSEED for the child, so set iteration order is
	// reproducible; default "0" ("random" restores Python's default).
	HashSeed string

	// noExec, set by CallEvent, asks for the call event built from the
	// program's text instead of a run.
	noExec bool
	// onStart, when set (by tests), receives the child's process group id
	// once the tracer has said hello (once a Script has started).
	onStart func(pgid int)
	// bwrap, when set (by tests), replaces the bubblewrap found on PATH.
	bwrap string
	// testMounts, set by tests only, are bubblewrap mount arguments added
	// to the sandbox's (say a FIFO through which a program says it runs).
	testMounts []string
}

// WithDefaults returns the limits a run with l keeps to: l with each zero
// field replaced by its default.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }

// resolved is l with its defaults and its interpreter: python3 on PATH
// (FindPython) where l names none.
func (l Limits) resolved(ctx context.Context) (Limits, error) {
	return l.withDefaults().WithPython(ctx)
}

// WithPython is l with its interpreter found (FindPython) where l names
// none: for a caller that starts many runs, so that python3 on PATH (a
// shim such as pyenv's is a shell script, slow to ask on a loaded
// machine) is asked once rather than at every run.
func (l Limits) WithPython(ctx context.Context) (Limits, error) {
	if l.Python == "" {
		py, err := FindPython(ctx)
		if err != nil {
			return Limits{}, err
		}
		l.Python = py
	}
	return l, nil
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = 5 * time.Second
	}
	if l.SessionCPU <= 0 {
		l.SessionCPU = defaultCPUCap
	}
	if l.MaxEvents <= 0 {
		l.MaxEvents = 100000
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = 16 << 20
	}
	if l.MaxStdout <= 0 {
		l.MaxStdout = 64 << 10
	}
	if l.MaxMemory <= 0 {
		l.MaxMemory = 2 << 30
	}
	if l.HashSeed == "" {
		l.HashSeed = "0"
	}
	return l
}

// Result is what one traced program did.
type Result struct {
	// Events are the sys.settrace events of the program's frames, from the
	// entry function's call event to its final return event.
	Events []Event
	// Return is the full repr of the entry's returned value (cut only at
	// Limits.MaxOutputBytes, with dsl.TruncateRepr's marker); valid when
	// Exception is nil and Truncated is false.
	Return string
	// Exception is the exception that escaped the entry function, if any.
	Exception *Exception
	// Stdout is what the program wrote to sys.stdout (any bytes), cut at
	// Limits.MaxStdout; StdoutTruncated says whether it was.
	Stdout          []byte
	StdoutTruncated bool
	// Stderr is what it wrote to sys.stderr, cut at Limits.MaxStdout too.
	Stderr          []byte
	StderrTruncated bool
	// Truncated says a cap (Limits.MaxEvents or MaxOutputBytes) cut the
	// trace: the program was stopped there and has no outcome.
	Truncated bool
	// Python is the tracing interpreter's sys.version: traces differ between
	// Python versions.
	Python string
}

// Exception is an exception that escaped the entry function.
type Exception struct {
	Type    string // the class name, e.g. "ValueError"
	Message string // str() of the exception, bounded like a repr
	Line    int    // innermost program line of its traceback
}

// Errors callers can tell apart with errors.Is. An *Error carries details.
var (
	// ErrTimeout: the program ran past Limits.Timeout.
	ErrTimeout = errors.New("trace: timeout")
	// ErrMemory: the program ran out of memory (MemoryError under
	// Limits.MaxMemory, or the interpreter died of it).
	ErrMemory = errors.New("trace: out of memory")
	// ErrSyntax: the program does not compile; Error.Line is the line.
	ErrSyntax = errors.New("trace: syntax error")
	// ErrSetup: the program cannot be called as asked: a bad call
	// expression, an entry that is not a function, module code or
	// arguments that raised.
	ErrSetup = errors.New("trace: setup failed")
	// ErrForbidden: the program touched the tracer's own machinery
	// (sys.settrace, sys.setprofile, SIGALRM and its timer, os._exit,
	// os.abort); what the operating system refuses (new processes, writes
	// outside the scratch space, the network) the program sees as Python's
	// own OSError instead.
	ErrForbidden = errors.New("trace: forbidden operation")
	// ErrTracer: the tracer lost control (tracing was disabled by a limit),
	// so no truthful trace exists.
	ErrTracer = errors.New("trace: tracer failed")
	// ErrCrash: the interpreter died without a result (a signal, a fatal
	// error, an exit the sandbox could not intercept).
	ErrCrash = errors.New("trace: interpreter crashed")
	// ErrProtocol: the tracer's output broke the wire format.
	ErrProtocol = errors.New("trace: protocol error")
	// ErrForged: a record on the tracer's channel failed its signature
	// check: the program wrote it, so the run has no trustworthy result.
	ErrForged = errors.New("trace: forged record")
)

// Error is a failed trace: Kind is one of the Err* values above.
type Error struct {
	Kind error
	Msg  string
	Line int // the offending line for ErrSyntax, else 0
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%v: line %d: %s", e.Kind, e.Line, e.Msg)
	}
	if e.Msg == "" {
		return e.Kind.Error()
	}
	return fmt.Sprintf("%v: %s", e.Kind, e.Msg)
}

// Unwrap makes errors.Is(err, ErrTimeout) and friends work.
func (e *Error) Unwrap() error { return e.Kind }

// Run traces one untrusted program: prog's module code runs untraced, then
// call (e.g. "f(3, [1, 2])", which must call prog.Entry) is evaluated and
// traced. An empty call traces the whole script instead: the module code,
// run as __main__, is the depth-0 frame (a "<module>" frame whose locals
// are the module's globals, less __name__ and __builtins__), and
// Result.Return is "None" when it ends. It starts a fresh sandboxed interpreter and kills its whole process
// group before returning. A program that raises is a Result with Exception
// set, not an error; errors are *Error values (see the Err* kinds) or the
// context's error.
func Run(ctx context.Context, prog *dsl.Program, call string, lim Limits) (*Result, error) {
	if prog == nil {
		return nil, &Error{Kind: ErrSetup, Msg: "nil program"}
	}
	lim, err := lim.resolved(ctx)
	if err != nil {
		return nil, err
	}
	p, err := startProc(ctx, lim, "single")
	if err != nil {
		return nil, err
	}
	defer p.shutdown()
	return p.run(ctx, 1, prog, call, lim)
}

// CallEvent returns the entry's call event, as the first event of Run would
// show it, without running any of the program's code: the module is parsed
// and compiled, never executed; the entry must be a plain top-level def (the
// last statement binding its name, undecorated, not a generator or
// coroutine); the call's arguments, and the default values of the parameters
// they leave out, must be Python literals (numbers, strings, bytes, tuples,
// lists, dicts, sets, None, True, False, as ast.literal_eval takes them) and
// are bound to the parameters as CPython binds them. Its locals are those
// values' reprs in f_locals' order, made by the tracer's own repr.
//
// What the module's code would do at run time is not seen: a module that
// rebinds the entry through globals(), setattr or exec, or raises before its
// def, is taken at its word. A call CallEvent cannot build is an ErrSetup
// naming the argument, the default or the statement in the way. The parsing
// runs in the same sandboxed interpreter as Run, under lim.
func CallEvent(ctx context.Context, prog *dsl.Program, call string, lim Limits) (Event, error) {
	lim.noExec = true
	return callEventOf(Run(ctx, prog, call, lim))
}

// callEventOf checks and returns the one event of a no-exec run.
func callEventOf(res *Result, err error) (Event, error) {
	if err != nil {
		return Event{}, err
	}
	if len(res.Events) != 1 || res.Events[0].Kind != dsl.Call || !res.Truncated {
		return Event{}, &Error{Kind: ErrProtocol, Msg: fmt.Sprintf("no-exec: %d events, want the entry's call event alone", len(res.Events))}
	}
	return res.Events[0], nil
}
