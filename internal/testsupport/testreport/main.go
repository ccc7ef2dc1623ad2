// Command testreport runs test suites and prints what a person needs from
// them: one ok/FAIL line per package, every skipped test with the reason it
// gave, the output of every failed test (or of a package that failed
// outside its tests, e.g. a build error or a panic), and one closing line
// over every suite it ran
//
//	N passed, N failed, N skipped
//
// counting tests, subtests and examples. It runs, in order: a Python
// unittest suite (-unittest DIR, with the interpreter -python names: one
// package line, its skips with their reasons and its failures with their
// tracebacks), then `go test -json` with each group of the remaining
// arguments, groups separated by a lone "+" (a group with -tags labels its
// packages with them). It exits 1 when anything failed (or a suite could
// not run), so `make test` fails too. Plain `go test` prints "ok" for a
// package whose tests skipped, which hides them; this does not.
//
// Usage (from the module root; its own flags first):
//
//	go run ./internal/testsupport/testreport [-unittest DIR [-python PY]] [go test flags] [packages] [+ [go test flags] [packages]]...
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
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the suites args name and reports on stdout; it returns the exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	unittest, python, args := ownFlags(args)
	r := newReport(stdout)
	status := 0
	fail := func(code int) {
		status = max(status, code)
	}
	if unittest != "" {
		fail(r.python(python, unittest, stderr))
	}
	for _, group := range groups(args) {
		r.label = tagsOf(group)
		fail(r.goTest(group, stderr))
	}
	r.summary()
	if r.failed > 0 || r.pkgFailed {
		fail(1)
	}
	return status
}

// ownFlags takes testreport's own flags from the front of args: -unittest
// DIR and -python PY (default python3), also as -flag=value.
func ownFlags(args []string) (unittest, python string, rest []string) {
	python = "python3"
	for len(args) > 0 {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		if !strings.HasPrefix(args[0], "-") || name != "unittest" && name != "python" {
			break
		}
		if !hasValue && len(args) > 1 {
			value, args = args[1], args[1:]
		}
		args = args[1:]
		if name == "unittest" {
			unittest = value
		} else {
			python = value
		}
	}
	return unittest, python, args
}

// groups splits args at each lone "+".
func groups(args []string) [][]string {
	var out [][]string
	cur := []string{}
	for _, a := range args {
		if a == "+" {
			out = append(out, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, a)
	}
	return append(out, cur)
}

// tagsOf returns a group's -tags value, "" when it has none.
func tagsOf(args []string) string {
	for i, a := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "tags" && strings.HasPrefix(a, "-") {
			if !ok && i+1 < len(args) {
				value = args[i+1]
			}
			return value
		}
	}
	return ""
}

// goTest runs go test -json with args into the report; it returns the exit
// status the run alone would have.
func (r *report) goTest(args []string, stderr io.Writer) int {
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
	failed, pkgFailed := r.failed, r.pkgFailed
	readErr := r.read(pipe)
	waitErr := cmd.Wait()
	if readErr != nil {
		fmt.Fprintf(stderr, "testreport: reading go test's output: %v\n", readErr)
		return 2
	}
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		if r.failed == failed && r.pkgFailed == pkgFailed { // no failure reported says why
			fmt.Fprintf(r.w, "go test exited with status %d\n", exit.ExitCode())
		}
		return 1
	case waitErr != nil:
		fmt.Fprintf(stderr, "testreport: go test: %v\n", waitErr)
		return 2
	}
	return 0
}

// unittestRunner runs the unittest suite of the directory argv[1] and
// writes one JSON line per test result on file descriptor 3: the test's
// id, pass/fail/skip, and the reason or traceback (with what the test
// printed: buffer). What the suite prints outside its tests goes to
// stderr.
const unittestRunner = `
import json, os, sys, time, unittest
out = os.fdopen(3, "w")
def emit(test, action, text=""):
    out.write(json.dumps({"test": test.id(), "action": action, "output": text}) + "\n")
    out.flush()
class Result(unittest.TestResult):
    def addSuccess(self, test):
        emit(test, "pass")
    def addSkip(self, test, reason):
        emit(test, "skip", reason)
    def addFailure(self, test, err):
        super().addFailure(test, err)
        emit(test, "fail", self.failures[-1][1])
    def addError(self, test, err):
        super().addError(test, err)
        emit(test, "fail", self.errors[-1][1])
    def addExpectedFailure(self, test, err):
        emit(test, "pass")
    def addUnexpectedSuccess(self, test):
        emit(test, "fail", "unexpected success")
    def addSubTest(self, test, subtest, err):
        if err is not None:
            super().addSubTest(test, subtest, err)
            emit(subtest, "fail", (self.failures + self.errors)[-1][1])
sys.stdout = sys.stderr
suite = unittest.TestLoader().discover(sys.argv[1])
result = Result()
result.buffer = True
suite.run(result)
`

// python runs the unittest suite in dir with the interpreter py and adds
// it to the report as one package; it returns the exit status it alone
// would have.
func (r *report) python(py, dir string, stderr io.Writer) int {
	name := fmt.Sprintf("%s (%s -m unittest)", dir, py)
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(stderr, "testreport: %v\n", err)
		return 2
	}
	cmd := exec.Command(py, "-c", unittestRunner, dir)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.ExtraFiles = []*os.File{pw}
	start := time.Now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		fmt.Fprintf(r.w, "FAIL %s: %v\n", name, err)
		r.pkgFailed = true
		return 1
	}
	p := r.pkg(name)
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var res struct{ Test, Action, Output string }
		if json.Unmarshal(sc.Bytes(), &res) != nil {
			continue
		}
		b := &strings.Builder{}
		if res.Action == "fail" {
			b.WriteString("--- FAIL: " + res.Test + "\n") // as go test names a failed test
		}
		b.WriteString(res.Output)
		p.out[res.Test] = b
		r.testEnded(p, event{Action: res.Action, Test: res.Test})
	}
	pr.Close()
	waitErr := cmd.Wait()
	end := event{Action: "pass", Package: name, Elapsed: time.Since(start).Seconds()}
	if waitErr != nil || len(p.fails) > 0 {
		end.Action = "fail"
		if waitErr != nil {
			p.out[""] = &strings.Builder{}
			fmt.Fprintf(p.out[""], "%s: %v\n", py, waitErr)
		}
	}
	r.packageEnded(p, end)
	if end.Action == "fail" {
		return 1
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
	pkgFailed               bool   // a package failed without a failed test
	label                   string // the build tags of the go test run read now, shown beside its packages
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
	name := e.Package
	if r.label != "" {
		name += " [" + r.label + "]"
	}
	switch e.Action {
	case "skip": // no test files
		fmt.Fprintf(r.w, "?    %s [no test files]\n", name)
		return
	case "pass":
		fmt.Fprintf(r.w, "ok   %s %.1fs (%d passed, %d skipped)\n", name, e.Elapsed, p.passed, p.skipped)
	case "fail":
		fmt.Fprintf(r.w, "FAIL %s %.1fs (%d passed, %d failed, %d skipped)\n", name, e.Elapsed, p.passed, len(p.fails), p.skipped)
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
