package constrain

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ndbg/ndbg/trace"
)

//go:embed analyze.py
var analyzeScript string

// Code is one code object of the program: a function, lambda, comprehension
// or generator expression. Each runs in a frame of its own, so each is a scope.
type Code struct {
	Name  string   // co_name: "f", "<lambda>", "<listcomp>"
	First int      // the line of its call event (co_firstlineno)
	Lines []int    // lines where it can report events (co_lines), ascending
	Names []string // local names it can have: variables, cells, free variables
	// Generator: a generator or coroutine, whose call events also come at
	// every resume, on the line where it was suspended.
	Generator bool
}

// Analyze compiles source with python3 (never running it) and returns its code
// objects. It runs in the operating-system sandbox every program runs in
// (trace.Script): compiling untrusted text is not running it, but the
// compiler is a large C program working on that text (deep nesting, huge
// constants), so it gets the same confinement and limits; lim names the
// interpreter ("" means python3 on PATH) and whether the user asked for no
// sandbox. It is the once-per-program cost of constraining; the result is
// reused by every frame.
func Analyze(ctx context.Context, lim trace.Limits, source string) ([]Code, error) {
	res, err := AnalyzeMany(ctx, lim, []string{source})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// AnalyzeMany is Analyze for many programs in one interpreter. A program
// that does not compile fails the whole call, naming its index.
func AnalyzeMany(ctx context.Context, lim trace.Limits, sources []string) ([][]Code, error) {
	in, err := json.Marshal(sources)
	if err != nil {
		return nil, fmt.Errorf("constrain: encoding programs: %w", err)
	}
	lim = trace.Limits{
		Python: lim.Python, Unsandboxed: lim.Unsandboxed,
		Timeout:   20*time.Second + time.Duration(len(sources))*100*time.Millisecond,
		MaxStdout: 64<<20 + 64*len(in), // every line of every program, a few times over
	}
	out, err := trace.Script(ctx, lim, analyzeScript, in)
	if err != nil {
		return nil, fmt.Errorf("constrain: analyzing programs: %w", err)
	}
	var res []struct {
		Codes []Code `json:"codes"`
		Error string `json:"error"`
		Line  int    `json:"line"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("constrain: decoding program analysis: %w", err)
	}
	if len(res) != len(sources) {
		return nil, fmt.Errorf("constrain: analysis returned %d results for %d programs", len(res), len(sources))
	}
	codes := make([][]Code, len(res))
	for i, r := range res {
		if r.Error != "" {
			return nil, fmt.Errorf("constrain: program %d does not compile (line %d): %s", i, r.Line, r.Error)
		}
		codes[i] = r.Codes
	}
	return codes, nil
}
