package statetree

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/data/cruxeval"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/progen"
	"github.com/ndbg/ndbg/trace"
)

// bdbStop is one stop (or trace event) as testdata/bdbdrive.py writes it.
type bdbStop struct {
	End    bool       `json:"end"`
	Event  string     `json:"event"`
	Line   int        `json:"line"`
	Depth  int        `json:"depth"`
	Calls  int        `json:"calls"`
	Func   string     `json:"func"`
	Gen    bool       `json:"gen"`
	Value  string     `json:"value"`
	Locals [][]string `json:"locals"`
	Frame  int        `json:"frame"`
}

type bdbReply struct {
	Trace    []bdbStop   `json:"trace"`
	Sessions [][]bdbStop `json:"sessions"`
}

// bdbRequest is one program for the driver.
type bdbRequest struct {
	Source   string     `json:"source"`
	Entry    string     `json:"entry"`
	Call     string     `json:"call"`
	Sessions [][]string `json:"sessions"`
	// Breaks are breakpoint lines set for the whole of every session.
	Breaks []int `json:"breaks,omitempty"`
}

// runBdb runs the reference driver once on all requests.
func runBdb(t testing.TB, reqs []bdbRequest) []bdbReply {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	for i := range reqs {
		if reqs[i].Sessions == nil {
			reqs[i].Sessions = [][]string{}
		}
	}
	req, err := json.Marshal(reqs)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "bdbdrive.py"))
	cmd.Env = append(os.Environ(), "PYTHONHASHSEED=0")
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "bdbdrive: %s", stderr.String())
	var r []bdbReply
	require.NoError(t, json.Unmarshal(out, &r))
	require.Len(t, r, len(reqs))
	return r
}

// treeFromBdb builds a tree from the driver's plain sys.settrace trace.
func treeFromBdb(t testing.TB, prog *dsl.Program, evs []bdbStop) *Tree {
	t.Helper()
	events := make([]trace.Event, len(evs))
	for i, e := range evs {
		k, err := dsl.ParseEvent(e.Event)
		require.NoError(t, err)
		ev := trace.Event{Kind: k, Line: e.Line, Depth: e.Depth, Frame: e.Frame, Func: e.Func, Value: e.Value}
		for _, kv := range e.Locals {
			ev.Locals = append(ev.Locals, dsl.Local{Name: kv[0], Repr: kv[1]})
		}
		events[i] = ev
	}
	tr, err := Build(prog, events)
	require.NoError(t, err)
	return tr
}

// parseCmd turns a driver command into a tree action.
func parseCmd(c string) dsl.Action {
	name, arg, _ := strings.Cut(c, ":")
	var lines []int
	for _, f := range strings.Split(arg, ",") {
		if l, err := strconv.Atoi(f); err == nil {
			lines = append(lines, l)
		}
	}
	switch name {
	case "step":
		return dsl.Action{Kind: dsl.StepInto}
	case "next":
		return dsl.Action{Kind: dsl.StepOver}
	case "return":
		return dsl.Action{Kind: dsl.StepReturn}
	case "break":
		return dsl.Action{Kind: dsl.Breakpoint, Lines: lines}
	default:
		return dsl.Action{Kind: dsl.Continue, Lines: lines}
	}
}

// makeSessions makes command sessions over tree: from every early position
// each command once or twice (systematic), then random mixes.
func makeSessions(tr *Tree, rng *rand.Rand, systematic, random int) [][]string {
	return sessions(tr, rng, nil, systematic, [][]string{
		{"next", "next", "step", "next"},
		{"return", "next", "return", "return"},
		{"break", "return"},
	}, random, [10]string{"step", "step", "step", "step", "next", "next", "return", "return", "break", "continue2"})
}

