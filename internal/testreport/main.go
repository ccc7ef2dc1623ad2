// Command testreport runs `go test -json` with the given arguments and
// prints what a person needs from it: one ok/FAIL line per package, every
// skipped test with the reason it gave, the output of every failed test (or
// of a package that failed outside its tests, e.g. a build error or a
// panic), and a closing line
//
//	N passed, N failed, N skipped
//
// counting tests, subtests and examples. It exits 1 when anything failed
// (or go test itself did), so `make test` fails too. Plain `go test` prints
// "ok" for a package whose tests skipped, which hides them; this does not.
//
// Usage (from the module root):
//
//	go run ./internal/testreport [go test flags] [packages]
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs go test -json with args and reports on stdout; it returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testreport: %v\n", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testreport: starting go test: %v\n", err)
		return 2
	}
	r := newReport(stdout)
	readErr := r.read(pipe)
	waitErr := cmd.Wait()
	if readErr != nil {
		fmt.Fprintf(stderr, "testreport: reading go test's output: %v\n", readErr)
		return 2
	}
	r.summary()
	var exit *exec.ExitError
	switch {
	case r.failed > 0 || r.pkgFailed:
		return 1
	case errors.As(waitErr, &exit):
		fmt.Fprintf(stdout, "go test exited with status %d\n", exit.ExitCode())
		return 1
	case waitErr != nil:
		fmt.Fprintf(stderr, "testreport: go test: %v\n", waitErr)
		return 2
	}
	return 0
}

// event is one record of `go test -json` (cmd/test2json).
type event struct {
	Action      string
	Package     string
	ImportPath  string // build events
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

// pkgState collects one package's test outputs until it ends.
type pkgState struct {
	out     map[string]*strings.Builder // test name ("" for the package) -> output
	skips   []string                    // "Test: reason"
	fails   []string                    // failed test names, in order
	passed  int
	skipped int
}

// report turns the event stream into the printed report.
type report struct {
	w                       io.Writer
	pkgs                    map[string]*pkgState
	builds                  map[string]*strings.Builder // import path -> build output
	passed, failed, skipped int
	pkgFailed               bool // a package failed without a failed test
}

func newReport(w io.Writer) *report {
	return &report{w: w, pkgs: map[string]*pkgState{}, builds: map[string]*strings.Builder{}}
}

// read consumes the JSON stream; lines that are not JSON (go test's own
// messages) are printed as they come.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(r.w, "%s\n", line)
			continue
		}
		r.add(e)
	}
	return sc.Err()
}

func (r *report) pkg(name string) *pkgState {
	p, ok := r.pkgs[name]
	if !ok {
		p = &pkgState{out: map[string]*strings.Builder{}}
		r.pkgs[name] = p
	}
	return p
}

// add handles one event.
func (r *report) add(e event) {
	switch e.Action {
	case "build-output":
		b, ok := r.builds[e.ImportPath]
		if !ok {
			b = &strings.Builder{}
			r.builds[e.ImportPath] = b
		}
		b.WriteString(e.Output)
		return
	case "build-fail":
		return // reported with the package that failed (FailedBuild)
	}
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package)
	switch e.Action {
	case "output":
		b, ok := p.out[e.Test]
		if !ok {
			b = &strings.Builder{}
			p.out[e.Test] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test != "" {
			r.testEnded(p, e)
		} else {
			r.packageEnded(p, e)
		}
	}
}

// testEnded counts a test's result and keeps what the report needs of it.
func (r *report) testEnded(p *pkgState, e event) {
	switch e.Action {
	case "pass":
		p.passed++
		delete(p.out, e.Test)
	case "skip":
		p.skipped++
		p.skips = append(p.skips, e.Test+": "+skipReason(p.out[e.Test]))
		delete(p.out, e.Test)
	case "fail":
		p.fails = append(p.fails, e.Test)
	}
}

// skipReason is what a skipped test printed, without go test's own
// framing lines, on one line.
func skipReason(b *strings.Builder) string {
	if b == nil {
		return "(no reason given)"
	}
	var parts []string
	for _, l := range strings.Split(b.String(), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " | ")
}

// packageEnded prints the package's line, its skips and failures.
func (r *report) packageEnded(p *pkgState, e event) {
	defer delete(r.pkgs, e.Package)
	r.passed += p.passed
	r.skipped += p.skipped
	r.failed += len(p.fails)
	switch e.Action {
	case "skip": // no test files
		fmt.Fprintf(r.w, "?    %s [no test files]\n", e.Package)
		return
	case "pass":
		fmt.Fprintf(r.w, "ok   %s %.1fs (%d passed, %d skipped)\n", e.Package, e.Elapsed, p.passed, p.skipped)
	case "fail":
		fmt.Fprintf(r.w, "FAIL %s %.1fs (%d passed, %d failed, %d skipped)\n", e.Package, e.Elapsed, p.passed, len(p.fails), p.skipped)
	}
	for _, s := range p.skips {
		fmt.Fprintf(r.w, "     SKIP %s\n", s)
	}
	for _, name := range p.fails {
		if b := p.out[name]; b != nil {
			fmt.Fprintf(r.w, "%s", indent(b.String()))
		}
	}
	if e.Action == "fail" && len(p.fails) == 0 {
		r.pkgFailed = true
		if e.FailedBuild != "" {
			if b := r.builds[e.FailedBuild]; b != nil {
				fmt.Fprintf(r.w, "%s", indent(b.String()))
			}
		}
		if b := p.out[""]; b != nil {
			fmt.Fprintf(r.w, "%s", indent(b.String()))
		}
	}
}

// indent prefixes each line of s with four spaces.
func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ") + "\n"
}

// summary prints the closing line.
func (r *report) summary() {
	fmt.Fprintf(r.w, "%d passed, %d failed, %d skipped\n", r.passed, r.failed, r.skipped)
}
