package constrain

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"
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
// objects. python names the interpreter ("" means python3 on PATH). It is the
// once-per-program cost of constraining; the result is reused by every frame.
func Analyze(ctx context.Context, python, source string) ([]Code, error) {
	res, err := AnalyzeMany(ctx, python, []string{source})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// AnalyzeMany is Analyze for many programs in one interpreter. A program
// that does not compile fails the whole call, naming its index.
func AnalyzeMany(ctx context.Context, python string, sources []string) ([][]Code, error) {
	if python == "" {
		python = "python3"
	}
	in, err := json.Marshal(sources)
	if err != nil {
		return nil, fmt.Errorf("constrain: encoding programs: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second+time.Duration(len(sources))*100*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-c", analyzeScript)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("constrain: analyzing programs with %s: %w: %s", python, err, bytes.TrimSpace(stderr.Bytes()))
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