// sessions makes command sessions over tree, with breakpoints kept set at
// breaks: from each of the first systematic positions every tail, then
// random sessions of up to 12 commands drawn uniformly from mix. In tails
// and mix, "break" is break:L and "continue2" is continue:L1,L2 with lines
// the run reaches later (sometimes any program line); other commands are as
// the driver takes them.
func sessions(tr *Tree, rng *rand.Rand, breaks []int, systematic int, tails [][]string, random int, mix [10]string) [][]string {
	n := tr.End()
	var lineEvents []int
	for i := 0; i < n; i++ {
		if tr.kind[i] == dsl.Line {
			lineEvents = append(lineEvents, i)
		}
	}
	// futureLine picks the line of a line event after pos, or any program line.
	futureLine := func(pos int) string {
		var cands []int
		for _, j := range lineEvents {
			if j > pos {
				cands = append(cands, j)
			}
		}
		if len(cands) == 0 || rng.IntN(8) == 0 {
			return strconv.Itoa(1 + rng.IntN(len(tr.prog.Lines)))
		}
		return strconv.Itoa(int(tr.line[cands[rng.IntN(len(cands))]]))
	}
	command := func(c string, pos int) string {
		switch c {
		case "break":
			return "break:" + futureLine(pos)
		case "continue2":
			return "continue:" + futureLine(pos) + "," + futureLine(pos)
		}
		return c
	}
	var out [][]string
	for k := 0; k+1 < n && k < systematic; k++ {
		pos := k + 1
		for _, tail := range tails {
			s := make([]string, k, k+len(tail))
			for i := range s {
				s[i] = "step"
			}
			for _, c := range tail {
				s = append(s, command(c, pos))
			}
			out = append(out, s)
		}
	}
	for r := 0; r < random; r++ {
		var s []string
		pos := 1
		for len(s) < 12 {
			s = append(s, command(mix[rng.IntN(len(mix))], pos))
			next, err := tr.ApplyBreakpoints(pos, parseCmd(s[len(s)-1]), breaks)
			if err != nil || next >= n {
				break
			}
			pos = next
		}
		out = append(out, s)
	}
	return out
}

// callsUpTo is the number of call states in [0, pos].
func callsUpTo(tr *Tree, pos int) int {
	c := 0
	for i := 0; i <= pos && i < tr.End(); i++ {
		if tr.kind[i] == dsl.Call {
			c++
		}
	}
	return c
}

// describe renders tree state pos like a driver stop, for messages.
func describe(tr *Tree, pos int) string {
	if pos >= tr.End() {
		return "End"
	}
	e := tr.Event(pos)
	return fmt.Sprintf("#%d %s line %d depth %d calls %d", pos, e.Kind, e.Line, e.Depth, callsUpTo(tr, pos))
}

func describeStop(s bdbStop) string {
	if s.End {
		return "End"
	}
	return fmt.Sprintf("%s line %d depth %d calls %d (%s gen=%v)", s.Event, s.Line, s.Depth, s.Calls, s.Func, s.Gen)
}

// sameState reports whether tree state pos is the driver's stop s.
func sameState(tr *Tree, pos int, s bdbStop) bool {
	if pos >= tr.End() || s.End {
		return pos >= tr.End() && s.End
	}
	e := tr.Event(pos)
	if e.Kind.String() != s.Event || e.Line != s.Line || e.Depth != s.Depth || callsUpTo(tr, pos) != s.Calls {
		return false
	}
	if (e.Kind == dsl.Return || e.Kind == dsl.Exception) && !sameRepr(e.Value, s.Value) {
		return false
	}
	if e.Kind == dsl.Call || e.Kind == dsl.Line {
		// The same names and reprs. Not the same order: CPython 3.11 keeps one f_locals
		// dict per frame and inserts a name when a read first sees it, so
		// the order depends on which events were read; the tracer reads
		// them all, bdb only its stops.
		if len(e.Locals) != len(s.Locals) {
			return false
		}
		want := make(map[string]string, len(s.Locals))
		for _, kv := range s.Locals {
			want[kv[0]] = kv[1]
		}
		for _, l := range e.Locals {
			r, ok := want[l.Name]
			if !ok || !sameRepr(l.Repr, r) {
				return false
			}
		}
	}
	return true
}

// sameRepr compares the tracer's repr with bdb's full one: the tracer
// bounds reprs with dsl.TruncateRepr, and addresses differ between runs.
func sameRepr(traced, full string) bool {
	return traced == dsl.TruncateRepr(full) || strings.Contains(full, " at 0x")
}

