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
}

// Analyze compiles source with python3 (never running it) and returns its code
// objects. python names the interpreter ("" means python3 on PATH). It is the
// once-per-program cost of constraining; the result is reused by every frame.
func Analyze(ctx context.Context, python, source string) ([]Code, error) {
	if python == "" {
		python = "python3"
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-c", analyzeScript)
	cmd.Stdin = bytes.NewReader([]byte(source))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("constrain: analyzing program with %s: %w: %s", python, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var res struct {
		Codes []Code `json:"codes"`
		Error string `json:"error"`
		Line  int    `json:"line"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("constrain: decoding program analysis: %w", err)
	}
	if res.Error != "" {
		return nil, fmt.Errorf("constrain: program does not compile (line %d): %s", res.Line, res.Error)
	}
	return res.Codes, nil
}