// mismatch is one command where the tree and bdb disagree.
type mismatch struct {
	prog    string
	session []string
	breaks  []int   // breakpoints set during the whole session
	at      int     // index of the command
	from    int     // tree position before the command
	tree    int     // tree position after it
	prev    bdbStop // bdb's stop where the command was given
	want    bdbStop // bdb's stop after it
	// inGen: the command was given in a generator frame, or it is a
	// return at a return state whose caller is a generator frame.
	inGen bool
}

// checked is the outcome of comparing one program's tree with bdb.
type checked struct {
	tree     *Tree
	mm       []mismatch
	commands int
}

// sessionMaker makes the command sessions for a tree, and the breakpoint
// lines kept set during all of them (none: only the commands' own).
type sessionMaker func(tr *Tree, rng *rand.Rand) (sessions [][]string, breaks []int)

// checkPrograms runs bdb on the programs and compares every stop with the
// trees built from trace.Run (ApplyBreakpoints with the sessions'
// breakpoints). A command where they disagree is returned as a mismatch
// (and its session not followed further); the first stop must always agree.
func checkPrograms(t *testing.T, progs []testProgram, seed uint64, mk sessionMaker) []checked {
	t.Helper()
	// The trees under test are built from trace.Run; the driver's own plain
	// sys.settrace trace must agree with them event for event.
	trees := realTrees(t, progs)
	reqs := make([]bdbRequest, len(progs))
	for i, p := range progs {
		prog := trees[i].Program()
		reqs[i] = bdbRequest{Source: prog.Source, Entry: prog.Entry, Call: p.call}
	}
	first := runBdb(t, reqs)
	gens := make([][]bool, len(progs))
	for i, p := range progs {
		tr := trees[i]
		ref := treeFromBdb(t, tr.Program(), first[i].Trace)
		require.Equal(t, ref.End(), tr.End(), "%s: trace.Run and the driver's trace differ in length", p.name)
		for j := 0; j < tr.End(); j++ {
			require.Equal(t, describe(ref, j), describe(tr, j), "%s: event %d", p.name, j)
		}
		gens[i] = make([]bool, len(first[i].Trace))
		for j, e := range first[i].Trace {
			gens[i][j] = e.Gen
		}
		reqs[i].Sessions, reqs[i].Breaks = mk(tr, rand.New(rand.NewPCG(seed, uint64(i))))
	}
	replies := runBdb(t, reqs)
	out := make([]checked, len(progs))
	for i, p := range progs {
		tr, gen, sessions, breaks := trees[i], gens[i], reqs[i].Sessions, reqs[i].Breaks
		out[i].tree = tr
		require.Len(t, replies[i].Sessions, len(sessions))
		for si, stops := range replies[i].Sessions {
			require.NotEmpty(t, stops)
			pos, err := tr.Apply(0, dsl.Action{Kind: dsl.StepInto})
			require.NoError(t, err)
			require.True(t, sameState(tr, pos, stops[0]), "%s: pdb's first stop %s, tree step_into(0) %s", p.name, describeStop(stops[0]), describe(tr, pos))
			for ci, stop := range stops[1:] {
				from := pos
				pos, err = tr.ApplyBreakpoints(pos, parseCmd(sessions[si][ci]), breaks)
				require.NoError(t, err)
				out[i].commands++
				if !sameState(tr, pos, stop) {
					cmd := sessions[si][ci]
					inGen := gen[from] || cmd == "return" && tr.kind[from] == dsl.Return && tr.parent[from] >= 0 && gen[tr.parent[from]]
					out[i].mm = append(out[i].mm, mismatch{p.name, sessions[si], breaks, ci, from, pos, stops[ci], stop, inGen})
					break
				}
			}
		}
	}
	return out
}

// cruxPrograms returns CRUXEval's development split (package
// data/cruxeval) as test programs.
func cruxPrograms(t testing.TB) []testProgram {
	t.Helper()
	items, err := cruxeval.Dev()
	require.NoError(t, err)
	var out []testProgram
	for _, it := range items {
		out = append(out, testProgram{it.ID, it.Code + "\n", "f", it.Call()})
	}
	return out
}

// checkDifference asserts that a disagreement between the tree and bdb is
// one of the documented deliberate differences (see the package doc,
// "Differences from pdb").
func checkDifference(t *testing.T, tr *Tree, m mismatch) {
	t.Helper()
	cmd := m.session[m.at]
	msg := fmt.Sprintf("%s: breakpoints %v, %s after %v: from %s, tree %s, bdb %s", m.prog, m.breaks, cmd, m.session[:m.at], describe(tr, m.from), describe(tr, m.tree), describeStop(m.want))
	// atBreak: bdb stopped at the first breakpoint kept set after the
	// command's start (pdb ran past the tree's stop, see below, and a
	// breakpoint stopped it).
	atBreak := !m.want.End && len(m.breaks) > 0 && sameState(tr, tr.nextAt(m.from, m.breaks), m.want)
	switch {
	case tr.kind[m.from] == dsl.Return && tr.depth[m.from] == 0:
		// 1. The tree ends when the entry returns; pdb goes on into
		// generators the entry left suspended as they are finalized.
		require.Equal(t, tr.End(), m.tree, msg)
		require.True(t, m.want.Gen, msg)
	case m.prev.Gen && strings.HasPrefix(cmd, "next"):
		// 2. step_over in a generator stops at its yield (the activation's
		// return state); pdb's next ignores a generator's return events and
		// stops at its next line or exception in a later resume, or never,
		// or at a breakpoint on the way.
		require.Less(t, m.tree, tr.End(), msg)
		require.Equal(t, dsl.Return, tr.kind[m.tree], msg)
		require.Equal(t, tr.Event(m.from).Frame, tr.Event(m.tree).Frame, msg)
		if !m.want.End && !atBreak {
			require.True(t, m.want.Gen, msg)
			require.Equal(t, m.prev.Func, m.want.Func, msg)
			require.Contains(t, []string{"line", "exception"}, m.want.Event, msg)
		}
	case m.prev.Gen && strings.HasPrefix(cmd, "return"):
		// 3. step_return in a generator stops at its yield; pdb's return
		// in a generator only stops at a StopIteration or GeneratorExit
		// in another frame, or at a breakpoint on the way, or runs to the
		// end.
		if !m.want.End && !atBreak {
			require.Equal(t, "exception", m.want.Event, msg)
			require.Regexp(t, `^(StopIteration|GeneratorExit)\(`, m.want.Value, msg)
		}
	default:
		require.Fail(t, "undocumented difference from pdb", msg)
	}
}

// conform checks programs against bdb, each with the given numbers of
// systematic and random sessions, and returns how many commands agreed and
// how many were documented differences.
func conform(t *testing.T, progs []testProgram, systematic, random int) (agreed, differ int) {
	t.Helper()
	return conformWith(t, progs, func(tr *Tree, rng *rand.Rand) ([][]string, []int) {
		return makeSessions(tr, rng, systematic, random), nil
	})
}

// conformWith is conform with sessions (and kept breakpoints) from mk.
func conformWith(t *testing.T, progs []testProgram, mk sessionMaker) (agreed, differ int) {
	t.Helper()
	for _, c := range checkPrograms(t, progs, 1, mk) {
		for _, m := range c.mm {
			checkDifference(t, c.tree, m)
		}
		agreed += c.commands - len(c.mm)
		differ += len(c.mm)
	}
	return agreed, differ
}

func TestConformanceHandWritten(t *testing.T) {
	agreed, differ := conform(t, handPrograms, 25, 12)
	t.Logf("%d commands as pdb, %d documented differences", agreed, differ)
	require.Greater(t, agreed, 2000)
}

func TestConformanceCRUXEval(t *testing.T) {
	progs := cruxPrograms(t)
	if testing.Short() {
		progs = progs[:20]
	}
	agreed, differ := conform(t, progs, 6, 6)
	t.Logf("%d programs: %d commands as pdb, %d documented differences", len(progs), agreed, differ)
}

// TestConformanceGenerated checks programs of every progen family, the
// kind the training data is made of.
func TestConformanceGenerated(t *testing.T) {
	var progs []testProgram
	for _, fam := range progen.Families() {
		for seed := uint64(1); seed <= 6; seed++ {
			g, err := progen.Generate(seed, []string{fam})
			require.NoError(t, err)
			progs = append(progs, testProgram{fmt.Sprintf("%s/%d", fam, seed), g.Source, g.Entry, g.Call})
		}
	}
	agreed, differ := conform(t, progs, 8, 8)
	t.Logf("%d programs: %d commands as pdb, %d documented differences", len(progs), agreed, differ)
	require.Greater(t, agreed, 1000)
}

// breakPrograms are programs where breakpoints kept set change where
// step_over and step_return stop: recursion through a breakpoint line,
// nested comprehensions on one line, exceptions through a breakpoint.
var breakPrograms = []testProgram{
	{"fact_issue17", `def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)
`, "fact", "fact(3)"},
	{"nested_comprehension_line", `def f(m):
    rows = [[x * y for x in range(y)] for y in range(m)]
    flat = [v for r in rows for v in r if v % 2 == 0]
    return sum(flat)
`, "f", "f(4)"},
	{"loop_helper_exception", `def inv(x):
    if x == 0:
        raise ZeroDivisionError('zero')
    return 1 / x

def f(xs):
    out = []
    for x in xs:
        try:
            out.append(inv(x))
        except ZeroDivisionError:
            out.append(None)
    return out
`, "f", "f([2, 0, 4, 0])"},
	{"mutual_recursion", `def even(n):
    if n == 0:
        return True
    return odd(n - 1)

def odd(n):
    if n == 0:
        return False
    return even(n - 1)
`, "even", "even(5)"},
}

// makeBreakSessions keeps 2 to 4 breakpoints set (lines the run reaches,
// sometimes also any program line) and makes sessions of next, return and
// continue (with some step and break:L) over them.
func makeBreakSessions(tr *Tree, rng *rand.Rand, systematic, random int) ([][]string, []int) {
	var hit []int
	for l, idx := range tr.lineAt {
		if len(idx) > 0 {
			hit = append(hit, int(l))
		}
	}
	slices.Sort(hit)
	rng.Shuffle(len(hit), func(i, j int) { hit[i], hit[j] = hit[j], hit[i] })
	breaks := hit[:min(len(hit), 2+rng.IntN(3))]
	if rng.IntN(4) == 0 {
		breaks = append(breaks, 1+rng.IntN(len(tr.prog.Lines)))
	}
	slices.Sort(breaks)
	breaks = slices.Compact(breaks)
	return sessions(tr, rng, breaks, systematic, [][]string{
		{"next", "next", "next", "next", "next"},
		{"return", "return", "next", "return", "return"},
		{"continue", "next", "continue", "return", "next"},
		{"break", "return", "next"},
	}, random, [10]string{"step", "next", "next", "next", "return", "return", "return", "continue", "continue", "break"}), breaks
}

// TestConformanceBreakpoints compares the tree's stops with bdb's when
// breakpoints stay set while the user steps: pdb's next, return and
// continue (and break) stop at a breakpoint on the way, in any frame.
func TestConformanceBreakpoints(t *testing.T) {
	progs := append(slices.Clone(breakPrograms), handPrograms...)
	for _, fam := range progen.Families() {
		for seed := uint64(1); seed <= 3; seed++ {
			g, err := progen.Generate(seed, []string{fam})
			require.NoError(t, err)
			progs = append(progs, testProgram{fmt.Sprintf("%s/%d", fam, seed), g.Source, g.Entry, g.Call})
		}
	}
	if testing.Short() {
		progs = progs[:len(breakPrograms)+8]
	}
	agreed, differ := conformWith(t, progs, func(tr *Tree, rng *rand.Rand) ([][]string, []int) {
		return makeBreakSessions(tr, rng, 10, 12)
	})
	t.Logf("%d programs: %d commands as pdb, %d documented differences", len(progs), agreed, differ)
	require.Greater(t, agreed, 1000)
}
